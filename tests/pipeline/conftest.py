"""Fixtures of the pipeline tests: the schema, the embedded default config, and the one
finished tiny evaluation of the test run (pipeline_helpers.finished_reference)."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml
from pipeline_helpers import CONFIG_PATH, SCHEMA_PATH, finished_reference, shared_root

from evalnoise.pipeline.settings import load_schema, with_defaults


@pytest.fixture(scope="session")
def schema() -> dict:
    return load_schema(SCHEMA_PATH)


@pytest.fixture(scope="session")
def default_config_raw() -> dict:
    with open(CONFIG_PATH, encoding="utf-8") as handle:
        return yaml.safe_load(handle)


@pytest.fixture
def default_config(default_config_raw, schema) -> dict:
    """The embedded default config with every default filled in (a fresh copy per test)."""
    return with_defaults(copy.deepcopy(default_config_raw), schema)


@pytest.fixture(scope="session")
def tiny_reference(tmp_path_factory, docker_engine) -> Path:
    """The tiny evaluation (pipeline_helpers.TINY_REFERENCE), finished, uninterrupted: made
    once per test run whichever file asks first, shared across pytest-xdist's workers.
    Read it; never change it."""
    return finished_reference(shared_root(tmp_path_factory))
