"""Outcome tables the infra-policy tests share: one row per attempt of a trial (agent A, profile
1x), as a run without retries and a run with retries (max 3 attempts) record them. The runner's
policy (tests/runner) and the attribution's policy sensitivity (tests/attribution) read the
same trials."""

from __future__ import annotations

import pandas as pd


def table(rows):
    return pd.DataFrame(
        [
            dict(
                agent="A", resource_profile="1x", task_id=t, trial=k, attempt=a, status=s, score=sc
            )
            for t, k, a, s, sc in rows
        ]
    )


# one attempt per trial: what an as_incorrect or exclude run produces
SINGLE = table(
    [
        ("t1", 0, 1, "ok", 1.0),
        ("t1", 1, 1, "agent_error", 0.0),
        ("t2", 0, 1, "oom_killed", None),
        ("t2", 1, 1, "timeout", None),
        ("t3", 0, 1, "infra_error", None),
        ("t3", 1, 1, "ok", 0.0),  # answered, wrongly
    ]
)

# what a retry (max 3 attempts) run produces
RETRIED = table(
    [
        ("t1", 0, 1, "ok", 1.0),
        ("t1", 1, 1, "agent_error", 0.0),
        ("t2", 0, 1, "oom_killed", None),
        ("t2", 0, 2, "ok", 1.0),
        ("t2", 1, 1, "timeout", None),
        ("t2", 1, 2, "timeout", None),
        ("t2", 1, 3, "timeout", None),  # exhausted
        ("t3", 0, 1, "infra_error", None),
        ("t3", 0, 2, "agent_error", 0.0),
        ("t3", 1, 1, "ok", 1.0),
    ]
)

# an imported Harbor job (issue 36): 15 trials of 3 tasks, one attempt each; 9 answered (7
# right), 3 agent failures, 3 whose verifier wrote no reward (verifier_error, score null).
# Every number counts 12 decided trials (7/12 with the failures as 0, 7/9 over the answered);
# the 3 without a verdict are never a 0 (7/15 would be the silent zero).
WITHOUT_VERDICT = table(
    [
        (t, k, 1, s, sc)
        for t in ("t1", "t2", "t3")
        for k, s, sc in (
            (0, "ok", 1.0),
            (1, "ok", 1.0 if t != "t3" else 0.0),
            (2, "ok", 1.0 if t != "t3" else 0.0),
            (3, "agent_error", None),
            (4, "verifier_error", None),
        )
    ]
)
