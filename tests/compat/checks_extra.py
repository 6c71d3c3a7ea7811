"""The upstream client's speech-to-text, Krea and managed-Modal paths through our gateway (docs/gateway/compat.md).

Each part gives the calls the upstream client makes (run by :mod:`compat.upstream_calls` in its venv) and
checks both sides: what the upstream returned, and what reached the vendor fake (the operator's key,
never the user's token) or, for Modal, what ran in the gateway's local sandbox.
"""

from __future__ import annotations

import getpass
import re
from pathlib import Path
from typing import Any

from compat.report import Report, loads
from compat.stack import AS_ROOT, KREA_KEY, OPENAI_KEY, TRANSCRIPT, Stack
from fakes.vendors.openai_audio import FAKE_AUDIO

#: the first command leaves a file, writes to stderr and fails; the second reads the file back (same
#: sandbox) and shows the environment the gateway gave the command
SANDBOX_FIRST = "id -un; pwd; echo kept-between-commands > note.txt; echo from-stderr >&2; exit 3"
SANDBOX_SECOND = "cat note.txt; env"
SANDBOX_EXIT = 3
KREA_PROMPT = "a small green square, through the krea relay"
KREA_MODEL = "krea-2-medium"
_UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


def voice_note(workdir: Path) -> Path:
    """The audio file the upstream transcribes (a short WAV; the fake answers :data:`TRANSCRIPT` for any)."""
    path = workdir / "voice-note.wav"
    path.write_bytes(FAKE_AUDIO["wav"])
    return path


def extra_calls(note: Path) -> list[dict[str, Any]]:
    """Speech-to-text and two terminal commands, for the first upstream run (config: stt openai, modal)."""
    return [
        {"function": "transcribe_audio", "args": {"file_path": str(note)}},
        {"tool": "terminal", "key": "terminal", "args": {"command": SANDBOX_FIRST}},
        {"tool": "terminal", "key": "terminal_env", "args": {"command": SANDBOX_SECOND}},
    ]


def krea_calls() -> list[dict[str, Any]]:
    """The image generation of the second upstream run (config: ``image_gen.model: krea-2-medium``)."""
    return [{"tool": "image_generate", "args": {"prompt": KREA_PROMPT, "aspect_ratio": "square"}}]


def check_transcription(stack: Stack, report: Report, results: dict[str, Any], note: Path) -> None:
    said = loads(results.get("transcribe_audio"))
    report.check("speech-to-text: the audio fake's transcript via the openai-audio relay",
                 said.get("success") is True and said.get("transcript") == TRANSCRIPT
                 and said.get("provider") == "openai",
                 f"upstream said {str(results.get('transcribe_audio'))[:300]}")
    heard = [r for r in stack.audio.requests if r["path"] == "/v1/audio/transcriptions"]
    form = heard[0].get("form", {}) if heard else {}
    upload = stack.audio.uploads[0].get("file") if stack.audio.uploads else None
    report.check("OpenAI audio fake got the transcription with the operator key and the upstream's file",
                 len(heard) == 1 and heard[0]["headers"].get("authorization") == f"Bearer {OPENAI_KEY}"
                 and form.get("model") == "whisper-1" and form.get("response_format") == "text"
                 and upload is not None and upload[0] == note.name and upload[1] == note.read_bytes(),
                 f"{len(heard)} request(s), fields {form}, file {upload[0] if upload else None!r} "
                 f"({len(upload[1]) if upload else 0} bytes)")


def _terminal(results: dict[str, Any], key: str) -> tuple[int | None, list[str], str]:
    data = loads(results.get(key))
    code = data.get("exit_code")
    output = str(data.get("output") or "")
    return (code if isinstance(code, int) else None), output.splitlines(), str(results.get(key))[:300]


def check_sandbox(stack: Stack, report: Report, results: dict[str, Any]) -> None:
    runner = "nobody" if AS_ROOT else getpass.getuser()
    root = str(stack.sandbox_root)
    code, lines, raw = _terminal(results, "terminal")
    report.check("terminal (managed Modal): the command ran in a gateway sandbox and its exit status came back",
                 code == SANDBOX_EXIT and lines[:1] == [runner] and len(lines) >= 2 and lines[1].startswith(root + "/")
                 and "from-stderr" in lines[2:],
                 f"exit {code}, user {lines[:1]}, cwd under the sandbox root: "
                 f"{len(lines) >= 2 and lines[1].startswith(root + '/')}; tool said {raw}"[:400])
    code, lines, raw = _terminal(results, "terminal_env")
    env = dict(line.split("=", 1) for line in lines[1:] if "=" in line)
    report.check("terminal: the second command ran in the same sandbox (the file of the first is there)",
                 code == 0 and lines[:1] == ["kept-between-commands"] and env.get("HOME", "").startswith(root + "/"),
                 f"exit {code}, first line {lines[:1]}, HOME under the sandbox root: "
                 f"{env.get('HOME', '').startswith(root + '/')}")
    output = "\n".join(lines)
    leaked = [s for s in (*report.secrets, OPENAI_KEY, KREA_KEY) if s and s in output]
    report.check("terminal: no token or operator key in the sandbox's environment", bool(env) and not leaked,
                 f"{len(env)} variables: {sorted(env)[:12]}")


def check_krea(stack: Stack, report: Report, results: dict[str, Any]) -> None:
    made = loads(results.get("image_generate"))
    image = str(made.get("image") or "")
    data = Path(image).read_bytes() if image.startswith("/") and Path(image).is_file() else b""
    report.check("image_generate (krea-2-medium): the Krea fake's image via the krea relay",
                 made.get("success") is True and made.get("provider") == "krea" and made.get("model") == KREA_MODEL
                 and data == stack.krea.image,
                 f"image {Path(image).name or None}, {len(data)} bytes; upstream said "
                 f"{str(results.get('image_generate'))[:300]}")
    submits = [r for r in stack.krea.requests if r["method"] == "POST"]
    body = (submits[0]["json"] or {}) if submits else {}
    report.check("Krea fake got the submit with the operator key, the upstream's fields and an idempotency key",
                 len(submits) == 1 and submits[0]["path"] == "/generate/image/krea/krea-2/medium"
                 and submits[0]["headers"].get("authorization") == f"Bearer {KREA_KEY}"
                 and body == {"prompt": KREA_PROMPT, "aspect_ratio": "1:1", "resolution": "1K", "creativity": "medium"}
                 and bool(_UUID.match(submits[0]["headers"].get("x-idempotency-key", ""))),
                 f"{len(submits)} submit(s) to {[r['path'] for r in submits]}, body {body}")
    polls = [r for r in stack.krea.requests if r["method"] == "GET" and r["path"].startswith("/jobs/")]
    files = [r for r in stack.krea.requests if r["method"] == "GET" and r["path"].startswith("/files/")]
    report.check("Krea fake got the job polls with the operator key; the image was fetched without credentials",
                 len(polls) >= 2 and all(r["headers"].get("authorization") == f"Bearer {KREA_KEY}" for r in polls)
                 and len(files) == 1 and "authorization" not in files[0]["headers"],
                 f"{len(polls)} poll(s), {len(files)} image download(s)")


def check_no_token_at_fakes(stack: Stack, report: Report) -> None:
    """Nothing any recording fake received (headers, bodies, paths) contains the user's tokens."""
    secrets = [s.encode() for s in report.secrets if s]
    seen = 0
    hits = 0
    for recorder in (stack.fal, stack.audio, stack.krea):
        for request in recorder.requests:
            seen += 1
            blob = repr(request["headers"]).encode() + bytes(request["body"]) + request["path"].encode()
            hits += any(secret in blob for secret in secrets)
    report.check("no vendor fake received the user's access or refresh token", seen > 0 and hits == 0,
                 f"{hits} of {seen} requests carried one")
