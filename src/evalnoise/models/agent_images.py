"""Agent images: the programs in ``agents/`` on the runner's base image, in two deployments.

``http``
    The agent calls a model served from the host (``LlamaServer`` or any OpenAI-compatible
    server on 127.0.0.1); the trial runs with ``network: host``. Image: base + the agent.
``local``
    The model is loaded *inside* the trial container: the image holds llama-cpp-python
    (``pip install --target`` of the portable llama-cpp-python wheel built for the declared
    CPU baseline, see :mod:`evalnoise.models.runtime`, and of its runtime requirements — never
    the host venv's compiled files) and the GGUF; the base image
    supplies ``libgomp1``. The container's memory then depends on the context length
    (``AGENT_N_CTX``) and the conversation, so a tight hard limit really OOM-kills trials.
    Image: base → ``evalnoise-llama-runtime`` → the agent; no network needed.

Every build context is staged in a temporary directory from exactly the files it needs
(the agent, ``agents/common/agentlib.py``, and ``src/evalnoise/models/client.py`` copied as
``evalnoise_client.py``) and every tag is a hash of what went in, so an unchanged agent is
never rebuilt and a changed one always is.

Staging the llama runtime is two ``pip install --target`` runs, paid only to
learn the tag of an image that usually exists. The tag is therefore kept in the user cache
(:func:`evalnoise.user_cache.cache_dir`) under a digest of everything the staged context is
a function of (:func:`llama_runtime_key`): the base image's tag, the portable wheel's and the
model's bytes, the Dockerfile, the pinned requirements, pip's version and configuration, and
the interpreter's platform. A kept tag whose image is gone is staged and built as before.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from evalnoise._checkout import agents_dir
from evalnoise.models.server import default_model_path
from evalnoise.runner.base_image import context_digest, engine_client, image_exists

__all__ = [
    "AGENTS",
    "DEPLOYMENTS",
    "LLAMA_RUNTIME_DISTRIBUTIONS",
    "agent_env",
    "agents_dir",
    "build_agent_images",
    "build_llama_runtime_image",
    "llama_runtime_key",
    "stage_agent_context",
    "stage_llama_runtime_context",
]

AGENTS = ("chat", "tool_agent")
DEPLOYMENTS = ("http", "local")
#: what ``import llama_cpp`` needs at run time (its non-server requirements)
LLAMA_RUNTIME_DISTRIBUTIONS = (
    "llama_cpp_python",
    "numpy",
    "typing_extensions",
    "diskcache",
    "jinja2",
    "MarkupSafe",
)
MODEL_IN_IMAGE = "/opt/models/model.gguf"
SITE_IN_IMAGE = "/opt/llama/site-packages"


def _files(root: Path) -> list[Path]:
    return [p for p in root.rglob("*") if p.is_file()]


# --------------------------------------------------------------------------- staging


def stage_agent_context(agent: str, dest: str | os.PathLike[str]) -> Path:
    """Copy agent ``agent``'s Dockerfile and program, agentlib and the client into ``dest``."""
    if agent not in AGENTS:
        raise ValueError(f"unknown agent {agent!r}; agents: {', '.join(AGENTS)}")
    source = agents_dir()
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    shutil.copy2(source / agent / "Dockerfile", dest / "Dockerfile")
    shutil.copy2(source / agent / "agent.py", dest / "agent.py")
    shutil.copy2(source / "common" / "agentlib.py", dest / "agentlib.py")
    shutil.copy2(Path(__file__).with_name("client.py"), dest / "evalnoise_client.py")
    return dest


def _link_or_copy(source: Path, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.link(source, target)
    except OSError:
        shutil.copy2(source, target)


def stage_llama_runtime_context(
    dest: str | os.PathLike[str],
    *,
    model_path: str | os.PathLike[str] | None = None,
    wheel: str | os.PathLike[str] | None = None,
) -> Path:
    """Stage the llama runtime: ``site-packages/``, ``model.gguf`` and the Dockerfile.

    ``site-packages/`` is a fresh ``pip install --target`` of the *portable* llama-cpp-python
    wheel (:func:`evalnoise.models.runtime.portable_wheel`, built for the declared CPU
    baseline) and of its pure-Python/manylinux runtime requirements at the versions this
    interpreter has. Nothing is copied from the host venv: its compiled files may carry the
    build machine's instruction set.
    """
    from evalnoise.models.runtime import portable_wheel

    dest = Path(dest)
    site = dest / "site-packages"
    site.mkdir(parents=True, exist_ok=True)
    wheel = Path(wheel) if wheel else portable_wheel()
    pip = [sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    pip += ["--no-compile", "--no-warn-script-location", "--target", str(site)]
    requirements = _runtime_requirements()
    subprocess.run([*pip, "--no-deps", str(wheel)], check=True)
    # binary wheels from the index only: never a build on (and for) this machine
    subprocess.run([*pip, "--no-deps", "--only-binary=:all:", *requirements], check=True)
    for junk in site.glob("*.dist-info/direct_url.json"):
        junk.unlink()  # names the wheelhouse path of this machine: not part of the image
    model = Path(model_path) if model_path else default_model_path()
    _link_or_copy(model, dest / "model.gguf")
    shutil.copy2(agents_dir() / "llama_runtime" / "Dockerfile", dest / "Dockerfile")
    return dest


def _runtime_requirements() -> list[str]:
    """The runtime requirements pinned at the versions this interpreter has."""
    return [
        f"{name}=={importlib.metadata.version(name)}" for name in LLAMA_RUNTIME_DISTRIBUTIONS[1:]
    ]


#: pip's configuration files (pip's documented locations; PIP_CONFIG_FILE adds one)
_PIP_CONFIG_FILES = (
    "/etc/pip.conf",
    "/etc/xdg/pip/pip.conf",
    "~/.pip/pip.conf",
    "~/.config/pip/pip.conf",
)


def llama_runtime_key(
    base: str,
    *,
    model_path: str | os.PathLike[str] | None = None,
    wheel: str | os.PathLike[str] | None = None,
) -> str:
    """SHA-256 (hex) of what :func:`stage_llama_runtime_context` on ``base`` is a function of:

        sha256(base ‖ wheel bytes ‖ model bytes ‖ Dockerfile ‖ pinned requirements ‖
               pip version ‖ PIP_* variables ‖ pip configuration files ‖ platform ‖ Python)

    Two equal keys stage the same files, so they name the same image tag. What pip would
    download for a pin is one release file of the index; pip's version, its configuration and
    the platform decide which of a release's files (``manylinux`` tags) it picks.
    """
    from evalnoise.models.runtime import portable_wheel

    digest = hashlib.sha256()

    def part(data: bytes) -> None:
        digest.update(len(data).to_bytes(8, "big") + data)

    def file_part(path: Path) -> None:
        inner = hashlib.sha256()
        with open(path, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                inner.update(block)
        part(inner.digest())

    part(b"evalnoise/llama-runtime-key/v1")
    part(base.encode())
    file_part(Path(wheel) if wheel else portable_wheel())
    file_part(Path(model_path) if model_path else default_model_path())
    file_part(agents_dir() / "llama_runtime" / "Dockerfile")
    part("\n".join(_runtime_requirements()).encode())
    part(importlib.metadata.version("pip").encode())
    part(json.dumps(sorted((k, v) for k, v in os.environ.items() if k.startswith("PIP_"))).encode())
    configs = [*_PIP_CONFIG_FILES, os.path.join(sys.prefix, "pip.conf")]
    configs += [os.environ["PIP_CONFIG_FILE"]] if os.environ.get("PIP_CONFIG_FILE") else []
    for name in configs:
        path = Path(name).expanduser()
        part(path.read_bytes() if path.is_file() else b"-")
    part(json.dumps([sys.version, sys.platform, os.uname().machine, platform.libc_ver()]).encode())
    return digest.hexdigest()


#: The kept tags' file in the user cache: {key: tag}, the newest last.
_TAGS_FILE = "llama-runtime-tags.json"
_TAGS_KEPT = 16


def _kept_tags() -> dict[str, str]:
    from evalnoise.user_cache import cache_dir

    try:
        kept = json.loads((cache_dir() / _TAGS_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(kept, dict):
        return {}
    return {k: v for k, v in kept.items() if isinstance(k, str) and isinstance(v, str)}


def _keep_tag(key: str, tag: str) -> None:
    """Remember ``key`` → ``tag``; best effort (a cache that cannot be written only costs
    the next run the staging)."""
    from evalnoise.atomic import write_text
    from evalnoise.user_cache import cache_dir

    kept = {k: v for k, v in _kept_tags().items() if k != key}
    kept[key] = tag
    kept = dict(list(kept.items())[-_TAGS_KEPT:])
    try:
        cache_dir().mkdir(parents=True, exist_ok=True)
        write_text(cache_dir() / _TAGS_FILE, json.dumps(kept, indent=1) + "\n")
    except OSError:
        pass


# --------------------------------------------------------------------------- building


def build_llama_runtime_image(
    base: str,
    *,
    client: Any = None,
    model_path: str | os.PathLike[str] | None = None,
    context: str | os.PathLike[str] | None = None,
) -> str:
    """``evalnoise-llama-runtime:<hash>`` on ``base``; built only if missing. Returns the tag.

    The tag is :func:`evalnoise.runner.base_image.context_digest` of the staged context. The
    staging (two ``pip install --target`` runs) is skipped when the user cache keeps a
    tag for :func:`llama_runtime_key` and that image exists. ``context`` is one
    :func:`stage_llama_runtime_context` already staged (``model_path`` is then ignored), for
    a caller that stages it anyway and should not pay twice.
    """
    from evalnoise.runner.base_image import build_agent_image

    client = engine_client(client, purpose="building agent images")
    key = None
    if context is None:
        key = llama_runtime_key(base, model_path=model_path)
        kept = _kept_tags().get(key)
        if kept is not None and image_exists(client, kept):
            return kept
    with tempfile.TemporaryDirectory(prefix="evalnoise-llama-ctx-") as tmp:
        if context is None:
            context = stage_llama_runtime_context(tmp, model_path=model_path)
        context = Path(context)
        tag = f"evalnoise-llama-runtime:{context_digest(context, _files(context), prefix=base)}"
        if not image_exists(client, tag):
            build_agent_image(context, tag, base, client=client)
    if key is not None:
        _keep_tag(key, tag)
    return tag


def build_agent_images(
    agents: Iterable[str] = AGENTS,
    *,
    deployment: str = "http",
    base: str | None = None,
    client: Any = None,
    model_path: str | os.PathLike[str] | None = None,
) -> dict[str, str]:
    """Build (if missing) each agent's image for ``deployment``; return agent → tag.

    ``base`` defaults to the runner's base image (built if missing, see
    :func:`evalnoise.runner.base_image.build_base_image`). For ``local`` the agents are built on
    the llama runtime image.
    """
    from evalnoise.runner.base_image import build_agent_image, build_base_image

    if deployment not in DEPLOYMENTS:
        raise ValueError(f"deployment must be one of {DEPLOYMENTS}, not {deployment!r}")
    client = engine_client(client, purpose="building agent images")
    base = base or build_base_image(client=client)
    if deployment == "local":
        base = build_llama_runtime_image(base, client=client, model_path=model_path)
    tags = {}
    for agent in agents:
        with tempfile.TemporaryDirectory(prefix=f"evalnoise-{agent}-ctx-") as tmp:
            context = stage_agent_context(agent, tmp)
            suffix = "" if deployment == "http" else "-local"
            repo = f"evalnoise-agent-{agent.replace('_', '-')}{suffix}"
            tag = f"{repo}:{context_digest(context, _files(context), prefix=base)}"
            if not image_exists(client, tag):
                build_agent_image(context, tag, base, client=client)
            tags[agent] = tag
    return tags


def agent_env(
    deployment: str,
    *,
    base_url: str | None = None,
    model: str | None = None,
    temperature: float = 0.8,
    max_tokens: int = 256,
    max_steps: int = 4,
    n_ctx: int = 2048,
    api_key_env: str | None = None,
) -> dict[str, str]:
    """The ``AGENT_*`` environment of an agent spec for ``deployment``.

    ``http`` needs ``base_url`` and ``model`` (and, for a hosted API, ``api_key_env`` — the
    NAME of the variable; list it in the agent spec's ``secret_env`` too).
    """
    env = {
        "AGENT_TEMPERATURE": repr(float(temperature)),
        "AGENT_MAX_TOKENS": str(int(max_tokens)),
        "AGENT_MAX_STEPS": str(int(max_steps)),
    }
    if deployment == "http":
        if not base_url or not model:
            raise ValueError("the http deployment needs base_url and model")
        env.update({"AGENT_BACKEND": "http", "AGENT_BASE_URL": base_url, "AGENT_MODEL": model})
        if api_key_env:
            env["AGENT_API_KEY_ENV"] = api_key_env
    elif deployment == "local":
        env.update(
            {
                "AGENT_BACKEND": "local",
                "AGENT_MODEL_PATH": MODEL_IN_IMAGE,
                "AGENT_N_CTX": str(int(n_ctx)),
                "AGENT_N_THREADS": "1",
            }
        )
    else:
        raise ValueError(f"deployment must be one of {DEPLOYMENTS}, not {deployment!r}")
    return env


if __name__ == "__main__":  # pragma: no cover - manual use: build everything
    for dep in DEPLOYMENTS:
        print(dep, build_agent_images(deployment=dep), file=sys.stderr)
