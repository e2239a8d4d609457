"""Shared inputs of the report tests: the bundled GPQA example run through the analysis."""

from __future__ import annotations

import importlib.util
import sys
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from evalnoise.analysis import analyze_frame, compare_all_pairs, convergence_records, per_task_table
from evalnoise.attribution import AttributionTables, attribution_for_trials
from evalnoise.consistency import reliability_fields
from evalnoise.manifest import build_manifest
from evalnoise.report import CardContext, ReportInputs, build_report
from evalnoise.stats import allocation_table, wilson_interval
from evalnoise.trial_table import Columns, read_trials

NANO = "openai/gpt-5-nano-2025-08-07"
MINI = "openai/gpt-5.4-mini-2026-03-17"


EXAMPLE = Path(str(resources.files("evalnoise") / "data" / "gpqa_diamond_example.csv"))


@pytest.fixture(scope="session")
def example_frame() -> pd.DataFrame:
    return read_trials(str(EXAMPLE), Columns(group="model"))


def _attribution_synth():
    """tests/attribution/attribution_synth.py (pytest puts only this folder on sys.path)."""
    if "attribution_synth" in sys.modules:
        return sys.modules["attribution_synth"]
    path = Path(__file__).parents[1] / "attribution" / "attribution_synth.py"
    spec = importlib.util.spec_from_file_location("attribution_synth", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["attribution_synth"] = module
    spec.loader.exec_module(module)
    return module


#: the tasks the synthetic 1x profile OOM-kills (their need sits between 1x's and 3x's limit)
NEEDY = ("task-002", "task-003", "task-004")
MIB = 2**20


def attribution_trials(agents=(NANO, MINI), seed: int = 3) -> pd.DataFrame:
    """A synthetic run of ``agents`` under 1x and 3x (12 tasks × 16 trials each, 4 time
    blocks, 2 hosts, 2 flaky tasks): under 1x the :data:`NEEDY` tasks are OOM-killed in 90%
    of their trials, and again on the one retry (the limit has not changed); their measured
    peak under 3x (200 MiB) lies between the limits (128 MiB, 384 MiB)."""
    synth = _attribution_synth()
    parts = []
    for i, agent in enumerate(agents):
        for j, profile in enumerate(("1x", "3x")):
            run = synth.make_run(
                n_tasks=12,
                per_cell=4,
                n_hosts=2,
                host_effects=(0.03, -0.03),
                n_flaky=2,
                infra_tasks=3 if profile == "1x" else 0,
                infra_rate=0.9,
                seed=seed + 10 * i + j,
            )
            t = run.trials.assign(agent=agent, resource_profile=profile)
            if profile == "1x":
                t["status"] = np.where(t["status"] == "ok", "ok", "oom_killed")
            needy = t["task_id"].isin(NEEDY)
            t["memory_limit_bytes"] = (128 if profile == "1x" else 384) * MIB
            t["peak_memory_bytes"] = np.where(
                t["status"] == "oom_killed", np.nan, np.where(needy, 200, 64) * MIB
            )
            # container seconds per trial: the D study's cost of a trial
            t["duration_s"] = 2.0 + (np.arange(len(t)) % 5) * 0.5
            retried = t[t["status"] == "oom_killed"].copy()
            retried["attempt"] = 2
            retried["started_at"] = retried["started_at"] + pd.Timedelta(seconds=1)
            parts += [t, retried]
    return pd.concat(parts, ignore_index=True)


@pytest.fixture(scope="session")
def synthetic_attribution() -> AttributionTables:
    """The attribution tables of :func:`attribution_trials` (the pipeline's entry point)."""
    return attribution_for_trials(attribution_trials(), policy="as_incorrect")


@pytest.fixture(scope="session")
def example_inputs(example_frame: pd.DataFrame, synthetic_attribution) -> dict:
    """Every input of build_report, from the example's real trials.

    The example has no resource profiles, so the infra table and the attribution results
    are the synthetic inputs: both agents under "1x" (the cards' profile) and "3x" (chart
    and attribution section only).
    """
    groups = [
        # pass^k and the multiverse as the pipeline records them (the report's pass^k chart
        # and multiverse tables); the example's trials all ran: estimand and SE vary
        {**g, **{k: fields[k] for k in ("pass_k", "multiverse")}}
        for g in analyze_frame(example_frame)
        for frame in [example_frame[example_frame["group"] == g["group"]]]
        for fields in [reliability_fields(frame, frame)]
    ]
    nano = next(g for g in groups if g["group"] == NANO)
    alloc = allocation_table(250, nano["sigma2_between"], nano["sigma2_within"], max_tasks=198)
    budget = pd.DataFrame({"n_tasks": alloc.n_tasks, "trials": alloc.trials, "se": alloc.se})
    infra = pd.DataFrame(
        {
            "resource_profile": ["1x", "1x", "3x", "3x"],
            "agent": [NANO, MINI, NANO, MINI],
            "accuracy": [0.66, 0.60, 0.68, 0.61],
            "ci_low": [0.55, 0.49, 0.57, 0.50],
            "ci_high": [0.77, 0.71, 0.79, 0.72],
            "infra_error_rate": [0.058, 0.04, 0.021, 0.012],
            "infra_ci_low": [0.036, 0.022, 0.01, 0.004],
            "infra_ci_high": [0.092, 0.07, 0.043, 0.034],
        }
    )
    context = CardContext(
        benchmark="GPQA Diamond",
        benchmark_version="bundled example (50 items × 5 epochs)",
        infra_policy="as incorrect",
        backend="docker",
        agents={NANO: {"model": "gpt-5-nano", "decoding": {"temperature": 1.0}}},
        resource_profiles={
            "1x": {
                "memory_guarantee_factor": 1.0,
                "memory_limit_factor": 1.0,
                "cpu_guarantee_factor": 1.0,
                "cpu_limit_factor": 1.0,
                "time_limit_factor": 1.0,
            }
        },
        resource_profile="1x",
        run_seed=20250101,
        seed_rule="sha256 of (run seed, agent, task, trial)",
        scoring={"scorer": "multiple choice", "match": "exact letter"},
    )
    manifest = build_manifest(
        config={"trials_from": EXAMPLE.name, "columns": {"group": "model"}},
        run_seed=context.run_seed,
        seed_rule=context.seed_rule,
        artifacts=[EXAMPLE],
        root=EXAMPLE.parent,
        started_at=datetime(2026, 3, 1, 12, 0, tzinfo=UTC),
        ended_at=datetime(2026, 3, 1, 12, 30, tzinfo=UTC),
        backend=context.backend,
    )
    return {
        "manifest": manifest,
        "groups": groups,
        "card_context": context,
        "per_task": per_task_table(example_frame),
        "convergence": pd.DataFrame(convergence_records(example_frame, n_subsamples=100)),
        "comparisons": compare_all_pairs(example_frame, n_resamples=1000),
        "budget": budget,
        "infra": infra,
        "attribution": synthetic_attribution,
        "sequential": EXAMPLE_SEQUENTIAL,
        "sequential_rounds": EXAMPLE_ROUNDS,
    }


# An adaptive run's summary (results/sequential/summary.json) as the report reads it: the
# numbers of benchmarks/results/adaptive_run.md, under the example's agent names.
EXAMPLE_SEQUENTIAL = {
    "enabled": True,
    "target": "accuracy",
    "goal": 0.2,
    "rounds": 7,
    "settings": {"max_tasks": 48, "max_trials_per_task": 4},
    "groups": {
        f"{NANO}@1x": {"rounds": 4, "tasks": 24, "trials": 30, "fixed_design_trials": 192},
        f"{MINI}@1x": {"rounds": 7, "tasks": 42, "trials": 48, "fixed_design_trials": 192},
    },
    "units": [
        {"unit": f"{NANO}@1x", "groups": [f"{NANO}@1x"], "round": 3, "status": "target_met",
         "reason": "target met: the 95% anytime-valid interval for accuracy is [0.0000, "
         "0.3426], half-width 0.1713 <= 0.2 (24 tasks)", "estimate": 0.083, "ci_low": 0.0,
         "ci_high": 0.3426, "achieved": 0.1713},
        {"unit": f"{MINI}@1x", "groups": [f"{MINI}@1x"], "round": 6, "status": "target_met",
         "reason": "target met: the 95% anytime-valid interval for accuracy is [0.2423, "
         "0.6412], half-width 0.1995 <= 0.2 (42 tasks)", "estimate": 0.44, "ci_low": 0.2423,
         "ci_high": 0.6412, "achieved": 0.1995},
    ],
}  # fmt: skip
EXAMPLE_ROUNDS = [
    {"round": 0, "unit": f"{NANO}@1x", "reason": "continue with more tasks: half-width 0.4982"},
    {"round": 3, "unit": f"{NANO}@1x", "reason": EXAMPLE_SEQUENTIAL["units"][0]["reason"]},
]


@pytest.fixture(scope="session")
def built_report(tmp_path_factory: pytest.TempPathFactory, example_inputs: dict):
    """(directory, files) of the example report, built once per session."""
    out = tmp_path_factory.mktemp("report")
    files = build_report(out, ReportInputs.of(**example_inputs))
    return out, files


# --- a run with failures: outcomes, health and the machine (the pipeline's new fields) -------

HEALTHY = "healthy-agent"
CRASHY = "crashy-agent"
ORACLE = "oracle-agent"
N_TASKS, N_TRIALS = 12, 8


def _trials(seed: int) -> pd.DataFrame:
    """Long frame of four groups (12 tasks × 8 trials = 96 trials each):

    - healthy-agent@3x: a mix of right and wrong answers (a measurement);
    - crashy-agent@3x: every trial crashed with SIGSEGV, scored 0 "as incorrect";
    - oracle-agent@3x: every trial right (ICC undefined: no convergence, no budget rows);
    - healthy-agent@1x: 60 of 96 trials OOM-killed, declared as the experiment.
    """
    rng = np.random.default_rng(seed)
    p_task = rng.uniform(0.1, 0.9, size=N_TASKS)
    rows = []
    for group, make in (
        (f"{HEALTHY}@3x", lambda t, k: float(rng.random() < p_task[t])),
        (f"{CRASHY}@3x", lambda t, k: 0.0),
        (f"{ORACLE}@3x", lambda t, k: 1.0),
        (f"{HEALTHY}@1x", lambda t, k: 0.0 if (t * N_TRIALS + k) % 8 < 5 else 1.0),
    ):
        for t in range(N_TASKS):
            for k in range(N_TRIALS):
                rows.append(
                    {"group": group, "task": f"q{t:02d}", "trial": str(k), "score": make(t, k)}
                )
    return pd.DataFrame(rows)


def _outcomes(**counts: int) -> dict:
    from evalnoise.outcomes import OUTCOMES

    out = {k: int(counts.get(k, 0)) for k in OUTCOMES}
    out["trials"] = N_TASKS * N_TRIALS
    out["attempts"] = int(counts.get("attempts", out["trials"]))
    return out


def _annotate(rec: dict, outcomes: dict, *, expected: bool = False, signals=None) -> dict:
    from evalnoise.outcomes import assess_health

    health = assess_health(outcomes, expected=expected, crash_examples=list(signals or ()))
    agent, profile = rec["group"].split("@")
    return {
        **rec,
        "agent": agent,
        "resource_profile": profile,
        "outcomes": outcomes,
        "health": health.to_dict(),
        "crash_signals": dict(signals or {}),
    }


def _infra_rate(rec: dict) -> float:
    out = rec["outcomes"]
    return (out["oom_killed"] + out["timeout"] + out["infra_error"]) / out["trials"]


@pytest.fixture(scope="session")
def failure_inputs() -> dict:
    """build_report inputs of a run with one crashed group (SIGSEGV in every trial), one
    healthy group, one all-correct group and one expected-failure group, carrying every
    new field of groups.json, comparisons.json, resource_profiles.csv and manifest.json."""
    frame = _trials(7)
    outcome_of = {
        f"{HEALTHY}@3x": _outcomes(ok=94, no_answer=1, timeout=1, unscored=0, attempts=97),
        f"{CRASHY}@3x": _outcomes(crashed=96),
        f"{ORACLE}@3x": _outcomes(ok=96),
        f"{HEALTHY}@1x": _outcomes(ok=36, oom_killed=60),
    }
    signals = {f"{CRASHY}@3x": {"SIGSEGV": 96}}
    expected = {f"{HEALTHY}@1x"}
    records = analyze_frame(frame)
    groups = [
        _annotate(
            r,
            outcome_of[r["group"]],
            expected=r["group"] in expected,
            signals=signals.get(r["group"]),
        )
        for r in records
    ]
    levels = []
    for rec in groups:
        for level in ("1", "2"):
            levels.append({**rec, "level": level})
    convergence = pd.DataFrame(convergence_records(frame, n_subsamples=30))
    budget_parts = []
    for rec in groups:
        s2b, s2w = rec["sigma2_between"], rec["sigma2_within"]
        if not (s2w and s2w > 0):
            continue  # undefined variance components: the pipeline writes no rows
        alloc = allocation_table(96, max(s2b, 0.0), s2w, max_tasks=N_TASKS)
        budget_parts.append(
            pd.DataFrame(
                {
                    "group": rec["group"],
                    "n_tasks": alloc.n_tasks,
                    "trials": alloc.trials,
                    "se": alloc.se,
                }
            )
        )
    budget = pd.concat(budget_parts, ignore_index=True)
    valid_pair = frame[frame["group"].isin([f"{HEALTHY}@3x", f"{ORACLE}@3x"])]
    comparisons = [
        {**r, "kind": "agents", "within": "3x"}
        for r in compare_all_pairs(valid_pair, n_resamples=200)
    ]
    skipped = [
        {
            "kind": "agents",
            "within": "3x",
            "a": f"{CRASHY}@3x",
            "b": f"{HEALTHY}@3x",
            "reason": f"{CRASHY}@3x is not a measurement of the agent",
        }
    ]
    profiles = pd.DataFrame(
        [
            {
                "resource_profile": rec["resource_profile"],
                "agent": rec["agent"],
                "group": rec["group"],
                "accuracy": rec["mean"],
                "ci_low": rec["ci_low"],
                "ci_high": rec["ci_high"],
                "infra_error_rate": _infra_rate(rec),
                "infra_ci_low": float(wilson_interval(_infra_rate(rec), 96)[0]),
                "infra_ci_high": float(wilson_interval(_infra_rate(rec), 96)[1]),
                **{
                    k: rec["outcomes"][k]
                    for k in (
                        "ok",
                        "crashed",
                        "no_answer",
                        "timeout",
                        "oom_killed",
                        "infra_error",
                        "unscored",
                    )
                },
                "valid": rec["health"]["valid"],
            }
            for rec in groups
        ]
    )
    context = CardContext(
        benchmark="toy QA",
        infra_policy="as incorrect",
        backend="docker",
        resource_profiles={"3x": {"memory_limit_factor": 3.0}, "1x": {"memory_limit_factor": 1.0}},
        run_seed=5,
        seed_rule="sha256 of (run seed, agent, task, trial)",
    )
    manifest = {
        "config_sha256": "cd" * 32,
        "git": {"commit": "feedface", "dirty": False},
        "run_seed": 5,
        "host": {"hostname": "bench-01"},
        "machine": {
            "host": "bench-01",
            "cpu_model": "Intel(R) Xeon(R) Platinum 8480+",
            "cgroup_version": "v2",
            "llama_cpp": {
                "version": "0.3.36",
                "cpu_baseline": "x86-64-v3 (SSE4.2, AVX, AVX2, FMA, F16C, BMI2); no AVX-512, "
                "no AMX",
                "wheel_key": "0.3.36-0123456789ab",
                "system_info": "CPU : SSE3 = 1 | SSSE3 = 1 | AVX = 1 | AVX2 = 1 | F16C = 1 | "
                "FMA = 1 | BMI2 = 1 | LLAMAFILE = 1 | OPENMP = 1 | REPACK = 1 |",
            },
        },
    }
    return {
        "groups": groups,
        "levels": levels,
        "card_context": context,
        "per_task": per_task_table(frame),
        "convergence": convergence,
        "comparisons": {"comparisons": comparisons, "skipped": skipped},
        "budget": budget,
        "infra": profiles,
        "manifest": manifest,
    }


@pytest.fixture(scope="session")
def failure_report(tmp_path_factory: pytest.TempPathFactory, failure_inputs: dict):
    """(directory, files) of the report of the run with failures."""
    out = tmp_path_factory.mktemp("failure-report")
    files = build_report(out, ReportInputs.of(**failure_inputs))
    return out, files
