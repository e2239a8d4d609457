"""Fixtures of the attribution tests."""

from __future__ import annotations

import pytest
from attribution_synth import SyntheticRun, make_run


@pytest.fixture(scope="session")
def noisy_run() -> SyntheticRun:
    """60 tasks × 32 trials: a time effect, 6 flaky tasks, 4 hosts, 2 infra-prone tasks."""
    return make_run(seed=1, per_cell=8, infra_tasks=2, background_infra=0.01)
