"""The one exception tree of hermes.

Every error the program raises on purpose derives from :class:`HermesError`::

    HermesError
    ├── ConfigError                 bad or missing configuration (names the key)
    │   └── ModelNotConfigured      no model endpoint to talk to
    ├── UsageError                  command-line flags that do not fit together (exit 2, like argparse)
    ├── SelectionError              a tool category routed to a backend that cannot run (GW-3 wording)
    ├── GatewayError                the Tool Gateway refused or failed (entitlement, expiry, HTTP)
    ├── FetchError                  a URL could not or must not be fetched (SSRF refusal, size, time)
    ├── ResponseTooLarge            an HTTP answer's body passed its size cap (hermes.net.http)
    ├── DeadlineExceeded            an HTTP request's overall time ran out before another try (hermes.net.http)
    ├── ApprovalDenied              a dangerous command was not approved
    ├── ToolError                   a tool could not do its job; dispatch turns it into {"error": ...}
    │   ├── ToolArgumentError       the model sent arguments that do not fit the schema
    │   ├── LocalProgramError       a local program (espeak-ng, ffmpeg, sox) is missing or failed
    │   └── McpError                an MCP server is not connected, failed, timed out or refused a call
    ├── ModelError                  the model endpoint failed after retries
    │   └── ModelUnreachable        the endpoint could not be reached at all
    ├── StoreError                  the SQLite store failed
    │   └── SessionNotFound         no stored session with that id
    └── TurnInterrupted             the person pressed Ctrl-C; the session is kept

Tool failures become ``{"error": ...}`` in exactly one place: ``ToolRegistry.dispatch``.
"""

from __future__ import annotations


class HermesError(Exception):
    """Base of every error hermes raises on purpose."""


class ConfigError(HermesError):
    """The configuration is missing, malformed or inconsistent."""


class ModelNotConfigured(ConfigError):
    """No model endpoint is configured."""


class UsageError(HermesError):
    """Command-line arguments that argparse accepted but that do not make sense together."""


class SelectionError(HermesError):
    """A tool category is routed to a backend that cannot serve it (see requirement GW-3)."""


class GatewayError(HermesError):
    """The Tool Gateway refused the request or failed."""


class FetchError(HermesError):
    """A URL could not, or must not, be fetched; ``status`` and ``code`` say why in HTTP terms."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message


class ResponseTooLarge(HermesError):
    """An HTTP answer's body passed its size cap of ``limit`` bytes; reading stopped there.

    Raised by :func:`hermes.net.http.send_request`; each caller turns it into its own error.
    """

    def __init__(self, limit: int) -> None:
        super().__init__(f"the answer is larger than {limit} bytes")
        self.limit = limit


class DeadlineExceeded(HermesError):
    """The overall deadline of an HTTP request passed before (another) try could start."""


class ApprovalDenied(HermesError):
    """A dangerous command was not approved by the person (or the surface has nobody to ask)."""


class ToolError(HermesError):
    """A tool could not do its job. The message is shown to the model as ``{"error": message}``."""


class ToolArgumentError(ToolError):
    """The arguments a model sent do not fit the tool's schema."""


class LocalProgramError(ToolError):
    """A local program (espeak-ng, ffmpeg, sox) is missing, failed or ran out of time.

    A ToolError, so a tool that lets it through answers ``{"error": ...}``; the gateway server maps it to
    an HTTP error of its own.
    """


class McpError(ToolError):
    """An MCP server is not connected, crashed, timed out or answered with an error (names the server)."""


class ModelError(HermesError):
    """The model endpoint answered with an error after all retries."""


class ModelUnreachable(ModelError):
    """The model endpoint could not be reached."""


class StoreError(HermesError):
    """The SQLite store failed."""


class SessionNotFound(StoreError):
    """No stored session has that id."""


class TurnInterrupted(HermesError):
    """The current turn was interrupted (Ctrl-C); the session and its history are kept."""


__all__ = [
    "ApprovalDenied",
    "ConfigError",
    "DeadlineExceeded",
    "FetchError",
    "GatewayError",
    "HermesError",
    "ModelError",
    "ModelNotConfigured",
    "ModelUnreachable",
    "ResponseTooLarge",
    "SelectionError",
    "SessionNotFound",
    "StoreError",
    "ToolArgumentError",
    "ToolError",
    "TurnInterrupted",
]
