"""Where a Harbor task's verifier runs: the agent's container (``shared``) or its own.

Harbor 0.25 (``harbor/models/task/config.py``, ``harbor/models/task/verifier_mode.py``):
``[verifier].environment_mode`` is ``"shared"`` (the default) or ``"separate"``; a
``[verifier.environment]`` table implies ``"separate"`` and conflicts with ``"shared"``. In
separate mode the verifier runs in a fresh container whose image is, in this order,
``[verifier.environment].docker_image``, the image built from ``tests/Dockerfile`` (the
``tests/`` folder as its context), or the task's own image; the agent's ``artifacts``
(top-level ``artifacts = [...]``: container paths, or tables with a ``source``) are copied
into it at the same paths. Harbor copies only the declared artifacts; this runner copies the
working directory (``[environment].workdir``, else the image's ``WORKDIR``) when a task
declares none, so a task that leaves its result in its working directory works unchanged.

:func:`read_verifier_setup` reads those keys into a :class:`VerifierSetup`, reporting what
the runner cannot honour through ``problem(where, reason)``: a ``[verifier.environment]``
key other than ``docker_image`` (its own resources, network or build settings), an artifact
collected from another compose service, a relative artifact path.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["MODES", "SHARED", "VerifierSetup", "read_verifier_setup"]

MODES = ("shared", "separate")
TESTS_DOCKERFILE = "tests/Dockerfile"


@dataclass(frozen=True)
class VerifierSetup:
    """How a task's verifier runs (module docstring)."""

    mode: str = "shared"
    #: ``[verifier.environment].docker_image``: the separate verifier's prebuilt image
    docker_image: str | None = None
    #: whether ``tests/Dockerfile`` builds the separate verifier's image
    dockerfile: bool = False
    #: container paths copied from the agent's container into the separate verifier's
    artifacts: tuple[str, ...] = ()

    @property
    def separate(self) -> bool:
        return self.mode == "separate"


SHARED = VerifierSetup()


def _artifacts(value: Any, problem: Callable[[str, str], None]) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list):
        problem("artifacts", "must be a list of paths or {source = ...} tables")
        return ()
    out: list[str] = []
    for i, entry in enumerate(value):
        where = f"artifacts[{i}]"
        if isinstance(entry, Mapping):
            service = entry.get("service")
            if service not in (None, "main"):
                problem(where, f"collected from service {service!r}: compose services are not run")
                continue
            entry = entry.get("source")
        if not isinstance(entry, str) or not entry:
            problem(where, "needs a source path")
            continue
        if not entry.startswith("/"):
            problem(where, f"source {entry!r} must be an absolute container path")
            continue
        if ".." in entry.split("/"):
            problem(where, f"source {entry!r} must not contain '..'")
            continue
        out.append(entry.rstrip("/") or "/")
    return tuple(out)


def read_verifier_setup(
    data: Mapping[str, Any],
    verifier: Mapping[str, Any],
    folder: Path,
    problem: Callable[[str, str], None],
) -> VerifierSetup:
    """The task's :class:`VerifierSetup` from its ``task.toml`` (``data``), its
    ``[verifier]`` table and its folder; problems are reported, never raised."""
    mode = verifier.get("environment_mode")
    environment = verifier.get("environment")
    if mode is not None and mode not in MODES:
        problem("[verifier].environment_mode", "must be 'shared' or 'separate'")
        return SHARED
    if environment is not None and not isinstance(environment, Mapping):
        problem("[verifier.environment]", "must be a table")
        return SHARED
    if mode == "shared" and environment is not None:
        problem(
            "[verifier.environment]",
            'conflicts with environment_mode = "shared" (Harbor rejects it too)',
        )
        return SHARED
    artifacts = _artifacts(data.get("artifacts"), problem)
    if mode != "separate" and environment is None:
        return VerifierSetup(artifacts=artifacts)
    environment = dict(environment or {})
    image = environment.pop("docker_image", None)
    if image is not None and (not isinstance(image, str) or not image):
        problem("[verifier.environment].docker_image", "must be an image name")
        image = None
    for key in sorted(environment):
        problem(
            f"[verifier.environment].{key}",
            "not supported: the separate verifier's container takes the task's settings; "
            "only docker_image may be given",
        )
    return VerifierSetup(
        mode="separate",
        docker_image=image,
        dockerfile=image is None and (folder / TESTS_DOCKERFILE).is_file(),
        artifacts=artifacts,
    )
