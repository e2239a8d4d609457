"""The container image of each environment task: built once, offline, cached by content.

A Harbor task names its image in one of two ways (:class:`evalnoise.tasks.harbor_task.HarborTask`):

- ``[environment].docker_image`` — used as it is. Nothing is pulled (no registry is
  reachable): the image must already be in the engine, or the task's trials are
  ``infra_error``.
- ``environment/Dockerfile`` — built by :func:`ensure_task_image` with the folder as its
  build context. The tag is ``evalnoise-task-<task name>:<digest>`` where the digest is
  :func:`evalnoise.runner.base_image.context_digest` of every file of the context, prefixed with
  the base image's *id* and the build arguments: a changed file, a rebuilt base or another
  build argument gives a new tag (and a build); an existing tag is a cache hit (no build).
  Builds never pull and their ``RUN`` steps have no network. Each build is limited to the
  task's ``build_timeout_sec``: the build runs in a child process (:mod:`._build_worker`)
  that is killed at the deadline, which closes its connection so the engine cancels the
  build.

**Pointing a task set at a base image.** Example tasks start with ``ARG BASE`` /
``FROM ${BASE}``; the build argument ``BASE`` is the project's base image
(``evalnoise-base:<hash>``, :func:`evalnoise.runner.base_image.build_base_image`) unless the
caller passes its own: ``ensure_task_image(task, base="my-image:tag")`` (or
``build_args={"BASE": ...}``, which wins) builds every task of the set on that image
instead. A Dockerfile that names its own local image in ``FROM`` ignores ``BASE``.

A failed build never raises: :class:`TaskImage` carries ``ok=False``, the reason and the tail
of the build log; the caller records the task's trials as ``infra_error`` with it.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import selectors
import subprocess
import sys
import threading
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from evalnoise.runner.base_image import build_lock, context_digest, engine_client
from evalnoise.runner.contract import tail
from evalnoise.tasks.harbor_task import HarborTask
from evalnoise.user_cache import cache_dir as default_cache_dir

TASK_IMAGE_REPOSITORY = "evalnoise-task"
#: Bytes of the build log kept in a failed :class:`TaskImage` (and so in the trial rows).
BUILD_LOG_TAIL_BYTES = 2000
_REPO_CHARS = re.compile(r"[^a-z0-9._-]+")


@dataclass(frozen=True)
class TaskImage:
    """The image a task's trials run in, or why there is none.

    ``tag`` is what containers are created from; ``image_id`` the engine's id of it;
    ``built`` whether this call built it (False: cached, or a prebuilt ``docker_image``);
    ``source`` is ``"dockerfile"`` or ``"docker_image"``; ``user`` the image's configured
    ``USER`` (None: root). When ``ok`` is False, ``error``
    says why and ``log_tail`` holds the end of the build log (None if no build ran).
    """

    task: str
    ok: bool
    tag: str | None
    image_id: str | None = None
    source: str = "dockerfile"
    built: bool = False
    duration_s: float = 0.0
    error: str | None = None
    log_tail: str | None = None
    user: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def failure_text(self) -> str:
        """One error text for a trial row: the reason, then the build log's tail."""
        text = self.error or "no image"
        return f"{text}\n--- build log (tail) ---\n{self.log_tail}" if self.log_tail else text


def repository_name(task_name: str) -> str:
    """``evalnoise-task-<name>``: the task's name lower-cased, every run of characters a
    repository name cannot hold replaced by ``-`` (``acme/Hello World`` →
    ``evalnoise-task-acme-hello-world``), at most 100 characters."""
    slug = _REPO_CHARS.sub("-", task_name.lower()).strip("-._") or "task"
    return f"{TASK_IMAGE_REPOSITORY}-{slug}"[:100].rstrip("-._")


def _context_files(context: Path) -> list[Path]:
    return sorted(p for p in context.rglob("*") if p.is_file() or p.is_symlink())


def task_image_tag(task: HarborTask, base_id: str, build_args: Mapping[str, str]) -> str:
    """The tag of ``task``'s image built on the base image ``base_id`` with ``build_args``::

    repository_name(task) : context_digest(environment/, prefix = base_id ‖ NUL ‖
                                           canonical JSON of build_args)
    """
    if task.build_context is None:
        raise ValueError(f"task {task.name!r} has no build context (it names a docker_image)")
    prefix = base_id + "\0" + json.dumps(dict(build_args), sort_keys=True, separators=(",", ":"))
    digest = context_digest(task.build_context, _context_files(task.build_context), prefix=prefix)
    return f"{repository_name(task.name)}:{digest}"


def _image(client: Any, ref: str) -> Any:
    import docker.errors

    try:
        return client.images.get(ref)
    except docker.errors.ImageNotFound:
        return None


def _image_id(client: Any, ref: str) -> str | None:
    image = _image(client, ref)
    return None if image is None else image.id


def _found(task: HarborTask, image: Any, ref: str, **fields: Any) -> TaskImage:
    """A usable :class:`TaskImage` of the engine's ``image`` (with its configured user)."""
    user = (image.attrs.get("Config") or {}).get("User") or None
    return TaskImage(task.name, True, ref, image.id, user=user, **fields)


def _run_build(
    context: Path,
    tag: str,
    build_args: Mapping[str, str],
    labels: Mapping[str, str],
    timeout_s: float,
) -> tuple[bool, str, str | None]:
    """Build in a child process, killed at ``timeout_s``: ``(ok, log, error)``.

    The child (:mod:`evalnoise.runner._build_worker`) streams the engine's build log to its
    stdout and exits 0 only when the image was built.
    """
    request = json.dumps(
        {"context": str(context), "tag": tag, "buildargs": dict(build_args), "labels": dict(labels)}
    )
    child = subprocess.Popen(
        [sys.executable, "-m", "evalnoise.runner._build_worker", request],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    chunks: list[bytes] = []
    kept = 0
    deadline = time.monotonic() + timeout_s
    timed_out = False
    with selectors.DefaultSelector() as selector:
        selector.register(child.stdout, selectors.EVENT_READ)
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                timed_out = True
                break
            if not selector.select(timeout=min(left, 1.0)):
                continue
            data = os.read(child.stdout.fileno(), 65536)
            if not data:
                break
            chunks.append(data)
            kept += len(data)
            while kept > 4 * BUILD_LOG_TAIL_BYTES and len(chunks) > 1:
                kept -= len(chunks.pop(0))
    if timed_out:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(child.pid, 9)
    child.wait()
    child.stdout.close()
    log = b"".join(chunks).decode("utf-8", "replace")
    if timed_out:
        return False, log, f"build of {tag} exceeded build_timeout_sec ({timeout_s:g} s)"
    if child.returncode != 0:
        return False, log, f"build of {tag} failed (worker exit {child.returncode})"
    return True, log, None


def ensure_task_image(
    task: HarborTask,
    *,
    base: str | None = None,
    build_args: Mapping[str, str] | None = None,
    client: Any = None,
    cache_dir: str | os.PathLike[str] | None = None,
    timeout_s: float | None = None,
) -> TaskImage:
    """The image of ``task``'s trials: its ``docker_image`` if it names one (it must exist
    in the engine), else its Dockerfile's image, built unless its tag exists.

    ``base`` is the ``BASE`` build argument (default: the project's base image, built if
    missing); ``build_args`` are more build arguments (a ``BASE`` there wins). ``timeout_s``
    overrides the task's ``build_timeout_sec``. Never raises for a missing image or a
    failed or slow build: the result says so (``ok=False``).
    """
    import docker.errors

    started = time.monotonic()
    try:
        client = engine_client(client, purpose="building task images")
        if task.docker_image is not None:
            image = _image(client, task.docker_image)
            if image is None:
                return TaskImage(
                    task.name,
                    False,
                    task.docker_image,
                    source="docker_image",
                    error=f"image {task.docker_image!r} ([environment].docker_image) is not in "
                    "the engine, and nothing can be pulled here",
                )
            return _found(task, image, task.docker_image, source="docker_image")
        args = dict(build_args or {})
        if "BASE" not in args:
            if base is None:
                from evalnoise.runner.base_image import build_base_image

                base = build_base_image(client=client)
            args["BASE"] = base
        base_id = _image_id(client, args["BASE"])
        if base_id is None:
            return TaskImage(
                task.name,
                False,
                None,
                error=f"base image {args['BASE']!r} (build argument BASE) is not in the engine",
            )
        tag = task_image_tag(task, base_id, args)
        cache = Path(cache_dir or default_cache_dir()) / "task-images"
        with build_lock(cache / f"{tag.replace(':', '_').replace('/', '_')}.lock"):
            existing = _image(client, tag)
            if existing is not None:
                return _found(task, existing, tag)
            labels = {
                "evalnoise.task": task.name,
                "evalnoise.task.digest": task.digest,
                "evalnoise.base": args["BASE"],
            }
            limit = float(timeout_s if timeout_s is not None else task.build_timeout_s)
            ok, log, error = _run_build(task.build_context, tag, args, labels, limit)
            built = _image(client, tag) if ok else None
            if ok and built is None:
                ok, error = False, f"the build reported success but {tag} is not in the engine"
            if ok:
                return _found(task, built, tag, built=True, duration_s=time.monotonic() - started)
            return TaskImage(
                task.name,
                False,
                tag,
                duration_s=time.monotonic() - started,
                error=error,
                log_tail=tail(log, BUILD_LOG_TAIL_BYTES),
            )
    except (docker.errors.DockerException, OSError, RuntimeError, LookupError) as exc:
        return TaskImage(
            task.name,
            False,
            None,
            duration_s=time.monotonic() - started,
            error=f"image of task {task.name!r}: {type(exc).__name__}: {exc}"[:1000],
        )


class TaskImageCache:
    """:func:`ensure_task_image` once per task digest for the life of one runner (a shard):
    concurrent trials of a task wait for one build; a failure is remembered, so every trial
    of the task gets the same ``infra_error`` without building again."""

    def __init__(self, **options: Any) -> None:
        self._options = options
        self._lock = threading.Lock()
        self._results: dict[str, TaskImage] = {}
        self._pending: dict[str, threading.Lock] = {}

    def get(self, task: HarborTask) -> TaskImage:
        """The task's image: built or found on the first call, remembered after it."""
        with self._lock:
            if task.digest in self._results:
                return self._results[task.digest]
            gate = self._pending.setdefault(task.digest, threading.Lock())
        with gate:
            with self._lock:
                if task.digest in self._results:
                    return self._results[task.digest]
            result = ensure_task_image(task, **self._options)
            with self._lock:
                self._results[task.digest] = result
            return result
