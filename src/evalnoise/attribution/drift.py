"""Drift: does success change over the run, within tasks?

Drift: a linear probability model with task fixed effects, y_gi = α_g + β t_gi + e_gi, with t
the start time scaled to [0, 1] over the run, so β is the change in success probability from
the run's first trial to its last within a task. β̂ by within-task demeaning
(Frisch–Waugh–Lovell), SE task-clustered (CR1, G/(G − 1)), Wald t test on G − 1 degrees of
freedom.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from evalnoise.stats._checks import check_probability
from evalnoise.stats._distributions import t_ppf, t_sf
from evalnoise.stats._results import DictResult, renamed

from ._trial_frame import run_seconds

__all__ = ["DriftResult", "drift_test"]


@dataclass(frozen=True)
class DriftResult(DictResult):
    """Linear drift of the score over the run within tasks (see :func:`drift_test`).

    Attributes
    ----------
    slope : β̂, change in mean score from the run's start (t = 0) to its end (t = 1).
    se : task-clustered (CR1) standard error.
    statistic : the Wald t, slope / se; df : G − 1; pvalue : two-sided.
    ci_low, ci_high : slope ∓ t_{df} · se.
    n_obs, n_tasks : trials and tasks used (tasks with one trial carry no information).
    confidence : the CI level.
    warnings : why a field is NaN.
    """

    slope: float
    se: float
    statistic: float
    df: float
    pvalue: float
    ci_low: float
    ci_high: float
    n_obs: int
    n_tasks: int
    confidence: float
    warnings: tuple[str, ...] = field(default=())

    # the names up to 0.1.0, before scipy.stats' vocabulary: deprecated, kept one release
    t = renamed("statistic", "t")
    p = renamed("pvalue", "p")

    def to_frame(self) -> pd.DataFrame:
        d = self.to_dict()
        d.pop("warnings")
        return pd.DataFrame([d])


def drift_test(y: Any, task: Any, time: Any, *, confidence: float = 0.95) -> DriftResult:
    """Within-task linear drift of the scores over the run, with a task-clustered Wald test.

    Model: y_gi = α_g + β·t_gi + e_gi, task fixed effects α_g, t ∈ [0, 1] the start time
    scaled over the run (``(time − min) / (max − min)``). With ỹ, t̃ demeaned within task
    (Frisch–Waugh–Lovell),

        β̂ = Σ t̃ ỹ / Σ t̃²,   V̂ = G/(G − 1) · Σ_g (Σ_i t̃_gi ê_gi)² / (Σ t̃²)²,

    ê = ỹ − β̂ t̃ (Liang–Zeger sandwich clustered by task, CR1 factor G/(G−1) — the fixed
    effects are nested in the clusters and not counted, as Cameron and Miller 2015 advise;
    statsmodels' ``OLS(ỹ, t̃).fit(cov_type="cluster")`` gives the same SE). The Wald
    statistic β̂ / SE is referred to t with G − 1 df.

    β is the change in success probability from the first trial of the run to the last,
    within a task; H0: no linear change. A time-block pattern with a linear component (a
    degrading API over the afternoon) shows up here; one without (a dip mid-run) shows up in
    the time-block variance component instead.

    Parameters
    ----------
    y : scores; task : task labels; time : start times (datetimes or seconds).
    confidence : CI level.
    """
    conf = check_probability(confidence)
    yv = np.asarray(y, dtype=float)
    tv = run_seconds(time)
    codes = pd.factorize(np.asarray(task), sort=True)[0].astype(np.int64)
    if not (yv.shape == tv.shape == codes.shape):
        raise ValueError("y, task and time must have the same length")
    ok = np.isfinite(yv) & np.isfinite(tv)
    yv, tv, codes = yv[ok], tv[ok], codes[ok]
    warnings: list[str] = []
    nan = float("nan")
    span = float(tv.max() - tv.min()) if tv.size else 0.0
    g_all = np.bincount(codes) if codes.size else np.zeros(0, dtype=np.int64)
    n_tasks = int(np.count_nonzero(g_all >= 2))
    if span <= 0:
        warnings.append("every trial started at the same time: no drift can be estimated")
        return DriftResult(
            nan, nan, nan, nan, nan, nan, nan, int(yv.size), n_tasks, conf, tuple(warnings)
        )
    ts = (tv - tv.min()) / span
    cnt = np.bincount(codes).astype(float)
    yd = yv - (np.bincount(codes, weights=yv) / cnt)[codes]
    td = ts - (np.bincount(codes, weights=ts) / cnt)[codes]
    sxx = float(td @ td)
    if sxx <= 0:
        warnings.append("no task has trials at different times: no drift can be estimated")
        return DriftResult(
            nan, nan, nan, nan, nan, nan, nan, int(yv.size), n_tasks, conf, tuple(warnings)
        )
    slope = float(td @ yd / sxx)
    resid = yd - slope * td
    score = np.bincount(codes, weights=td * resid)
    g = int(cnt.size)
    df = float(g - 1)
    if g < 2:
        warnings.append("only one task: the clustered SE has no degrees of freedom")
        se = nan
    else:
        se = float(np.sqrt(g / (g - 1.0) * float(score @ score)) / sxx)
    if np.isfinite(se) and se > 0:
        t = slope / se
        p = float(2 * t_sf(abs(t), df))
        half = float(t_ppf(0.5 + conf / 2, df)) * se
    else:
        t = p = half = nan
        if se == 0:
            warnings.append("the clustered SE is 0 (every residual is 0)")
    return DriftResult(
        slope=slope,
        se=se,
        statistic=float(t),
        df=df,
        pvalue=p,
        ci_low=slope - half,
        ci_high=slope + half,
        n_obs=int(yv.size),
        n_tasks=n_tasks,
        confidence=conf,
        warnings=tuple(warnings),
    )
