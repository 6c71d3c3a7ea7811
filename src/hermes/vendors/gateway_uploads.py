"""Media uploads to the Tool Gateway (its shared ``tool-gateway`` origin, requirement GW-14).

A local file that a managed request needs (a source image for an edit) cannot be sent to a relay whose
vendor only takes URLs, so it is uploaded first::

    POST {tool-gateway origin}/api/uploads/{vendor}
    Authorization: Bearer <portal token>
    Content-Type: multipart/form-data   (one part "file": filename, content type, bytes)

    201 (or 200) {"url": "<reference URL the vendor can fetch>", "expires_at": <optional>}

``vendor`` is the vendor behind the relay that will use the file (``fal``, ``krea``, ``nous`` for the
portal's own image API), so the gateway can store it where that vendor reads it. This endpoint is this
project's own (upstream 0.19.0 has no upload flow); the gateway server implements the same contract.
"""

from __future__ import annotations

import re

from hermes.vendors.base import DEFAULT_MAX_BYTES, JsonApiClient, RetryPolicy, VendorError, origin_of

VENDOR = "Tool Gateway uploads"
UPLOAD_RETRY = RetryPolicy(attempts=3, base_delay=0.5, max_delay=5.0, statuses=frozenset({429, 502, 503, 504}))
_VENDOR_NAME = re.compile(r"^[a-z0-9][a-z0-9-]{0,31}$")


class GatewayUploadsClient(JsonApiClient):
    """Upload media to the gateway's shared origin with ``auth`` (``Auth.bearer(portal token)``)."""

    vendor = VENDOR
    default_retry = UPLOAD_RETRY
    default_timeout = 120.0
    default_max_bytes = DEFAULT_MAX_BYTES

    async def upload(self, vendor: str, data: bytes, *, filename: str, content_type: str) -> str:
        """Upload ``data`` for ``vendor``; returns the reference URL to put in the vendor request."""
        if not _VENDOR_NAME.match(vendor):
            raise ValueError(f"not a vendor name: {vendor!r}")
        body = await self._json("POST", self._url(f"api/uploads/{vendor}"),
                                files={"file": (filename, data, content_type)})
        url = body.get("url")
        if not isinstance(url, str) or origin_of(url) is None:
            raise VendorError(VENDOR, "the gateway's upload answer has no http(s) url", kind="bad_response")
        return url
