"""Fixtures of the runner tests: the real Docker engine, the base image, the test agents.

Tests marked ``docker`` use the engine on /var/run/docker.sock (tools/docker-engine.sh
starts one). They are skipped only when no engine answers *and* ``CI`` is unset; under CI a
missing engine fails them. The base image is built once per session by the same function
``evalnoise image build`` uses (a no-op when it exists; cached root filesystem otherwise).
"""

from __future__ import annotations

import pytest
from runner_helpers import PROBE, SEGV


@pytest.fixture(scope="session")
def base_image(docker_engine) -> str:
    from evalnoise.runner.base_image import build_base_image

    return build_base_image(client=docker_engine)


def _build_test_agent(client, context, name: str, base_image: str) -> str:
    """A test agent built FROM the base image; tag = hash of its context and base."""
    from evalnoise.runner.base_image import build_agent_image, context_digest

    files = [p for p in context.rglob("*") if p.is_file()]
    tag = f"evalnoise-{name}:{context_digest(context, files, prefix=base_image)}"
    build_agent_image(context, tag, base_image, client=client)
    return tag


@pytest.fixture(scope="session")
def probe_image(docker_engine, base_image) -> str:
    """The probe agent (tests/runner/agents/probe) as an image."""
    return _build_test_agent(docker_engine, PROBE, "probe", base_image)


@pytest.fixture(scope="session")
def segv_image(docker_engine, base_image) -> str:
    """The segv agent (tests/runner/agents/segv): dies of SIGSEGV."""
    return _build_test_agent(docker_engine, SEGV, "segv", base_image)


@pytest.fixture(scope="session")
def docker_backend(docker_engine):
    from evalnoise.runner.docker_backend import DockerBackend

    return DockerBackend()


@pytest.fixture(scope="session")
def env_backend(docker_engine, base_image):
    """The environment-trial backend (evalnoise.runner.environment) on the base image."""
    from evalnoise.runner.environment import EnvironmentBackend

    return EnvironmentBackend(base=base_image)
