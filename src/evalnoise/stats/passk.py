"""pass^k (tau-bench) and pass@k (Chen et al. 2021) from repeated trials.

For a task with n trials of which c succeeded:

- pass^k = C(c, k) / C(n, k): the chance that k trials drawn without replacement from the n
  *all* succeed — reliability across repeats (Yao et al. 2024, τ-bench, §"pass^k").
- pass@k = 1 − C(n − c, k) / C(n, k): the chance that *at least one* of k drawn trials
  succeeds, the unbiased estimator of Chen et al. (2021, "Evaluating Large Language Models
  Trained on Code", eq. 1).

Both are averaged over tasks with equal weight, exactly as tau-bench's ``display_metrics``
(``tau_bench/run.py``) averages ``comb(c, k) / comb(n, k)`` over task ids. Both are computed as
running products of ratios in [0, 1], never as binomial coefficients, so nothing overflows for
large n.

Each average is a mean of one unbiased per-task value over independent tasks, so its interval
takes the task as the unit (:mod:`evalnoise.stats._task_intervals`: CR1 SE s(h)/sqrt(N), normal
quantile, truncated to [0, 1]); pass^1 = pass@1 then has exactly the task-clustered interval of
the accuracy of the success indicators.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from evalnoise.stats._checks import check_positive_int, check_probability, finite_scores
from evalnoise.stats._results import DictResult
from evalnoise.stats._task_intervals import task_mean_interval
from evalnoise.stats._tasks import task_sums

__all__ = ["PassKResult", "pass_at_k", "pass_hat_k", "pass_k"]

#: tau-bench counts a trial as a success when its reward is within 1e-6 of 1.
TAU_BENCH_SUCCESS = 1 - 1e-6


@dataclass(frozen=True)
class PassKResult(DictResult):
    """pass^k and pass@k for k = 1..K, per task and averaged over tasks.

    Attributes
    ----------
    k : the k values, 1..K.
    pass_hat : pass^k averaged over tasks, shape (K,).
    pass_at : pass@k averaged over tasks, shape (K,).
    tasks : task labels, in order of first appearance.
    n_trials : n_i, trials per task.
    n_success : c_i, successful trials per task.
    pass_hat_per_task, pass_at_per_task : shape (n_tasks, K).
    success_threshold : a trial succeeded when its score was at least this.
    pass_hat_se, pass_hat_ci_low, pass_hat_ci_high : task-clustered SE and interval of
        ``pass_hat``, shape (K,) (NaN with one task).
    pass_at_se, pass_at_ci_low, pass_at_ci_high : the same for ``pass_at``.
    confidence : the intervals' level.
    """

    k: np.ndarray
    pass_hat: np.ndarray
    pass_at: np.ndarray
    tasks: np.ndarray
    n_trials: np.ndarray
    n_success: np.ndarray
    pass_hat_per_task: np.ndarray
    pass_at_per_task: np.ndarray
    success_threshold: float
    pass_hat_se: np.ndarray
    pass_hat_ci_low: np.ndarray
    pass_hat_ci_high: np.ndarray
    pass_at_se: np.ndarray
    pass_at_ci_low: np.ndarray
    pass_at_ci_high: np.ndarray
    confidence: float


def _counts(n: Any, c: Any, k: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    arrays = [np.asarray(x) for x in (n, c, k)]
    for name, x in zip(("n", "c", "k"), arrays, strict=True):
        if not (np.issubdtype(x.dtype, np.integer) or x.size == 0):
            raise ValueError(f"{name} must be integers")
    n_, c_, k_ = np.broadcast_arrays(*(x.astype(np.int64) for x in arrays))
    if np.any(c_ < 0) or np.any(c_ > n_):
        raise ValueError("need 0 <= c <= n")
    if np.any(k_ < 1) or np.any(k_ > n_):
        raise ValueError("need 1 <= k <= n")
    return n_, c_, k_


def _running_products(n: np.ndarray, m: np.ndarray, k_max: int) -> np.ndarray:
    """Π_{j<k} (m − j)/(n − j) for k = 1..k_max along a new last axis: C(m, k) / C(n, k).

    Factors whose numerator would go negative are 0, which makes the product exactly 0 once
    k > m, as C(m, k) = 0 requires; denominators are only used where j < k <= n.
    """
    j = np.arange(k_max)
    num = np.clip(m[..., None] - j, 0, None).astype(float)
    den = np.maximum(n[..., None] - j, 1).astype(float)
    return np.cumprod(num / den, axis=-1)


def _at_k(n: np.ndarray, m: np.ndarray, k: np.ndarray) -> np.ndarray:
    if n.size == 0:
        return np.zeros(n.shape)
    table = _running_products(n, m, int(k.max()))
    return np.take_along_axis(table, (k - 1)[..., None], axis=-1)[..., 0]


def pass_hat_k(n: Any, c: Any, k: Any) -> np.ndarray:
    """Per-task pass^k = C(c, k) / C(n, k) (τ-bench), broadcasting over n, c and k.

    Parameters
    ----------
    n : trials per task.
    c : successes per task, 0 <= c <= n.
    k : 1 <= k <= n.

    Returns
    -------
    ndarray of float, the broadcast shape of the inputs.
    """
    n_, c_, k_ = _counts(n, c, k)
    return _at_k(n_, c_, k_)


def pass_at_k(n: Any, c: Any, k: Any) -> np.ndarray:
    """Per-task unbiased pass@k = 1 − C(n − c, k) / C(n, k) (Chen et al. 2021, eq. 1).

    Computed as 1 − Π_{j<k} (n − c − j)/(n − j), the stable product form of the same ratio.
    Arguments as :func:`pass_hat_k`.
    """
    n_, c_, k_ = _counts(n, c, k)
    return 1.0 - _at_k(n_, n_ - c_, k_)


def pass_k(
    scores: Any,
    tasks: Any,
    *,
    k_max: int | None = None,
    success_threshold: float = TAU_BENCH_SUCCESS,
    confidence: float = 0.95,
) -> PassKResult:
    """pass^k and pass@k for k = 1..K from a long (task, score) table.

    A trial succeeds when its score is at least ``success_threshold`` (by default tau-bench's
    rule, reward within 1e-6 of 1, so partial credit counts as failure). Per task i with n_i
    trials and c_i successes the estimators are those of :func:`pass_hat_k` and
    :func:`pass_at_k`; the overall values are their unweighted means over tasks,

        pass^k = (1/N) Σ_i C(c_i, k) / C(n_i, k),

    which is tau-bench's ``display_metrics`` when every task has the same number of trials
    (tau-bench divides by C(num_trials, k) with num_trials the number of distinct trial
    indices; we use each task's own n_i, which is the unbiased choice when counts differ).

    Parameters
    ----------
    scores : one score per trial.
    tasks : the task label of each trial.
    k_max : K; default and maximum is the smallest n_i, so every task supports every k.
    success_threshold : minimum score of a successful trial.
    confidence : level of the task-clustered intervals (module docstring).

    Returns
    -------
    PassKResult
        pass^1 = pass@1 = the mean over tasks of the per-task success rate; pass^k is
        non-increasing and pass@k non-decreasing in k.
    """
    conf = check_probability(confidence)
    y = finite_scores(scores, "scores")
    if y.size == 0:
        raise ValueError("scores must be a non-empty 1-D array")
    ts = task_sums((y >= success_threshold).astype(float), np.asarray(tasks))
    n = ts.count.astype(np.int64)
    c = np.rint(ts.total).astype(np.int64)
    smallest = int(n.min())
    if k_max is None:
        k_max = smallest
    k_max = check_positive_int(k_max, "k_max")
    if k_max > smallest:
        raise ValueError(
            f"k_max = {k_max} exceeds the fewest trials on any task ({smallest}); pass^k "
            "needs at least k trials on every task"
        )
    hat = _running_products(n, c, int(k_max))
    at = 1.0 - _running_products(n, n - c, int(k_max))
    hat_mean, hat_se, hat_lo, hat_hi = task_mean_interval(hat, conf)
    at_mean, at_se, at_lo, at_hi = task_mean_interval(at, conf)
    return PassKResult(
        k=np.arange(1, int(k_max) + 1),
        pass_hat=hat_mean,
        pass_at=at_mean,
        tasks=ts.labels,
        n_trials=n,
        n_success=c,
        pass_hat_per_task=hat,
        pass_at_per_task=at,
        success_threshold=float(success_threshold),
        pass_hat_se=hat_se,
        pass_hat_ci_low=hat_lo,
        pass_hat_ci_high=hat_hi,
        pass_at_se=at_se,
        pass_at_ci_low=at_lo,
        pass_at_ci_high=at_hi,
        confidence=conf,
    )
