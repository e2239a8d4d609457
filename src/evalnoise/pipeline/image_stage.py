"""The ``build_image`` stage: the image each configured agent's trials run in, built offline
when needed. It chooses and records the image; the builders are
:mod:`evalnoise.runner.base_image` (the base image, a ``build: DIR`` on it) and
:mod:`evalnoise.models.agent_images` (this project's agent programs).

- ``program: chat | tool_agent`` — this project's agents, built by
  :func:`evalnoise.models.agent_images.build_agent_images` on the base image: deployment
  ``http`` (model served from the host) unless ``model: image`` asks for ``local`` (llama.cpp
  and the model inside the image). Tags are hashes of what went into the image.
- ``build: DIR`` — ``docker build DIR`` on the base image, tagged
  ``evalnoise-agent-<name>:<hash>`` where the hash covers the base image tag and every file
  of the context (:func:`evalnoise.pipeline.settings.agent_image_tag`).
- ``image: base`` — the evalnoise base image itself; ``image: NAME`` — a ready image.
- the ``local`` backend runs commands on the host: no image.
- ``program: oracle | nop | shell_agent`` — agents of environment tasks: no image of their
  own (they work in each task's image, built ``FROM`` the base image); the record names
  the base.
- ``harbor: {agent: …}`` — Harbor's agent class, run by the bridge
  (``agents/harbor_agent/bridge.py``) in Harbor's Python: no image either; the record's
  ``host:<hash>`` covers the bridge and :data:`HARBOR_VERSION`.

The same inputs give the same tag on every machine, so the tag — part of every trial's
identity in its shard's journal — does not change when an image is rebuilt elsewhere; the
engine's image id is recorded beside it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from evalnoise._checkout import agents_dir
from evalnoise.pipeline.settings import (
    BUILTIN_PROGRAMS,
    HOST_PROGRAMS,
    agent_image_tag,
    context_files,
)

__all__ = ["HARBOR_VERSION", "ensure_image", "image_inputs", "image_params"]

#: the Harbor release the bridge is written for (tools/install-harbor.sh installs it)
HARBOR_VERSION = "0.25.0"
#: the inspect_ai release the Inspect adapter is written for (the `inspect` extra)
INSPECT_VERSION = "0.3.285"

#: the model client every agent program's image holds (:mod:`evalnoise.models.client`,
#: copied in by :mod:`evalnoise.models.agent_images`): named by its path, so listing an
#: image's inputs while Snakemake builds the DAG imports no model code
CLIENT_FILE = Path(__file__).parent.parent / "models" / "client.py"


def _relative(path: Path) -> str:
    """``path`` relative to the working directory when inside it (stable params)."""
    try:
        return path.resolve().relative_to(Path.cwd().resolve()).as_posix()
    except ValueError:
        return str(path.resolve())


def _program_files(program: str, local: bool) -> list[Path]:
    root = agents_dir()
    files = [
        root / program / "Dockerfile",
        root / program / "agent.py",
        root / "common" / "agentlib.py",
        CLIENT_FILE,
    ]
    if local:
        files.append(root / "llama_runtime" / "Dockerfile")
    return files


def _host_program_files(program: str) -> list[Path]:
    """The files of an agent program that runs on the host (the exec protocol)."""
    root = agents_dir()
    return [root / program / "agent.py", root / "common" / "agentlib.py", CLIENT_FILE]


def _adapter_files(agent: Mapping[str, Any]) -> list[Path]:
    """The adapter that runs a Harbor agent (``agents.<name>.harbor``, in Harbor's Python)
    or an Inspect agent (``.inspect``)."""
    root = agents_dir()
    program = root / ("harbor_agent/bridge.py" if agent.get("harbor") else "inspect_agent/agent.py")
    return [program, root / "common" / "exec_channel.py"]


def image_inputs(config: Mapping[str, Any], name: str) -> list[str]:
    """The files whose change changes agent ``name``'s image."""
    agent = config["agents"][name]
    if config["backend"] == "local" or agent["program"] in BUILTIN_PROGRAMS:
        return []
    if agent["program"] in HOST_PROGRAMS:
        return [_relative(p) for p in _host_program_files(agent["program"])]
    if agent.get("harbor") or agent.get("inspect"):
        return [_relative(p) for p in _adapter_files(agent)]
    if agent["program"]:
        return [_relative(p) for p in _program_files(agent["program"], agent["model"] == "image")]
    if agent["build"]:
        return [str(p) for p in context_files(agent["build"])]
    return []


def image_params(config: Mapping[str, Any], name: str) -> dict[str, Any]:
    """What else an image depends on: the base image's inputs and how it is made."""
    if config["backend"] == "local":
        return {"backend": "local"}
    from evalnoise.runner.base_image import base_image_tag

    agent = config["agents"][name]
    out = {
        "base": base_image_tag(),
        "program": agent["program"],
        **({"harbor": HARBOR_VERSION} if agent.get("harbor") else {}),
        **({"inspect": INSPECT_VERSION} if agent.get("inspect") else {}),
        "build": agent["build"],
        "image": agent["image"],
    }
    if agent["program"] and agent["model"] == "image":
        out["model_path"] = config["model_server"]["model_path"]
    return out


def ensure_image(config: Mapping[str, Any], name: str) -> dict[str, Any]:
    """Make sure agent ``name``'s image exists in the engine (building it if needed); return
    ``{"agent", "image", "id", "base"}`` (image and id None for the local backend)."""
    if config["backend"] == "local":
        return {"agent": name, "image": None, "id": None, "base": None}
    from evalnoise.runner.base_image import (
        build_agent_image,
        build_base_image,
        engine_client,
        image_exists,
    )

    agent = config["agents"][name]
    client = engine_client(purpose=f"agent {name!r}'s image")
    try:
        base = build_base_image(client=client)
        if agent["program"] in BUILTIN_PROGRAMS:
            # played by the runner in the task's image (built FROM the base)
            return {"agent": name, "image": None, "id": None, "base": base}
        if agent.get("harbor") or agent.get("inspect"):
            # another harness's agent through its adapter: no image; the adapter's code and
            # the harness's version are its trials' identity, as a host program's code is
            from evalnoise.runner.base_image import context_digest

            files = _adapter_files(agent)
            root = Path(os.path.commonpath([str(p) for p in files]))
            version = (
                f"harbor={HARBOR_VERSION}" if agent.get("harbor") else f"inspect={INSPECT_VERSION}"
            )
            digest = context_digest(root, files, prefix=version + "\n")
            return {"agent": name, "image": f"host:{digest}", "id": None, "base": base}
        if agent["program"] in HOST_PROGRAMS:
            # a host program: no image, but its code is part of its trials' identity (the
            # "image" of the spec, in every shard's journal header)
            from evalnoise.runner.base_image import context_digest

            files = _host_program_files(agent["program"])
            root = Path(os.path.commonpath([str(p) for p in files]))
            digest = context_digest(root, files, prefix=f"host-program={agent['program']}\n")
            return {"agent": name, "image": f"host:{digest}", "id": None, "base": base}
        if agent["program"]:
            from evalnoise.models.agent_images import build_agent_images

            deployment = "local" if agent["model"] == "image" else "http"
            tag = build_agent_images(
                [agent["program"]],
                deployment=deployment,
                base=base,
                client=client,
                model_path=config["model_server"]["model_path"],
            )[agent["program"]]
        elif agent["build"]:
            tag = agent_image_tag(name, agent["build"], base)
            if not image_exists(client, tag):
                build_agent_image(os.fspath(agent["build"]), tag, base, client=client)
        elif agent["image"] == "base":
            tag = base
        else:
            tag = str(agent["image"])
        if not image_exists(client, tag):
            raise LookupError(f"agent {name!r}: image {tag!r} is not in the engine")
        image_id = client.images.get(tag).id
    finally:
        client.close()
    return {"agent": name, "image": tag, "id": image_id, "base": base}
