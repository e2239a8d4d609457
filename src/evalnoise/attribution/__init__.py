"""Where the noise comes from: infrastructure attribution, flaky tasks, time effects.

Pure functions over one group's trial (or score) table — the TRIALS / SCORES columns of
:mod:`evalnoise.schema` — each returning a frozen result with ``to_frame()`` and
``to_dict()``:

- :func:`policy_sensitivity` — accuracy and its CI under each infra policy (as incorrect,
  excluded, retried) and whether the choice moves the result beyond its CI.
- :func:`resource_sensitivity` — per task, one agent under two resource profiles, paired by
  (task, trial): exact McNemar with Benjamini–Hochberg (or Holm) across tasks, and the tasks
  whose memory need sits between the two profiles' limits.
- :func:`flaky_tasks` — tasks whose outcomes vary for reasons other than the agent: infra
  outcomes concentrated on them, success depending on time block or host, a scorer that
  disagrees with itself.
- :func:`time_effects` — task, time-block, host and task × time-block variance components
  (the G study: REML or ANOVA, MLS intervals for their size), the infrastructure share of
  variance (detected by a permutation test of time blocks and hosts within tasks, under the
  share rule of :mod:`evalnoise.stats.shares`), and a within-task drift test;
  :func:`variance_components` and :func:`drift_test` are its array-level parts.

For a whole trial table — any agents, profiles and whichever of timestamps, hosts and
outcomes it carries — :func:`attribution_for_trials` runs all of them and returns
:class:`AttributionTables` (the pipeline's ``attribution`` stage and ``evalnoise analyze``
alike), naming every check that could not run and why; :func:`read_attribution` reads the
stage's files back.

Building blocks: :func:`time_blocks` (equal-count blocks of start times),
:func:`fisher_exact_2xr`, and, re-exported from :mod:`evalnoise.stats`,
:func:`benjamini_hochberg` and :func:`mcnemar_exact_p`.
"""

from evalnoise.attribution._exact_tests import fisher_exact_2xr
from evalnoise.attribution._trial_frame import time_blocks
from evalnoise.attribution.all_analyses import (
    AttributionTables,
    NotRun,
    TrialColumns,
    attribution_for_trials,
    read_attribution,
)
from evalnoise.attribution.drift import DriftResult, drift_test
from evalnoise.attribution.flaky import (
    CHECK_DESCRIPTIONS,
    CHECKS,
    CheckRun,
    FlakyTasksResult,
    flaky_tasks,
)
from evalnoise.attribution.policy_sensitivity import (
    POLICIES,
    PolicySensitivityResult,
    policy_sensitivity,
)
from evalnoise.attribution.resource import ResourceSensitivityResult, resource_sensitivity
from evalnoise.attribution.time_effects import (
    INFRA_COMPONENTS,
    TimeEffectsResult,
    VarianceComponentsResult,
    time_effects,
    variance_components,
)
from evalnoise.stats.paired import benjamini_hochberg, mcnemar_exact_p

__all__ = [
    "CHECKS",
    "CHECK_DESCRIPTIONS",
    "INFRA_COMPONENTS",
    "POLICIES",
    "AttributionTables",
    "CheckRun",
    "DriftResult",
    "FlakyTasksResult",
    "NotRun",
    "PolicySensitivityResult",
    "ResourceSensitivityResult",
    "TimeEffectsResult",
    "TrialColumns",
    "VarianceComponentsResult",
    "attribution_for_trials",
    "benjamini_hochberg",
    "drift_test",
    "fisher_exact_2xr",
    "flaky_tasks",
    "mcnemar_exact_p",
    "policy_sensitivity",
    "read_attribution",
    "resource_sensitivity",
    "time_blocks",
    "time_effects",
    "variance_components",
]
