"""Synthetic runs with known sources of noise, shared by the attribution tests.

Imported by the tests as ``attribution_synth`` (pytest puts this folder on ``sys.path``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

RUN_START = pd.Timestamp("2025-01-01 08:00", tz="UTC")


@dataclass(frozen=True)
class SyntheticRun:
    """A trial table and the truth it was drawn from.

    ``prob`` is each row's success probability,
    p = p_task + δ_block + γ_task×block + η_host (before infra outcomes), so the balanced
    design's variance components are known exactly; ``flaky`` are the tasks given a
    task × block effect γ, ``infra_tasks`` those given concentrated infra outcomes.
    """

    trials: pd.DataFrame
    prob: np.ndarray
    task: np.ndarray
    block: np.ndarray
    host: np.ndarray
    n_tasks: int
    n_blocks: int
    per_cell: int
    n_hosts: int
    flaky: tuple[str, ...]
    infra_tasks: tuple[str, ...]


def make_run(
    *,
    n_tasks: int = 60,
    n_blocks: int = 4,
    per_cell: int = 4,
    n_hosts: int = 4,
    block_effects: tuple[float, ...] = (0.12, 0.04, -0.04, -0.12),
    host_effects: tuple[float, ...] = (0.06, 0.02, -0.02, -0.06),
    n_flaky: int = 6,
    flaky_effect: float = 0.3,
    infra_tasks: int = 0,
    infra_rate: float = 0.6,
    background_infra: float = 0.0,
    seed: int = 0,
) -> SyntheticRun:
    """A balanced run: every task runs ``per_cell`` trials in each time block, one per host
    in turn, blocks one after another in time (trial order shuffled within a block)."""
    rng = np.random.default_rng(seed)
    assert per_cell % n_hosts == 0 and len(block_effects) == n_blocks
    assert len(host_effects) == n_hosts
    p_task = rng.uniform(0.2, 0.8, n_tasks)
    gamma = np.zeros((n_tasks, n_blocks))
    p_task[:n_flaky] = 0.5
    gamma[:n_flaky] = np.where(np.arange(n_blocks) < n_blocks / 2, flaky_effect, -flaky_effect)
    n_trials = n_blocks * per_cell
    task = np.repeat(np.arange(n_tasks), n_trials)
    trial = np.tile(np.arange(n_trials), n_tasks)
    block = trial // per_cell
    host = trial % n_hosts
    prob = (
        p_task[task]
        + np.asarray(block_effects)[block]
        + gamma[task, block]
        + np.asarray(host_effects)[host]
    )
    assert prob.min() >= 0 and prob.max() <= 1
    correct = rng.random(prob.size) < prob
    # start order: block by block, shuffled within a block; one start every 30 s
    order = np.lexsort((rng.random(prob.size), block))
    position = np.empty(prob.size, dtype=np.int64)
    position[order] = np.arange(prob.size)
    started = RUN_START + pd.to_timedelta(position * 30, unit="s")
    status = np.full(prob.size, "ok", dtype=object)
    infra_p = np.full(prob.size, background_infra)
    infra_ids = np.arange(n_flaky, n_flaky + infra_tasks)
    infra_p[np.isin(task, infra_ids)] = infra_rate
    infra = rng.random(prob.size) < infra_p
    status[infra] = rng.choice(["oom_killed", "timeout", "infra_error"], size=int(infra.sum()))
    names = np.array([f"task-{i:03d}" for i in range(n_tasks)])
    score = np.where(infra, np.nan, correct.astype(float))
    trials = pd.DataFrame(
        {
            "agent": "agent-a",
            "resource_profile": "1x",
            "task_id": names[task],
            "trial": trial,
            "attempt": 1,
            "seed": rng.integers(0, 2**31, prob.size),
            "status": status,
            "exit_code": np.where(infra, 137, 0),
            "started_at": started,
            "ended_at": started + pd.Timedelta(seconds=25),
            "host": np.array([f"host-{h}" for h in range(n_hosts)])[host],
            "score": score,
            "correct": pd.array(np.where(infra, None, correct), dtype="boolean"),
        }
    )
    return SyntheticRun(
        trials=trials,
        prob=prob,
        task=task,
        block=block,
        host=host,
        n_tasks=n_tasks,
        n_blocks=n_blocks,
        per_cell=per_cell,
        n_hosts=n_hosts,
        flaky=tuple(names[:n_flaky]),
        infra_tasks=tuple(names[infra_ids]),
    )


def balanced_anova(values: np.ndarray, run: SyntheticRun) -> dict[str, float]:
    """Textbook mean squares of a balanced task × block design with crossed hosts.

    Rows are ordered task-major, then trial (so ``values.reshape(G, B, n)`` is the design);
    every host appears equally often in every task × block cell.
    """
    g, b, n, h = run.n_tasks, run.n_blocks, run.per_cell, run.n_hosts
    y = values.reshape(g, b, n)
    grand = y.mean()
    mt, mb, mc = y.mean(axis=(1, 2)), y.mean(axis=(0, 2)), y.mean(axis=2)
    mh = np.array([values[run.host == k].mean() for k in range(h)])
    ms = {
        "task": n * b * np.sum((mt - grand) ** 2) / (g - 1),
        "time_block": n * g * np.sum((mb - grand) ** 2) / (b - 1),
        "task:time_block": n
        * np.sum((mc - mt[:, None] - mb[None, :] + grand) ** 2)
        / ((g - 1) * (b - 1)),
        "host": (values.size / h) * np.sum((mh - grand) ** 2) / (h - 1),
    }
    ss_within = np.sum((y - mc[:, :, None]) ** 2)
    ss_host = ms["host"] * (h - 1)
    ms["residual"] = (ss_within - ss_host) / (g * b * (n - 1) - (h - 1))
    return ms


def anova_components(ms: dict[str, float], run: SyntheticRun) -> dict[str, float]:
    """EMS solutions of the balanced random model (Searle, Casella and McCulloch 1992)."""
    g, b, n = run.n_tasks, run.n_blocks, run.per_cell
    return {
        "task": (ms["task"] - ms["task:time_block"]) / (n * b),
        "time_block": (ms["time_block"] - ms["task:time_block"]) / (n * g),
        "host": (ms["host"] - ms["residual"]) / (run.prob.size / run.n_hosts),
        "task:time_block": (ms["task:time_block"] - ms["residual"]) / n,
        "residual": ms["residual"],
    }


def true_components(run: SyntheticRun) -> dict[str, float]:
    """What the estimators target given the drawn effects: the ANOVA components of the
    success probabilities themselves (no noise, so no residual mean square), plus the
    Bernoulli variance mean p(1 − p) as the residual."""
    ms = balanced_anova(run.prob, run)
    ms["residual"] = 0.0
    truth = anova_components(ms, run)
    truth["residual"] = float(np.mean(run.prob * (1 - run.prob)))
    return truth
