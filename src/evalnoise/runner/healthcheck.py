"""A task's healthcheck (``[environment].healthcheck``, a step's ``healthcheck``), polled in
the trial's container before the agent starts, as Harbor 0.25's ``run_healthcheck`` does.

Docker HEALTHCHECK's semantics: the command runs (``bash -c``, under ``timeout_sec``) until it
exits 0. During the first ``start_period_sec`` a failure does not count and the next try
comes ``start_interval_sec`` later; after it, each failure counts, and ``retries``
consecutive failures fail the check (Harbor then raises ``HealthcheckError``; here the trial
ends ``infra_error`` in phase ``setup``, the command named). Like Harbor, a counted failure
is retried at once.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

__all__ = ["run_healthcheck"]


def run_healthcheck(box: Any, check: Mapping[str, Any], user: str) -> str | None:
    """Poll ``check`` in ``box`` (a :class:`evalnoise.runner.trial_container.TrialContainer`)
    as ``user``; None once healthy, else the one-line problem."""
    start_end = time.monotonic() + float(check["start_period_sec"])
    failures = 0
    while True:
        in_start = time.monotonic() < start_end
        run = box.run(check["command"], user=user, env=None, timeout_s=float(check["timeout_sec"]))
        if run.exit_code == 0 and not run.timed_out:
            return None
        if in_start:
            time.sleep(float(check["start_interval_sec"]))
            continue
        failures += 1
        if failures >= int(check["retries"]):
            return (
                f"healthcheck failed after {check['retries']} consecutive retries: "
                f"{check['command']}"
            )
