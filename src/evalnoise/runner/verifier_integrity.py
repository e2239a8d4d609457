"""The verifier sees only what the task shipped; a change to what it executes is detected.

An environment trial's agent works in the container the verifier runs in afterwards (Harbor's
``shared`` mode), as root more often than not. Whatever it leaves there runs with the
verifier: a ``/tests/json.py`` that a ``python3 /tests/check.py`` imports before the standard
library's (the script's folder comes first on ``sys.path``), a ``/tests/conftest.py`` that
pytest loads, a ``python3`` earlier on ``PATH`` than the real one, or the real one
overwritten. This module closes the first two and detects the others:

- :func:`install_tests` removes ``/tests`` and writes the task's ``tests/`` there afresh,
  files read-only (``0444``, executables ``0555``; directories ``0755``, all owned by
  root): nothing the agent put there is left, and a non-root verifier cannot change the
  tests. The removal is done through the engine's view of the container's file system when
  the container's root is readable on this host (overlay2), else by ``rm -rf`` in the
  container, which the agent could have replaced: so the result is checked through the
  engine's archive API either way (:func:`tests_tree`), and anything left over is reported.
- :func:`snapshot` records, without running anything in the container (whose tools the agent
  may have replaced) — through its root as this host sees it (overlay2, a local engine), else
  the engine's archive API — what the verifier will execute: for
  every command :func:`verifier_commands` finds in ``test.sh`` (plus ``bash``, which runs it,
  and its ``#!`` interpreter) the file ``PATH`` resolves it to and that file's SHA-256 (and
  one level of ``#!`` interpreter of a script it resolves to), and every file under
  ``/tests``. Taken before the agent phase and again before the verifier,
  :func:`changes` lists what differs: a command that now resolves elsewhere, a file whose
  content changed or that is gone, a ``/tests`` file added, changed or removed. A command
  that did not resolve before and does now is *installed*, not tampered with: a task may
  ask the agent to install what its verifier then uses.

The runner records the list in the trial row (``environment_tampered``) and, by the
config's choice (``benchmark.tampered_environment``: ``failure``, the default, or
``verdict``), scores the trial as the agent's failure or keeps the verifier's verdict.

Harbor's ``separate`` mode runs the verifier in a fresh container instead
(:mod:`evalnoise.runner.separate_verifier`); there only :func:`install_tests` applies.

What is not covered: the shared libraries and language modules those programs load (the
standard library, ``site-packages`` — where an honest agent installs what a task asks for);
a process the agent left running that restores a file between the check and the verifier.
"""

from __future__ import annotations

import hashlib
import io
import os
import re
import shlex
import stat
import tarfile
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

__all__ = [
    "DEFAULT_PATH",
    "TAMPERED_CHOICES",
    "Guard",
    "Snapshot",
    "changes",
    "container_path",
    "install_tests",
    "judge_tampering",
    "path_stat",
    "snapshot",
    "tampered_text",
    "tests_tar",
    "tests_tree",
    "verifier_commands",
]

#: what ``benchmark.tampered_environment`` may be: the trial is the agent's failure, or the
#: verifier's verdict stands (the flag stays either way)
TAMPERED_CHOICES = ("failure", "verdict")
#: the ``PATH`` of a container whose image and task set none (Docker's default)
DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
TESTS = "/tests"
#: at most this many commands are digested per trial
MAX_COMMANDS = 64
_MAX_LINKS = 40
_CHUNK = 1 << 16
#: shell words that are not commands, and builtins (nothing on PATH runs for them)
_NOT_COMMANDS = frozenset(
    """if then else elif fi for in do done while until case esac function select time !
    { } [[ ]] [ . : alias bg bind break builtin caller cd command compgen complete continue
    declare dirs disown echo enable eval exec exit export false fc fg getopts hash help
    history jobs kill let local logout mapfile popd printf pushd pwd read readarray readonly
    return set shift shopt source suspend test times trap true type typeset ulimit umask
    unalias unset wait""".split()
)
#: commands that run the next word as a command (their own options skipped)
_WRAPPERS = frozenset(
    "env exec command nice nohup sudo timeout stdbuf xargs builtin time chroot".split()
)
#: shell keywords after which a command follows in the same segment
_PREFIX_KEYWORDS = frozenset("if then else elif while until do ! time {".split())
_SEPARATORS = re.compile(r"\|\||&&|[;|&(){}`\n]|\$\(")
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")


def _shebang(text: str) -> list[str]:
    """The interpreter (and, for ``env``, the program) a ``#!`` line names."""
    first = text.split("\n", 1)[0]
    if not first.startswith("#!"):
        return []
    words = first[2:].split()
    if not words:
        return []
    out = [words[0]]
    if PurePosixPath(words[0]).name == "env":
        out += [w for w in words[1:] if not w.startswith("-")][:1]
    return out


def verifier_commands(test_sh: str) -> tuple[str, ...]:
    """The programs a verifier script runs, in first-seen order: its ``#!`` interpreter and
    the first word of every simple command (after ``VAR=value`` assignments and wrappers
    such as ``env``, ``timeout`` or ``sudo``), shell keywords and builtins left out, and
    words holding a parameter expansion (``$X``: unknown until run) too. A heuristic over
    the text, not a shell parser: a word the shell would not run as a command costs one
    digest, nothing more."""
    names: list[str] = list(_shebang(test_sh))
    for raw_line in test_sh.splitlines():
        line = raw_line.strip()
        if not line or line.startswith("#"):
            continue
        for segment in _SEPARATORS.split(line):
            try:
                words = shlex.split(segment, comments=True)
            except ValueError:
                words = segment.split()
            i = 0
            while i < len(words) and _ASSIGNMENT.match(words[i]):
                i += 1
            while i < len(words):
                word = words[i]
                if word in _PREFIX_KEYWORDS:
                    i += 1
                    while i < len(words) and _ASSIGNMENT.match(words[i]):
                        i += 1
                    continue
                if word in _WRAPPERS:
                    i += 1
                    # options of the wrapper, and timeout's duration
                    while i < len(words) and (
                        words[i].startswith("-")
                        or _ASSIGNMENT.match(words[i])
                        or (word == "timeout" and re.fullmatch(r"[0-9.]+[smhd]?", words[i]))
                    ):
                        i += 1
                    continue
                break
            if i >= len(words):
                continue
            word = words[i]
            if word in _NOT_COMMANDS or "$" in word or "=" in word or word.startswith("-"):
                continue
            names.append(word)
    seen: dict[str, None] = {}
    for name in names:
        seen.setdefault(name, None)
    return tuple(seen)[:MAX_COMMANDS]


# -- reading the container through the engine (nothing runs inside it) ----------------------


def path_stat(api: Any, container: str, path: str) -> dict[str, Any] | None:
    """The engine's stat of ``path`` in the container (None: absent): a ``HEAD`` of the
    archive endpoint, which reads no file content."""
    from docker.utils import decode_json_header

    response = api.head(api._url("/containers/{0}/archive", container), params={"path": path})
    if response.status_code == 404:
        return None
    api._raise_for_status(response)
    header = response.headers.get("x-docker-container-path-stat")
    return dict(decode_json_header(header)) if header else {}


def _is_dir(info: Mapping[str, Any]) -> bool:
    return bool(int(info.get("mode", 0)) & (1 << 31))


def _resolve(api: Any, container: str, path: str) -> str | None:
    """``path`` with every symlink followed, in the container (None: absent or a loop)."""
    for _ in range(_MAX_LINKS):
        info = path_stat(api, container, path)
        if info is None:
            return None
        target = info.get("linkTarget")
        if not target:
            return path
        target = str(target)
        path = target if target.startswith("/") else str(PurePosixPath(path).parent / target)
    return None


def _archive_files(api: Any, container: str, path: str) -> dict[str, str]:
    """SHA-256 of every regular file of the engine's archive of ``path``, by its path in the
    container; links and special files as ``link:<target>`` / ``special``."""
    import docker.errors

    try:
        stream, _ = api.get_archive(container, path)
    except docker.errors.NotFound:
        return {}
    parent = PurePosixPath(path).parent
    out: dict[str, str] = {}
    with tempfile.SpooledTemporaryFile(max_size=8 << 20) as spool:
        for chunk in stream:
            spool.write(chunk)
        spool.seek(0)
        with tarfile.open(fileobj=spool, mode="r|") as archive:
            for info in archive:
                where = str(parent / info.name)
                if info.isfile():
                    digest = hashlib.sha256()
                    fh = archive.extractfile(info)
                    assert fh is not None
                    while chunk := fh.read(_CHUNK):
                        digest.update(chunk)
                    out[where] = digest.hexdigest()
                elif info.issym() or info.islnk():
                    out[where] = f"link:{info.linkname}"
                elif not info.isdir():
                    out[where] = "special"
    return out


def _file_digest(api: Any, container: str, path: str) -> tuple[str | None, str | None]:
    """(SHA-256 of the file at ``path``, its ``#!`` interpreter) — (None, None) if it is no
    regular file."""
    import docker.errors

    try:
        stream, _ = api.get_archive(container, path)
    except docker.errors.NotFound:
        return None, None
    with tempfile.SpooledTemporaryFile(max_size=8 << 20) as spool:
        for chunk in stream:
            spool.write(chunk)
        spool.seek(0)
        with tarfile.open(fileobj=spool, mode="r|") as archive:
            for info in archive:
                if not info.isfile():
                    return None, None
                fh = archive.extractfile(info)
                assert fh is not None
                digest = hashlib.sha256()
                head = fh.read(256)
                digest.update(head)
                while chunk := fh.read(_CHUNK):
                    digest.update(chunk)
                shebang = _shebang(head.decode("utf-8", "replace"))
                return digest.hexdigest(), (shebang[0] if shebang else None)
    return None, None


def _lookup(api: Any, container: str, name: str, path_dirs: Iterable[str]) -> str | None:
    """Where ``name`` runs from: itself if it holds a ``/``, else the first ``PATH``
    directory that has it (symlinks followed), as the shell finds it."""
    if "/" in name:
        return _resolve(api, container, name) if name.startswith("/") else None
    for directory in path_dirs:
        if not directory.startswith("/"):
            continue
        found = _resolve(api, container, str(PurePosixPath(directory) / name))
        if found is not None:
            info = path_stat(api, container, found)
            if info is not None and not _is_dir(info):
                return found
    return None


@dataclass(frozen=True)
class Snapshot:
    """What the verifier will execute, as found in the container at one moment:
    ``commands`` name → (the file it resolves to, its SHA-256; None: not found), and every
    file under ``/tests`` → SHA-256 (or ``link:...``)."""

    commands: Mapping[str, tuple[str | None, str | None]] = field(default_factory=dict)
    tests: Mapping[str, str] = field(default_factory=dict)


class _HostRoot:
    """The container's root file system as this host sees it (overlay2's merged directory
    of a local engine): the same reads as the archive API, without streaming every file
    through the engine. Symlinks are resolved inside the root, never on the host."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def _host(self, path: str) -> Path:
        return self.root.joinpath(*PurePosixPath(path).parts[1:])

    def resolve(self, path: str) -> str | None:
        parts = list(PurePosixPath(path).parts[1:])
        done: list[str] = []
        hops = 0
        while parts:
            part = parts.pop(0)
            if part in ("", "."):
                continue
            if part == "..":
                if done:
                    done.pop()
                continue
            try:
                info = os.lstat(self.root.joinpath(*done, part))
            except OSError:
                return None
            if stat.S_ISLNK(info.st_mode):
                hops += 1
                if hops > _MAX_LINKS:
                    return None
                target = os.readlink(self.root.joinpath(*done, part))
                if target.startswith("/"):
                    done = []
                parts = [p for p in PurePosixPath(target).parts if p != "/"] + parts
                continue
            done.append(part)
        return "/" + "/".join(done)

    def lookup(self, name: str, path_dirs: Iterable[str]) -> str | None:
        if "/" in name:
            return self.resolve(name) if name.startswith("/") else None
        for directory in path_dirs:
            if directory.startswith("/"):
                found = self.resolve(str(PurePosixPath(directory) / name))
                if found is not None and self._host(found).is_file():
                    return found
        return None

    def digest(self, path: str) -> tuple[str | None, str | None]:
        try:
            fd = os.open(self._host(path), os.O_RDONLY | os.O_NOFOLLOW)
        except OSError:
            return None, None
        with os.fdopen(fd, "rb") as fh:
            if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
                return None, None
            digest = hashlib.sha256()
            head = fh.read(256)
            digest.update(head)
            while chunk := fh.read(_CHUNK):
                digest.update(chunk)
        shebang = _shebang(head.decode("utf-8", "replace"))
        return digest.hexdigest(), (shebang[0] if shebang else None)

    def tree(self, path: str) -> dict[str, str]:
        top = self._host(path)
        if top.is_symlink():
            return {path: f"link:{os.readlink(top)}"}
        out: dict[str, str] = {}
        for folder, dirs, files in os.walk(top):
            for name in dirs + files:
                host = Path(folder) / name
                where = f"{path}/{host.relative_to(top).as_posix()}"
                if host.is_symlink():
                    out[where] = f"link:{os.readlink(host)}"
                elif name in files:
                    digest, _ = self.digest(where)
                    out[where] = digest or "special"
        return out


def snapshot(api: Any, container: str, names: Iterable[str], path: str | None = None) -> Snapshot:
    """Read :class:`Snapshot` of the container without running anything in it: through its
    root as this host sees it (a local overlay2 engine), else the engine's archive API;
    ``path``: the ``PATH`` the verifier runs with (default :data:`DEFAULT_PATH`)."""
    path_dirs = [d for d in (path or DEFAULT_PATH).split(":") if d]
    merged = _merged_dir(api, container)
    host = _HostRoot(merged) if merged is not None else None
    commands: dict[str, tuple[str | None, str | None]] = {}
    names = list(names)
    pending = list(dict.fromkeys(["bash", *names]))
    while pending and len(commands) < MAX_COMMANDS:
        name = pending.pop(0)
        if name in commands:
            continue
        if host is not None:
            where = host.lookup(name, path_dirs)
            digest, interpreter = host.digest(where) if where else (None, None)
        else:
            where = _lookup(api, container, name, path_dirs)
            digest, interpreter = _file_digest(api, container, where) if where else (None, None)
        commands[name] = (where, digest)
        if interpreter and interpreter not in commands and name in names:
            pending.append(interpreter)  # one level: the script's interpreter
    tests = host.tree(TESTS) if host is not None else _archive_files(api, container, TESTS)
    return Snapshot(commands=commands, tests=tests)


def changes(before: Snapshot, after: Snapshot) -> tuple[str, ...]:
    """What differs between two :class:`Snapshot` s, one line each (module docstring): a
    command that resolves elsewhere now, whose file changed or is gone; a ``/tests`` file
    added, changed or removed. A command found only after is installed, not listed."""
    out: list[str] = []
    for name, (was_at, was_digest) in before.commands.items():
        now_at, now_digest = after.commands.get(name, (None, None))
        if was_at is None:
            continue  # not there before: installed (or still absent), not tampered with
        if now_at is None:
            out.append(f"{name}: {was_at} is gone")
        elif now_at != was_at:
            out.append(f"{name}: now {now_at} (was {was_at})")
        elif now_digest != was_digest:
            out.append(f"{name}: {now_at} changed")
    for path in sorted(set(before.tests) | set(after.tests)):
        if path not in before.tests:
            out.append(f"{path}: added")
        elif path not in after.tests:
            out.append(f"{path}: removed")
        elif before.tests[path] != after.tests[path]:
            out.append(f"{path}: changed")
    return tuple(out)


# -- /tests afresh ---------------------------------------------------------------------------


def tests_tar(source: Path, executable: Iterable[str] = ("test.sh",)) -> bytes:
    """A tar of the task's ``tests/`` at ``tests/`` (relative to /): owned by root, files
    read-only (``0444``; ``0555`` for ``executable`` and files with an owner execute bit),
    directories ``0755``. Symlinks are refused as in the task folder itself: none may point
    outside it, so they are copied as the files they name."""
    keep = set(executable)
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        root = tarfile.TarInfo("tests")
        root.type, root.mode = tarfile.DIRTYPE, 0o755
        archive.addfile(root)
        for path in sorted(source.rglob("*")):
            relative = path.relative_to(source).as_posix()
            info = tarfile.TarInfo(f"tests/{relative}")
            info.uid = info.gid = 0
            info.uname = info.gname = "root"
            if path.is_dir():
                info.type, info.mode = tarfile.DIRTYPE, 0o755
                archive.addfile(info)
            elif path.is_file():
                data = path.read_bytes()
                info.size = len(data)
                run = relative in keep or path.stat().st_mode & 0o100
                info.mode = 0o555 if run else 0o444
                archive.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def tests_tree(source: Path) -> dict[str, str]:
    """What :func:`_archive_files` of ``/tests`` reads after :func:`install_tests`."""
    out = {}
    for path in sorted(source.rglob("*")):
        if path.is_file():
            out[f"{TESTS}/{path.relative_to(source).as_posix()}"] = hashlib.sha256(
                path.read_bytes()
            ).hexdigest()
    return out


def _merged_dir(api: Any, container: str) -> Path | None:
    """The container's root as this host sees it (overlay2, local engine), if readable."""
    data = (api.inspect_container(container).get("GraphDriver") or {}).get("Data") or {}
    merged = data.get("MergedDir")
    if merged and Path(merged).is_dir():
        return Path(merged)
    return None


def install_tests(box: Any, source: Path | Sequence[Path]) -> tuple[str, ...]:
    """Remove ``/tests`` in ``box``'s container and write ``source`` there (read-only
    files; several folders in order, each over the one before: a step's tests over the
    task's); returns what is still wrong afterwards (files the removal left), empty when
    ``/tests`` is exactly the task's tests."""
    import shutil

    sources = (source,) if isinstance(source, Path) else tuple(source)

    merged = _merged_dir(box.api, box.id)
    if merged is not None:
        target = merged / "tests"
        if target.is_symlink() or target.is_file():
            target.unlink()
        elif target.is_dir():
            shutil.rmtree(target)
    else:
        box.run(f"rm -rf {TESTS}", user="0:0", env=None, timeout_s=60.0)
    for folder in sources:
        box.api.put_archive(box.id, "/", tests_tar(folder))
    found = (
        _HostRoot(merged).tree(TESTS)
        if merged is not None
        else _archive_files(box.api, box.id, TESTS)
    )
    wanted: dict[str, str] = {}
    for folder in sources:
        wanted.update(tests_tree(folder))
    return tuple(
        f"{path}: left in /tests after it was recreated"
        for path in sorted(set(found) - set(wanted))
    ) + tuple(
        f"{path}: differs from the task's after /tests was recreated"
        for path in sorted(set(found) & set(wanted))
        if found[path] != wanted[path]
    )


def container_path(api: Any, container: str, env: Mapping[str, str] | None = None) -> str:
    """The ``PATH`` a command run in the container with ``env`` gets: ``env``'s, else the
    container's (its image's or task's), else :data:`DEFAULT_PATH`."""
    if env and env.get("PATH"):
        return str(env["PATH"])
    for item in (api.inspect_container(container).get("Config") or {}).get("Env") or []:
        if item.startswith("PATH="):
            return item[len("PATH=") :]
    return DEFAULT_PATH


@dataclass
class Guard:
    """One shared-mode trial's watch over what its verifier executes: :meth:`before_agent`
    takes the first :class:`Snapshot`, :meth:`before_verifier` the second, recreates
    ``/tests`` and returns every change (empty: nothing changed)."""

    names: tuple[str, ...]
    path: str
    before: Snapshot | None = None

    @classmethod
    def before_agent(cls, box: Any, tests_dir: Path, env: Mapping[str, str] | None) -> Guard:
        test_sh = (tests_dir / "test.sh").read_text(encoding="utf-8", errors="replace")
        guard = cls(verifier_commands(test_sh), container_path(box.api, box.id, env))
        guard.before = snapshot(box.api, box.id, guard.names, guard.path)
        return guard

    def before_verifier(self, box: Any, tests_dir: Path | Sequence[Path]) -> tuple[str, ...]:
        found: tuple[str, ...] = ()
        if self.before is not None:
            found = changes(self.before, snapshot(box.api, box.id, self.names, self.path))
        return found + install_tests(box, tests_dir)


def judge_tampering(row: dict[str, Any], policy: str) -> None:
    """Score a trial whose agent changed what the verifier executes as the agent's failure
    (``policy == "failure"``): status ``agent_error`` in phase ``verifier``, no reward (the
    verifier's named rewards stay in ``rewards_json``), ``error`` naming the changes. Only
    a trial the verifier decided (``ok``, ``verifier_error``) changes: an earlier failure
    (timeout, OOM kill) decided it already. The flag stays whatever the policy."""
    if not row.get("environment_tampered") or policy != "failure":
        return
    if row.get("status") not in ("ok", "verifier_error"):
        return
    note = (
        "the agent changed what the verifier executes "
        f"({row['environment_tampered']}): scored as the agent's failure"
    )
    if row.get("reward") is not None:
        note += f"; the verifier's reward was {row['reward']:g}"
    error = row.get("error")
    row.update(
        status="agent_error",
        phase="verifier",
        reward=None,
        error=f"{note}; {error}" if error else note,
    )


def tampered_text(found: Iterable[str]) -> str | None:
    """The trial row's ``environment_tampered``: the changes joined by ``; `` (None: none)."""
    found = list(found)
    return "; ".join(found) if found else None
