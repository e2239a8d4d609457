"""One file per evaluation: a deterministic, self-verifying ``tar.gz`` of what a run produced.

Members, in this order:

- ``MANIFEST`` — one line per other member, ``<sha256>  <name>``, sorted by name. It is in
  ``sha256sum`` format: after extracting, ``sha256sum -c MANIFEST`` checks the files too;
- ``config/<name>`` — the config file;
- ``dvc.lock`` — if present;
- ``manifest.json`` — only when given as an extra member (see :mod:`evalnoise.cli.archive_verify`);
- ``modifications.json`` — only in an archive of a run whose results differ from its manifest
  (archived on request; see :mod:`evalnoise.cli.archive_verify`);
- ``results/...`` — every file under the results directory.

Determinism: members sorted by name; every header has mtime 0, uid/gid 0, no user or group
names, mode 0644; the gzip header has mtime 0 and no file name. The same inputs therefore
give a byte-identical archive (with the same zlib), whatever the files' timestamps or owner.

Every file is hashed once to write ``MANIFEST`` and again while it is copied in; if a file
changed in between, archiving fails instead of producing an archive that contradicts its
own MANIFEST. Files are also scanned for the values of secret environment variables (see
:func:`evalnoise.manifest.secret_env_names`); an archive never carries one.

:func:`verify_archive` recomputes every member's hash and reports missing, extra, changed
and duplicated members and unsafe member names, without extracting anything.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import os
import tarfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import IO

from evalnoise.atomic import atomic_path, is_temporary
from evalnoise.manifest import MIN_SECRET_LENGTH, secret_env_names

__all__ = [
    "MANIFEST_NAME",
    "ArchiveError",
    "ArchiveResult",
    "Member",
    "VerifyResult",
    "collect_members",
    "create_archive",
    "format_manifest",
    "parse_manifest",
    "read_members",
    "verify_archive",
]

MANIFEST_NAME = "MANIFEST"
_CHUNK = 1 << 20
_MODE = 0o644


class ArchiveError(Exception):
    """The archive cannot be written as asked (bad member name, file changed, a secret)."""


@dataclass(frozen=True)
class Member:
    """One archive member: its name and either a file on disk or bytes in memory."""

    name: str
    path: Path | None = None
    data: bytes | None = None

    def open(self) -> IO[bytes]:
        if self.data is not None:
            return io.BytesIO(self.data)
        assert self.path is not None
        return open(self.path, "rb")


@dataclass(frozen=True)
class ArchiveResult:
    path: Path
    sha256: str
    members: dict[str, str]  # name → sha256, MANIFEST excluded


@dataclass(frozen=True)
class VerifyResult:
    """What :func:`verify_archive` found. ``ok`` when every list is empty."""

    n_checked: int
    missing: tuple[str, ...] = ()
    extra: tuple[str, ...] = ()
    changed: tuple[tuple[str, str, str], ...] = ()  # (name, MANIFEST sha256, actual sha256)
    duplicates: tuple[str, ...] = ()
    problems: tuple[str, ...] = field(default=())
    #: every regular member's actual sha256 (MANIFEST excluded)
    digests: dict[str, str] = field(default_factory=dict, compare=False)

    @property
    def ok(self) -> bool:
        return not (self.missing or self.extra or self.changed or self.duplicates or self.problems)

    def lines(self) -> list[str]:
        """Human-readable differences, one per line."""
        out = [f"problem: {p}" for p in self.problems]
        out += [f"missing: {n} (in MANIFEST, not in the archive)" for n in self.missing]
        out += [f"extra:   {n} (in the archive, not in MANIFEST)" for n in self.extra]
        out += [f"duplicate: {n} (more than one member with this name)" for n in self.duplicates]
        out += [
            f"changed: {n} (MANIFEST sha256 {want}, archive sha256 {got})"
            for n, want, got in self.changed
        ]
        return out


def _check_name(name: str) -> str:
    p = PurePosixPath(name)
    if (
        not name
        or name != p.as_posix()
        or p.is_absolute()
        or ".." in p.parts
        or any(c in name for c in "\n\r\\")
    ):
        raise ArchiveError(f"unusable member name {name!r}")
    return name


def format_manifest(digests: Mapping[str, str]) -> bytes:
    """``MANIFEST`` text: ``<sha256>  <name>`` per member, sorted by name (sha256sum format)."""
    return "".join(f"{digests[n]}  {n}\n" for n in sorted(digests)).encode("utf-8")


def parse_manifest(data: bytes) -> tuple[dict[str, str], list[str]]:
    """(name → sha256, problems) from ``MANIFEST`` bytes."""
    digests: dict[str, str] = {}
    problems: list[str] = []
    for i, line in enumerate(data.decode("utf-8", errors="replace").splitlines(), start=1):
        digest, sep, name = line.partition("  ")
        if not sep or len(digest) != 64 or any(c not in "0123456789abcdef" for c in digest):
            problems.append(f"MANIFEST line {i} is malformed: {line[:80]!r}")
            continue
        if name in digests:
            problems.append(f"MANIFEST lists {name!r} twice")
        digests[name] = digest
    return digests, problems


def _secrets(environ: Mapping[str, str] | None) -> list[tuple[bytes, str]]:
    env = os.environ if environ is None else environ
    return [
        (env[n].encode("utf-8"), n)
        for n in secret_env_names((), env)
        if n in env and len(env[n]) >= MIN_SECRET_LENGTH
    ]


class _Scanner:
    """SHA-256 of a byte stream, and whether it contains any of the secrets."""

    def __init__(self, secrets: list[tuple[bytes, str]]) -> None:
        self.digest = hashlib.sha256()
        self.secrets = secrets
        self.keep = max((len(s) for s, _ in secrets), default=1) - 1
        self.tail = b""
        self.found: str | None = None

    def update(self, chunk: bytes) -> None:
        self.digest.update(chunk)
        if self.secrets and self.found is None:
            window = self.tail + chunk
            for secret, name in self.secrets:
                if secret in window:
                    self.found = name
                    break
            self.tail = window[-self.keep :] if self.keep else b""


class _HashingReader(io.RawIOBase):
    """A read-only stream that hashes what passes through it."""

    def __init__(self, raw: IO[bytes]) -> None:
        self.raw = raw
        self.digest = hashlib.sha256()

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        data = self.raw.read(size)
        self.digest.update(data)
        return data


def collect_members(
    *,
    config: str | os.PathLike[str],
    results: str | os.PathLike[str],
    dvc_lock: str | os.PathLike[str] | None = None,
    extra: Mapping[str, bytes] | None = None,
    exclude: Iterable[str | os.PathLike[str]] = (),
) -> list[Member]:
    """The archive's members (MANIFEST excluded), sorted by name.

    Under ``results`` every regular file is taken except in-flight atomic-write temporaries
    and what lies inside one (:func:`evalnoise.atomic.is_temporary`, the rule the writers
    name their temporaries by) and the paths in ``exclude`` (e.g. the archive being written).
    """
    config_path, results_dir = Path(config), Path(results)
    if not config_path.is_file():
        raise ArchiveError(f"config {config_path} is not a file")
    if not results_dir.is_dir():
        raise ArchiveError(f"results directory {results_dir} does not exist")
    skip = {Path(p).resolve() for p in exclude}
    members = [Member(_check_name(f"config/{config_path.name}"), path=config_path)]
    if dvc_lock is not None and Path(dvc_lock).is_file():
        members.append(Member("dvc.lock", path=Path(dvc_lock)))
    for name, data in sorted((extra or {}).items()):
        members.append(Member(_check_name(name), data=bytes(data)))
    for path in sorted(results_dir.rglob("*")):
        if not path.is_file() or path.resolve() in skip:
            continue
        rel = path.relative_to(results_dir)
        if is_temporary(rel):
            continue
        members.append(Member(_check_name(f"results/{rel.as_posix()}"), path=path))
    names = [m.name for m in members]
    if MANIFEST_NAME in names:
        raise ArchiveError(f"a member may not be named {MANIFEST_NAME}")
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise ArchiveError(f"two members would share the names {dup}")
    return sorted(members, key=lambda m: m.name)


def _tarinfo(name: str, size: int) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.size = size
    info.mtime = 0
    info.mode = _MODE
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    info.type = tarfile.REGTYPE
    return info


def create_archive(
    output: str | os.PathLike[str],
    members: list[Member],
    *,
    environ: Mapping[str, str] | None = None,
) -> ArchiveResult:
    """Write ``members`` (from :func:`collect_members`) and a ``MANIFEST`` to ``output``.

    The write is atomic: on any error no (partial) archive is left at ``output``. Raises
    :class:`ArchiveError` if a member contains a secret environment variable's value or
    changes while it is being archived.
    """
    secrets = _secrets(environ)
    digests: dict[str, str] = {}
    sizes: dict[str, int] = {}
    for m in members:
        scanner = _Scanner(secrets)
        size = 0
        with m.open() as fh:
            while chunk := fh.read(_CHUNK):
                scanner.update(chunk)
                size += len(chunk)
        if scanner.found is not None:
            raise ArchiveError(
                f"{m.name} contains the value of the secret environment variable "
                f"{scanner.found}; refusing to archive it"
            )
        digests[m.name] = scanner.digest.hexdigest()
        sizes[m.name] = size
    manifest = format_manifest(digests)
    output = Path(output)
    with atomic_path(output) as tmp:
        with open(tmp, "wb") as raw:
            with gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as gz:
                with tarfile.open(fileobj=gz, mode="w", format=tarfile.PAX_FORMAT) as tar:
                    tar.addfile(_tarinfo(MANIFEST_NAME, len(manifest)), io.BytesIO(manifest))
                    for m in sorted(members, key=lambda m: m.name):
                        with m.open() as fh:
                            reader = _HashingReader(fh)
                            tar.addfile(_tarinfo(m.name, sizes[m.name]), reader)
                        if reader.digest.hexdigest() != digests[m.name]:
                            raise ArchiveError(f"{m.name} changed while it was being archived")
        sha = hashlib.sha256(tmp.read_bytes()).hexdigest()
    return ArchiveResult(path=output, sha256=sha, members=digests)


def read_members(path: str | os.PathLike[str], names: Iterable[str]) -> dict[str, bytes]:
    """The bytes of the named regular members of an archive (those it holds)."""
    wanted, out = set(names), {}
    with tarfile.open(path, mode="r:gz") as tar:
        for info in tar:
            if info.name in wanted and info.isreg():
                fh = tar.extractfile(info)
                assert fh is not None
                out[info.name] = fh.read()
    return out


def verify_archive(path: str | os.PathLike[str]) -> VerifyResult:
    """Recompute every member's SHA-256 and compare with the archive's ``MANIFEST``."""
    problems: list[str] = []
    actual: dict[str, str] = {}
    duplicates: set[str] = set()
    extra_kinds: list[str] = []
    manifest_data: bytes | None = None
    try:
        with tarfile.open(path, mode="r:gz") as tar:
            for info in tar:
                name = info.name
                try:
                    _check_name(name)
                except ArchiveError:
                    problems.append(f"unsafe member name {name!r}")
                if not info.isreg():
                    extra_kinds.append(f"{name} (not a regular file)")
                    continue
                fh = tar.extractfile(info)
                assert fh is not None
                if name == MANIFEST_NAME:
                    if manifest_data is not None:
                        duplicates.add(name)
                    manifest_data = fh.read()
                    continue
                digest = hashlib.sha256()
                while chunk := fh.read(_CHUNK):
                    digest.update(chunk)
                if name in actual:
                    duplicates.add(name)
                actual[name] = digest.hexdigest()
    except (tarfile.TarError, OSError, EOFError, gzip.BadGzipFile) as exc:
        problems.append(f"the archive is unreadable: {exc}")
        return VerifyResult(n_checked=len(actual), problems=tuple(problems))
    if manifest_data is None:
        problems.append(f"the archive has no {MANIFEST_NAME}")
        return VerifyResult(
            n_checked=len(actual),
            extra=tuple(sorted(actual)) + tuple(extra_kinds),
            problems=tuple(problems),
        )
    expected, manifest_problems = parse_manifest(manifest_data)
    problems += manifest_problems
    return VerifyResult(
        digests=actual,
        n_checked=len(actual),
        missing=tuple(sorted(set(expected) - set(actual))),
        extra=tuple(sorted(set(actual) - set(expected))) + tuple(extra_kinds),
        changed=tuple(
            (n, expected[n], actual[n])
            for n in sorted(set(expected) & set(actual))
            if expected[n] != actual[n]
        ),
        duplicates=tuple(sorted(duplicates)),
        problems=tuple(problems),
    )
