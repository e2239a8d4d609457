"""The base image, and any agent image built on it, offline. (Each environment task's image
is :mod:`evalnoise.runner.task_images`; this project's agent programs are built by
:mod:`evalnoise.models.agent_images`; which image an agent of the config gets is the
pipeline's :mod:`evalnoise.pipeline.image_stage`.)

No image registry is reachable, so nothing is pulled:

- The **base image** ``evalnoise-base:<hash>`` is a Debian root filesystem made by
  ``debootstrap --variant=minbase --include=<packages> <suite> DIR`` and imported with
  ``docker import`` (``tar -C DIR -c . | docker import - evalnoise-base:<hash>``). Its inputs
  live in ``images/base/base.toml`` (suite, variant, package list); the tag is a short hash of
  those inputs plus :data:`BUILD_SCRIPT_VERSION`, so the image is rebuilt only when an input
  changes. The root filesystem tarball is cached (``~/.cache/evalnoise/base/<hash>.tar`` by
  default; ``EVALNOISE_CACHE_DIR`` overrides), so re-importing it after ``docker rmi`` or on a
  fresh engine takes seconds instead of a debootstrap run.
- An **agent image** is ``docker build`` of a context directory whose Dockerfile starts with
  ``ARG BASE`` / ``FROM ${BASE}``; :func:`build_agent_image` passes the base tag as that
  build argument, never pulls, and runs build steps without a network.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import tomllib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from evalnoise._checkout import checkout_path
from evalnoise._extras import require
from evalnoise.user_cache import cache_dir as default_cache_dir

BASE_IMAGE_REPOSITORY = "evalnoise-base"

#: Bump when the build procedure below changes in a way that changes the image.
BUILD_SCRIPT_VERSION = 1

_HASH_CHARS = 12
_INPUTS_ENV = "EVALNOISE_BASE_INPUTS"


@dataclass(frozen=True)
class BaseImageInputs:
    """Everything that decides the content of the base image (the mirror does not)."""

    suite: str
    variant: str
    packages: tuple[str, ...]
    mirror: str = "http://deb.debian.org/debian"

    def identity(self) -> dict[str, Any]:
        """The hashed part: suite, variant, sorted packages, build script version."""
        return {
            "suite": self.suite,
            "variant": self.variant,
            "packages": sorted(set(self.packages)),
            "build_script_version": BUILD_SCRIPT_VERSION,
        }

    def input_hash(self) -> str:
        canonical = json.dumps(self.identity(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(canonical.encode()).hexdigest()[:_HASH_CHARS]

    @property
    def tag(self) -> str:
        return f"{BASE_IMAGE_REPOSITORY}:{self.input_hash()}"


def default_inputs_dir() -> Path:
    """``images/base`` of the evalnoise checkout (``EVALNOISE_BASE_INPUTS`` overrides).

    The inputs stay in the repository (DVC tracks ``images/base`` as a dependency of the
    trials), so an installed package finds them through
    :func:`evalnoise._checkout.checkout_path`, which says how to point at them when there is
    no checkout.
    """
    return checkout_path("images/base", "building the base image", override_env=_INPUTS_ENV)


def load_base_inputs(inputs_dir: str | os.PathLike[str] | None = None) -> BaseImageInputs:
    """Read ``base.toml`` from ``inputs_dir`` (default :func:`default_inputs_dir`)."""
    path = Path(inputs_dir or default_inputs_dir()) / "base.toml"
    try:
        data = tomllib.loads(path.read_text())
    except FileNotFoundError:
        raise FileNotFoundError(
            f"{path}: base image inputs not found (set {_INPUTS_ENV} to the images/base dir)"
        ) from None
    unknown = set(data) - {"suite", "variant", "mirror", "packages"}
    if unknown:
        raise ValueError(f"{path}: unknown keys {sorted(unknown)}")
    packages = data.get("packages", [])
    if not isinstance(packages, list) or not all(isinstance(p, str) and p for p in packages):
        raise ValueError(f"{path}: 'packages' must be a list of package names")
    return BaseImageInputs(
        suite=str(data.get("suite", "bookworm")),
        variant=str(data.get("variant", "minbase")),
        packages=tuple(packages),
        mirror=str(data.get("mirror", BaseImageInputs.mirror)),
    )


def base_image_tag(inputs_dir: str | os.PathLike[str] | None = None) -> str:
    """The tag the current inputs build: ``evalnoise-base:<12 hex chars>``."""
    return load_base_inputs(inputs_dir).tag


@contextlib.contextmanager
def build_lock(path: Path) -> Iterator[None]:
    """An exclusive ``flock`` on the file ``path`` for the block: one build of an image at a
    time across processes (the base image's, a task image's)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def context_digest(root: Path, files: Iterable[Path], *, prefix: str = "") -> str:
    """The tag of an image built from ``files`` under ``root``: the first 12 hex digits of

        sha256(prefix ‖ for each file, sorted: relative POSIX path ‖ NUL ‖ bytes ‖ NUL),

    so a tag changes exactly when an input of the image does (``prefix`` names the other
    inputs, e.g. the base image's tag). Every agent image tag is this digest: a change to
    it renames every image and sets every journal's trials aside (the image is part of a
    trial's identity), so it is pinned by a test."""
    digest = hashlib.sha256(prefix.encode())
    for path in sorted(files):
        digest.update(Path(path).relative_to(root).as_posix().encode() + b"\0")
        with open(path, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
        digest.update(b"\0")
    return digest.hexdigest()[:_HASH_CHARS]


#: Seconds the Docker SDK waits for one engine call: an image build is one call.
ENGINE_TIMEOUT_S = 900


def engine_client(client: Any = None, *, purpose: str = "building container images") -> Any:
    """``client``, or a Docker SDK client from the environment (``DOCKER_HOST`` or the local
    socket) with :data:`ENGINE_TIMEOUT_S`; says which extra to install when the SDK is
    missing (``purpose`` names what needed it)."""
    if client is not None:
        return client
    require("docker", purpose)
    import docker

    return docker.from_env(timeout=ENGINE_TIMEOUT_S)


def image_exists(client: Any, ref: str) -> bool:
    """Whether the engine has the image ``ref`` (a tag or an id)."""
    import docker.errors

    try:
        client.images.get(ref)
    except docker.errors.ImageNotFound:
        return False
    return True


def _debootstrap_tarball(
    inputs: BaseImageInputs, tarball: Path, log: Callable[[str], None]
) -> None:
    """Run debootstrap into a temp dir and write its tar to ``tarball`` atomically."""
    if shutil.which("debootstrap") is None:
        raise RuntimeError("debootstrap is not installed (apt-get install -y debootstrap)")
    work = Path(tempfile.mkdtemp(prefix="evalnoise-rootfs-", dir=tarball.parent))
    rootfs = work / "rootfs"
    try:
        cmd = ["debootstrap", f"--variant={inputs.variant}"]
        if inputs.packages:
            cmd.append("--include=" + ",".join(sorted(set(inputs.packages))))
        cmd += [inputs.suite, str(rootfs), inputs.mirror]
        log(f"building base root filesystem: {' '.join(cmd)}")
        result = subprocess.run(cmd, capture_output=True, text=True)
        if result.returncode != 0:
            tail = (result.stdout + result.stderr)[-2000:]
            raise RuntimeError(f"debootstrap failed (exit {result.returncode}):\n{tail}")
        # Smaller image, same content: downloaded .debs and package lists are not needed.
        for leftover in ("var/cache/apt/archives", "var/lib/apt/lists"):
            for entry in (rootfs / leftover).glob("*"):
                if entry.is_file() and entry.name != "lock":
                    entry.unlink()
        partial = tarball.with_suffix(".tar.partial")
        subprocess.run(
            ["tar", "-C", str(rootfs), "--numeric-owner", "-cf", str(partial), "."], check=True
        )
        with open(partial, "rb") as handle:
            os.fsync(handle.fileno())
        os.replace(partial, tarball)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def build_base_image(
    *,
    client: Any = None,
    inputs_dir: str | os.PathLike[str] | None = None,
    cache_dir: str | os.PathLike[str] | None = None,
    force: bool = False,
    log: Callable[[str], None] | None = None,
) -> str:
    """Make sure ``evalnoise-base:<hash>`` exists in the engine; return the tag.

    A no-op when the tag exists (unless ``force``). Otherwise imports the cached root
    filesystem tarball, creating it with debootstrap first if it is not cached. Concurrent
    callers serialise on a lock in the cache directory.
    """
    log = log or (lambda message: print(f"evalnoise image: {message}", file=sys.stderr))
    inputs = load_base_inputs(inputs_dir)
    tag = inputs.tag
    client = engine_client(client)
    if not force and image_exists(client, tag):
        return tag
    cache = Path(cache_dir or default_cache_dir()) / "base"
    cache.mkdir(parents=True, exist_ok=True)
    digest = inputs.input_hash()
    tarball = cache / f"{digest}.tar"
    with build_lock(cache / f"{digest}.lock"):
        if not force and image_exists(client, tag):
            return tag
        if force and tarball.exists():
            tarball.unlink()
        if not tarball.exists():
            _debootstrap_tarball(inputs, tarball, log)
            (cache / f"{digest}.json").write_text(
                json.dumps({**asdict(inputs), **inputs.identity()}, indent=2, sort_keys=True)
            )
        log(f"importing {tarball} as {tag}")
        repository, _, version = tag.partition(":")
        changes = [
            f"LABEL evalnoise.base.inputs={digest}",
            f"LABEL evalnoise.base.suite={inputs.suite}",
            "ENV LANG=C.UTF-8",
            "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
            'CMD ["python3"]',
        ]
        client.api.import_image_from_file(
            str(tarball), repository=repository, tag=version, changes=changes
        )
        if not image_exists(client, tag):
            raise RuntimeError(f"docker import did not produce {tag}")
    return tag


def build_agent_image(
    context_dir: str | os.PathLike[str],
    tag: str,
    base: str,
    *,
    client: Any = None,
    buildargs: dict[str, str] | None = None,
) -> str:
    """Build an agent image from ``context_dir`` on top of the local ``base``; return its id.

    The Dockerfile must begin with ``ARG BASE`` and ``FROM ${BASE}``. The build never pulls
    (the base must exist locally) and its ``RUN`` steps have no network.
    """
    require("docker", "building container images")
    import docker.errors

    client = engine_client(client)
    context = Path(context_dir)
    if not (context / "Dockerfile").is_file():
        raise FileNotFoundError(f"{context}: no Dockerfile")
    if not image_exists(client, base):
        raise LookupError(f"base image {base!r} is not in the engine (evalnoise image build)")
    try:
        image, _ = client.images.build(
            path=str(context),
            tag=tag,
            buildargs={**(buildargs or {}), "BASE": base},
            labels={"evalnoise.base": base},
            pull=False,
            rm=True,
            forcerm=True,
            network_mode="none",
        )
    except docker.errors.BuildError as exc:
        log = "".join(str(chunk.get("stream", chunk.get("error", ""))) for chunk in exc.build_log)
        raise RuntimeError(f"building {tag} from {context} failed: {exc}\n{log[-2000:]}") from exc
    return image.id
