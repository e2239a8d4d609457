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
"""

from __future__ import annotations

import importlib.metadata
import os
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
    requirements = [
        f"{name}=={importlib.metadata.version(name)}" for name in LLAMA_RUNTIME_DISTRIBUTIONS[1:]
    ]
    subprocess.run([*pip, "--no-deps", str(wheel)], check=True)
    # binary wheels from the index only: never a build on (and for) this machine
    subprocess.run([*pip, "--no-deps", "--only-binary=:all:", *requirements], check=True)
    for junk in site.glob("*.dist-info/direct_url.json"):
        junk.unlink()  # names the wheelhouse path of this machine: not part of the image
    model = Path(model_path) if model_path else default_model_path()
    _link_or_copy(model, dest / "model.gguf")
    shutil.copy2(agents_dir() / "llama_runtime" / "Dockerfile", dest / "Dockerfile")
    return dest


# --------------------------------------------------------------------------- building


def build_llama_runtime_image(
    base: str,
    *,
    client: Any = None,
    model_path: str | os.PathLike[str] | None = None,
    context: str | os.PathLike[str] | None = None,
) -> str:
    """``evalnoise-llama-runtime:<hash>`` on ``base``; built only if missing. Returns the tag.

    The tag is :func:`evalnoise.runner.base_image.context_digest` of the staged context, so the
    context is staged even when the image exists (two ``pip install --target`` runs, ~10 s);
    ``context`` is one :func:`stage_llama_runtime_context` already staged (``model_path`` is
    then ignored), for a caller that stages it anyway and should not pay twice.
    """
    from evalnoise.runner.base_image import build_agent_image

    client = engine_client(client, purpose="building agent images")
    with tempfile.TemporaryDirectory(prefix="evalnoise-llama-ctx-") as tmp:
        if context is None:
            context = stage_llama_runtime_context(tmp, model_path=model_path)
        context = Path(context)
        tag = f"evalnoise-llama-runtime:{context_digest(context, _files(context), prefix=base)}"
        if not image_exists(client, tag):
            build_agent_image(context, tag, base, client=client)
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
