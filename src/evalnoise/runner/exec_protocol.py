"""The exec protocol of external environment agents: messages and their checks (no I/O).

An external agent is a program on the host (its ``command`` in the agent spec) that works in
an environment task's container without being in it — so the container stays offline while
the agent may reach a model server on the host. It talks to the runner over its stdin and
stdout, one JSON object per line (docs/agent-contract.md, "Environment tasks"):

agent → runner (stdout)::

    {"exec": "<shell command>", "timeout_s": 30}     run a command in the task's container
    {"upload": "/dir", "archive": "<base64 tar>"}    unpack files into a directory, as root
    {"done": true, "usage": {"model_calls": 3, ...}} finished (usage optional, as in the
                                                     QA contract)

runner → agent (stdin), one line per ``exec``::

    {"exit_code": 0, "output": "<stdout and stderr as they arrived, capped>",
     "timed_out": false, "truncated_bytes": 0, "duration_s": 0.04}

``upload`` answers ``{"ok": true}`` or ``{"ok": false, "error": "..."}``: the directory is
made (``mkdir -p``) and the archive unpacked into it as root, as a harness's upload does
(``docker cp``); the agent's files reach places its user cannot write (Harbor's oracle puts
its solution at ``/solution``). The runner runs each command as ``bash -c <command>`` in
the task's container, as the task's agent user, in its working directory, with no stdin.
``timeout_s`` is optional (default and ceiling: what is left of the agent timeout); a
command past it is killed with its children (``exit_code`` 137, ``timed_out`` true). Stdout
and stderr are merged in the order the engine delivers them (each in order; between the
two, order is not guaranteed). Output longer than the cap keeps its head and tail with a
marker between; ``truncated_bytes`` counts what was left out. Lines on stdout that are not a
JSON object, or objects that are neither an ``exec``, an ``upload`` nor
a ``done``, end the trial as ``agent_error`` (the agent does not follow the protocol).
"""

from __future__ import annotations

import base64
import binascii
import json
import math
from dataclasses import dataclass
from typing import Any

PROTOCOL = "exec/1"
#: Longest line the agent may write (bytes); longer is a protocol error.
MAX_LINE_BYTES = 1 << 20
#: Bytes of a command's output returned to the agent by default.
DEFAULT_OUTPUT_BYTES = 16 * 1024


@dataclass(frozen=True)
class Exec:
    """A request to run ``command``; ``timeout_s`` None: until the agent's deadline."""

    command: str
    timeout_s: float | None


@dataclass(frozen=True)
class Upload:
    """A request to unpack ``archive`` (tar bytes) into the directory ``target`` as root."""

    target: str
    archive: bytes


@dataclass(frozen=True)
class Done:
    """The agent is finished; ``record`` is its message (its ``usage`` is recorded)."""

    record: dict[str, Any]


def parse_message(line: bytes) -> Exec | Upload | Done:
    """One line of the agent's stdout as a message; ``ValueError`` says what is wrong."""
    if len(line) > MAX_LINE_BYTES:
        raise ValueError(f"a line longer than {MAX_LINE_BYTES} bytes")
    try:
        obj = json.loads(line.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError):
        raise ValueError(f"not a JSON line: {line[:120].decode('utf-8', 'replace')!r}") from None
    if not isinstance(obj, dict):
        raise ValueError(f"not a JSON object: {line[:120].decode('utf-8', 'replace')!r}")
    if obj.get("done") is True:
        return Done(obj)
    if "exec" in obj:
        command = obj["exec"]
        if not isinstance(command, str) or not command.strip():
            raise ValueError('"exec" must be a non-empty string')
        timeout = obj.get("timeout_s")
        if timeout is not None and (
            isinstance(timeout, bool)
            or not isinstance(timeout, int | float)
            or not math.isfinite(timeout)
            or timeout <= 0
        ):
            raise ValueError(f'"timeout_s" must be a positive number, got {timeout!r}')
        return Exec(command, None if timeout is None else float(timeout))
    if "upload" in obj:
        target, archive = obj["upload"], obj.get("archive")
        if not isinstance(target, str) or not target.startswith("/"):
            raise ValueError('"upload" must be an absolute directory path')
        if not isinstance(archive, str):
            raise ValueError('"archive" must be a base64 string (a tar archive)')
        try:
            data = base64.b64decode(archive, validate=True)
        except (binascii.Error, ValueError):
            raise ValueError('"archive" is not valid base64') from None
        return Upload(target, data)
    raise ValueError(f'neither "exec", "upload" nor "done": {sorted(obj)[:10]}')


class CappedOutput:
    """Keeps the first and last ``limit // 2`` bytes of a stream, counting what it drops."""

    def __init__(self, limit: int = DEFAULT_OUTPUT_BYTES) -> None:
        self.half = max(1, limit // 2)
        self.head = bytearray()
        self.tail = bytearray()
        self.dropped = 0

    def write(self, data: bytes) -> None:
        """Take the next chunk of the stream."""
        room = self.half - len(self.head)
        if room > 0:
            self.head += data[:room]
            data = data[room:]
        if not data:
            return
        self.tail += data
        if len(self.tail) > self.half:
            cut = len(self.tail) - self.half
            self.dropped += cut
            del self.tail[:cut]

    def text(self) -> str:
        """What was kept, as text, with a marker where bytes were left out."""
        head = bytes(self.head).decode("utf-8", "replace")
        tail = bytes(self.tail).decode("utf-8", "replace")
        if self.dropped:
            return f"{head}\n[... {self.dropped} bytes left out ...]\n{tail}"
        return head + tail


def response(
    exit_code: int | None, output: CappedOutput, *, timed_out: bool, duration_s: float
) -> bytes:
    """The runner's answer to one ``exec``, as one line."""
    return (
        json.dumps(
            {
                "exit_code": exit_code,
                "output": output.text(),
                "timed_out": timed_out,
                "truncated_bytes": output.dropped,
                "duration_s": round(duration_s, 3),
            },
            ensure_ascii=False,
        ).encode("utf-8")
        + b"\n"
    )
