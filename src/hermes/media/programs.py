"""Running a local program (never through a shell) with a time limit."""

from __future__ import annotations

import asyncio
from pathlib import Path

from hermes.errors import LocalProgramError


async def run_program(argv: list[str], *, stdin: bytes | None = None, timeout: float) -> tuple[int, bytes, bytes]:
    """(exit status, stdout, stderr) of ``argv``; the process is killed when ``timeout`` runs out."""
    process = await asyncio.create_subprocess_exec(
        *argv, stdin=asyncio.subprocess.PIPE if stdin is not None else asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )
    try:
        out, err = await asyncio.wait_for(process.communicate(stdin), timeout)
    except TimeoutError:
        process.kill()
        await process.wait()
        raise LocalProgramError(f"{Path(argv[0]).name} did not finish within {timeout:g} s") from None
    return process.returncode or 0, out, err


def last_line(err: bytes) -> str:
    """The last line of a program's stderr (what it said about a failure), at most 200 characters."""
    text = err.decode("utf-8", errors="replace").strip().splitlines()
    return text[-1][:200] if text else "no message"
