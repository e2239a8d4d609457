"""The exec protocol from an adapter's side: commands and files in the trial's container.

Shared by the adapters that run another harness's agent unchanged as an evalnoise external
agent (docs/agent-contract.md, "Environment tasks"): ``agents/harbor_agent/bridge.py`` (in
Harbor's Python) and ``agents/inspect_agent/agent.py``. Standard library only.

:class:`Channel` takes the process's stdout for protocol lines and points file descriptor 1
and ``sys.stdout`` at stderr, so whatever the harness's libraries print reaches the trial's
``stderr_tail`` and never the runner. Files cross as base64: as root with the protocol's
``upload`` (a tar), or inside shell commands as the agent's user — an upload in chunks of
:data:`UPLOAD_CHUNK` base64 characters (a command is one ``execve`` argument, at most
128 KiB), a download in chunks of :data:`DOWNLOAD_CHUNK` bytes (4/3 of it in base64, under the
16 KiB of a command's output the runner returns). The container needs ``base64``, ``head``,
``tail``, ``stat`` (coreutils) — and ``tar`` for directories.
"""

from __future__ import annotations

import base64
import io
import json
import os
import shlex
import sys
import tarfile
import threading
from collections.abc import Mapping
from typing import Any

UPLOAD_CHUNK = 96 * 1024
#: base64 characters of one ``upload`` line (the runner reads lines up to 1 MiB)
MAX_UPLOAD_CHARS = 1000 * 1000
DOWNLOAD_CHUNK = 9 * 1024


class ProtocolClosed(Exception):
    """The runner stopped answering (the agent phase ended)."""


class CommandFailed(RuntimeError):
    """A file transfer's command exited non-zero."""

    def __init__(self, what: str, exit_code: int | None, output: str) -> None:
        super().__init__(f"{what} failed with exit code {exit_code}: {output[-500:]}")
        self.exit_code = exit_code
        self.output = output


class Channel:
    """Exec-protocol requests on a private copy of stdout, answers from stdin; thread-safe
    (one request at a time)."""

    def __init__(self) -> None:
        sys.stdout.flush()
        self.out = os.fdopen(os.dup(1), "w", encoding="utf-8", buffering=1)
        os.dup2(2, 1)
        sys.stdout = sys.stderr
        self.inp = sys.stdin.buffer
        self.lock = threading.Lock()
        self.steps = 0

    def send(self, message: Mapping[str, Any]) -> None:
        """Write one protocol line (``done`` ends the agent phase)."""
        self.out.write(json.dumps(message, ensure_ascii=False) + "\n")
        self.out.flush()

    def exec(self, command: str, timeout_s: float | None = None) -> dict[str, Any]:
        """Run ``command`` (``bash -c``) in the trial's container; the runner's answer
        (``exit_code``, ``output``, ``timed_out``, ``truncated_bytes``, ``duration_s``)."""
        request: dict[str, Any] = {"exec": command}
        if timeout_s is not None and timeout_s > 0:
            request["timeout_s"] = float(timeout_s)
        with self.lock:
            self.steps += 1
            self.send(request)
            line = self.inp.readline()
        if not line:
            raise ProtocolClosed("the runner closed the exec channel")
        return json.loads(line)

    def upload(self, archive: bytes, target_dir: str) -> None:
        """Unpack the tar ``archive`` into ``target_dir`` (made if missing) as root: the
        protocol's ``upload``. The line (base64) must stay under the runner's 1 MiB."""
        encoded = base64.b64encode(archive).decode("ascii")
        if len(encoded) > MAX_UPLOAD_CHARS:
            raise ValueError(
                f"upload to {target_dir}: {len(archive)} bytes of archive are more than one "
                f"protocol line carries ({MAX_UPLOAD_CHARS} base64 characters)"
            )
        with self.lock:
            self.steps += 1
            self.send({"upload": target_dir, "archive": encoded})
            line = self.inp.readline()
        if not line:
            raise ProtocolClosed("the runner closed the exec channel")
        answer = json.loads(line)
        if not answer.get("ok"):
            raise CommandFailed(f"upload to {target_dir}", None, str(answer.get("error")))

    def upload_file(self, data: bytes, target: str, mode: int = 0o644) -> None:
        """Write ``data`` to the file ``target`` as root (:meth:`upload` of a one-file tar)."""
        buffer = io.BytesIO()
        with tarfile.open(fileobj=buffer, mode="w") as tar:
            info = tarfile.TarInfo(os.path.basename(target))
            info.size, info.mode = len(data), mode
            tar.addfile(info, io.BytesIO(data))
        self.upload(buffer.getvalue(), os.path.dirname(target) or "/")

    def checked(self, command: str, what: str) -> str:
        """``command``'s output; :class:`CommandFailed` unless it exits 0."""
        answer = self.exec(command)
        if answer.get("exit_code") != 0:
            raise CommandFailed(what, answer.get("exit_code"), answer.get("output") or "")
        return answer.get("output") or ""

    def put_bytes(self, data: bytes, target: str) -> None:
        """Write ``data`` to the file ``target`` in the container (parents made)."""
        encoded = base64.b64encode(data).decode("ascii")
        quoted = shlex.quote(target)
        parent = shlex.quote(os.path.dirname(target) or "/")
        self.checked(f"mkdir -p {parent} && : > {quoted}", f"upload to {target}")
        for start in range(0, len(encoded), UPLOAD_CHUNK):
            chunk = encoded[start : start + UPLOAD_CHUNK]
            self.checked(f"printf %s {chunk} | base64 -d >> {quoted}", f"upload to {target}")

    def get_bytes(self, source: str) -> bytes:
        """The bytes of the file ``source`` in the container; :class:`FileNotFoundError` when
        it is not a regular file."""
        quoted = shlex.quote(source)
        answer = self.exec(f"test -f {quoted} && stat -c %s {quoted}")
        if answer.get("exit_code") != 0:
            raise FileNotFoundError(source)
        size = int((answer.get("output") or "0").strip())
        data = bytearray()
        while len(data) < size:
            text = self.checked(
                f"tail -c +{len(data) + 1} {quoted} | head -c {DOWNLOAD_CHUNK} | base64 -w0",
                f"download {source}",
            )
            chunk = base64.b64decode(text.strip())
            if not chunk:
                raise CommandFailed(f"download {source}", 0, "the file shrank while read")
            data += chunk
        return bytes(data)
