"""Every result class of evalnoise.stats: a frozen dataclass with ``to_dict()``, strict JSON
out, and scipy.stats' field vocabulary (``statistic``, ``pvalue``, ``ci_low``/``ci_high``).
The attribution's results (evalnoise.attribution) and the tables and records it writes use
the same vocabulary."""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import json
import math
import pkgutil
import warnings

import numpy as np
import pandas as pd
import pytest

import evalnoise.attribution as attribution_pkg
import evalnoise.stats as stats_pkg
from evalnoise import attribution, stats
from evalnoise.formatting import jsonable
from evalnoise.stats._results import DictResult
from evalnoise.stats.permutation import factor_permutation_test
from evalnoise.stats.shares import share_decision

#: Public classes of evalnoise.stats that are not results, and why.
NOT_RESULTS = {
    "Facet": "an input: one facet of a G-study design",
    "Design": "an input: the design a G study is fitted under",
    "CodedDesign": "an intermediate: the data coded for a design, inside gstudy",
    "ProportionInterval": "a (low, high) pair callers unpack, like scipy's ConfidenceInterval",
    "NotEstimable": "an exception",
    "StoppingRule": "an input: the rule an adaptive evaluation stops by",
    "AgentTrials": "an input: one agent's trials with their rounds",
    "EntryUnits": "an intermediate: an adaptive run's units, inside the sequences and stopping",
}

RNG = np.random.default_rng(7)
TASKS = np.repeat(np.arange(8), 4)
TRIALS = np.tile(np.arange(4), 8)
SCORES = (RNG.random(TASKS.size) < np.repeat(RNG.random(8), 4)).astype(float)
SCORES_B = (RNG.random(TASKS.size) < 0.5).astype(float)
CONSTANT = np.ones(TASKS.size)


def _public_classes() -> dict[str, type]:
    found = {}
    for info in pkgutil.iter_modules(stats_pkg.__path__):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"evalnoise.stats.{info.name}")
        for name, obj in inspect.getmembers(module, inspect.isclass):
            if obj.__module__ == module.__name__ and not name.startswith("_"):
                found[name] = obj
    return found


def _gstudy():
    return stats.gstudy(SCORES, {"task": TASKS, "trial": TRIALS}, ["task", "trial:task"])


def _instances() -> dict[str, list]:
    """At least one real result of every class, computed from data; NaN-prone cases (constant
    scores, no discordant pairs) included so the JSON check meets them."""
    g = _gstudy()
    model = stats.model_of(g, replicate="trial")
    costs = {"task": 5.0, "trial": 1.0}
    alloc = stats.allocation_table(200, 0.05, 0.1)
    cost_alloc = stats.cost_allocation(
        200.0, 0.05, 0.1, cost_per_task=5.0, cost_per_trial=1.0, max_trials=10
    )
    optimal = stats.cheapest_design(model, 0.05, costs)
    blocks = TRIALS // 2
    family = factor_permutation_test(
        SCORES, TASKS, {"block": blocks}, interactions=["block"], n_permutations=99
    )
    constant = factor_permutation_test(CONSTANT, TASKS, {"block": blocks}, n_permutations=9)
    out = {
        "AccuracyResult": [stats.accuracy(SCORES, TASKS), stats.accuracy(CONSTANT, TASKS)],
        "ICCResult": [stats.icc_oneway(SCORES, TASKS), stats.icc_oneway(CONSTANT, TASKS)],
        "ICCBatch": [
            stats.icc_batch(
                np.full((2, 3), 4.0),
                np.array([[1, 2, 3], [4, 4, 4]]),
                np.array([[1, 2, 3], [4, 4, 4]]),
            )
        ],
        "ConvergenceResult": [stats.icc_convergence(SCORES, TASKS, TRIALS, n_subsamples=20)],
        "AgreementResult": [
            stats.judge_agreement(SCORES, SCORES_B, tasks=TASKS, n_resamples=50),
            stats.judge_agreement(CONSTANT, CONSTANT),
        ],
        "PairedDifferenceResult": [stats.paired_difference(SCORES, TASKS, SCORES_B, TASKS)],
        "McNemarResult": [stats.mcnemar(SCORES, SCORES_B), stats.mcnemar(SCORES, SCORES)],
        "PairedBootstrapResult": [
            stats.paired_bootstrap(RNG.random(8), RNG.random(8), n_resamples=100)
        ],
        "ComparisonResult": [
            stats.compare(TASKS, TRIALS, SCORES, TASKS, TRIALS, SCORES_B, n_resamples=100),
            stats.compare(TASKS, TRIALS, SCORES * 0.5, TASKS, TRIALS, SCORES_B, n_resamples=100),
        ],
        "MDDResult": [stats.minimum_detectable_difference(20, 4, 0.05, 0.1)],
        "PassKResult": [stats.pass_k(SCORES, TASKS)],
        "OutcomeConsistencyResult": [
            stats.outcome_consistency(SCORES, TASKS),
            stats.outcome_consistency(CONSTANT[:3], ["a", "b", "c"]),
        ],
        "TrajectoryConsistencyResult": [
            stats.trajectory_consistency([("a",) * int(s) for s in SCORES], TASKS, SCORES),
            stats.trajectory_consistency([("a",)], ["t"], [1.0]),
        ],
        "GateResult": [
            stats.regression_gate(0.01, -0.02, 0.04, 0.05),
            stats.regression_gate(0.0, float("nan"), float("nan"), 0.05),
        ],
        "DesignForMargin": [
            stats.design_for_margin(0.05, 20, 4, 0.05, 0.1),
            stats.design_for_margin(0.01, 20, 4, 0.05, 0.1),
        ],
        "AllocationResult": [alloc],
        "Allocation": [alloc.recommended],
        "CostAllocationResult": [cost_alloc],
        "CostAllocation": [cost_alloc.recommended],
        "SampleSizeResult": [stats.tasks_for_icc_precision(0.6, 4, ci_width=0.2)],
        "OptimalTrialsResult": [stats.optimal_trials_per_task(0.05, 0.1, 5.0, 1.0)],
        "PilotPlan": [stats.plan_from_pilot(SCORES, TASKS, budget=100.0)],
        "RoganGladenResult": [stats.rogan_gladen(SCORES, SCORES_B)],
        "PPIResult": [stats.ppi_mean(SCORES, SCORES_B)],
        "CorrectedAccuracyResult": [stats.corrected_accuracy(SCORES, SCORES_B, tasks=TASKS)],
        "GStudyResult": [g],
        "VarianceModel": [model],
        "TotalErrorResult": [stats.total_error(g)],
        "DStudyResult": [stats.dstudy(model, {"task": [8, 16]}, costs=costs)],
        "OptimalDesignResult": [optimal],
        "DesignChoice": [optimal.recommended],
        "JudgeSamplePlan": [
            stats.judge_sample_plan(
                200.0, 0.04, 0.1, 0.05, cost_per_trial=1.0, cost_per_judge_sample=0.2
            )
        ],
        "MeanCSResult": [stats.mean_confidence_sequence(SCORES)],
        "ConfidenceSequenceResult": [stats.confidence_sequence(SCORES, TASKS, blocks)],
        "StoppingDecision": [
            stats.stopping_decision(
                stats.AgentTrials(SCORES, TASKS, blocks),
                stats.StoppingRule(half_width=0.1, budget=100.0),
            )
        ],
        "FactorPermutationResult": [family, constant],
        "PermutationTestResult": [family.test("block")],
        "ShareDecision": [share_decision(False, {"judge": True})],
    }
    return out


RESULT_CLASSES = {n: c for n, c in _public_classes().items() if n not in NOT_RESULTS}

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    INSTANCES = _instances()


def test_the_walk_finds_the_result_classes():
    # The walk is what the other tests trust: it must see the package's results, and every
    # class it sees must have an instance below (a new result class fails here until it does).
    assert {"ICCResult", "ComparisonResult", "AgreementResult", "GStudyResult"} <= set(
        RESULT_CLASSES
    )
    assert len(RESULT_CLASSES) >= 28
    assert sorted(RESULT_CLASSES) == sorted(INSTANCES)
    for name, objs in INSTANCES.items():
        assert objs and all(type(o) is RESULT_CLASSES[name] for o in objs), name


@pytest.mark.parametrize("name", sorted(RESULT_CLASSES))
def test_result_class_is_a_frozen_dataclass_with_the_shared_to_dict(name):
    cls = RESULT_CLASSES[name]
    assert dataclasses.is_dataclass(cls) and cls.__dataclass_params__.frozen, name
    assert issubclass(cls, DictResult), f"{name}: to_dict() must come from DictResult"
    # One implementation: a class may reshape its record, never convert on its own.
    assert cls.to_dict is DictResult.to_dict, f"{name} overrides to_dict()"


def _not_scipy_names(names) -> list[str]:
    """The names among ``names`` that say p or t where scipy.stats says pvalue or statistic."""
    return [
        n
        for n in names
        if n in {"p", "t", "p_value", "pval", "f_stat", "t_stat"}
        or n.endswith(("_p_value", "_p"))
        or n.startswith("p_")
    ]


@pytest.mark.parametrize("name", sorted(RESULT_CLASSES))
def test_field_names_use_scipy_vocabulary(name):
    bad = _not_scipy_names(f.name for f in dataclasses.fields(RESULT_CLASSES[name]))
    assert not bad, f"{name}: {bad} — use statistic / pvalue (scipy.stats' names)"


def test_the_name_check_catches_the_old_names():
    # the check above and below must be able to fail: every old attribution name is caught
    old = ["p", "t", "p_adjusted", "drift_p", "kappa_p_value", "f_stat"]
    assert _not_scipy_names(old) == old
    assert _not_scipy_names(["pvalue", "pvalue_adjusted", "drift_pvalue", "statistic"]) == []


# --- the attribution's results, tables and records ------------------------------------------

#: Public classes of evalnoise.attribution that are not results, and why.
ATTRIBUTION_NOT_RESULTS = {
    "TrialColumns": "an input: the columns of a trial table",
    "NotRun": "a record of an analysis that could not run (scope, check, reason)",
    "AttributionTables": "the artifacts bundle; its summary and tables are checked below",
}


def _attribution_classes() -> dict[str, type]:
    found = {}
    for info in pkgutil.iter_modules(attribution_pkg.__path__):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"evalnoise.attribution.{info.name}")
        for name, obj in inspect.getmembers(module, inspect.isclass):
            if obj.__module__ == module.__name__ and not name.startswith("_"):
                found[name] = obj
    return {n: c for n, c in found.items() if n not in ATTRIBUTION_NOT_RESULTS}


def _trial_table() -> pd.DataFrame:
    """One agent, two resource profiles, 8 tasks × 8 trials, some timeouts, two hosts, start
    times over ten hours: enough for every attribution analysis to run."""
    rng = np.random.default_rng(11)
    start = pd.Timestamp("2025-01-01 08:00", tz="UTC")
    rows = []
    for profile in ("1x", "3x"):
        for task in range(8):
            p_task = rng.uniform(0.2, 0.8)
            for trial in range(8):
                status = "timeout" if rng.random() < 0.1 else "ok"
                correct = None if status != "ok" else bool(rng.random() < p_task)
                rows.append(
                    {
                        "agent": "a",
                        "resource_profile": profile,
                        "task_id": f"t{task}",
                        "trial": trial,
                        "status": status,
                        "correct": correct,
                        "score": None if correct is None else float(correct),
                        "started_at": start + pd.Timedelta(minutes=int(rng.integers(0, 600))),
                        "host": f"h{trial % 2}",
                        "attempt": 1,
                    }
                )
    return pd.DataFrame(rows)


TRIAL_TABLE = _trial_table()


def _attribution_instances() -> dict[str, list]:
    one = TRIAL_TABLE[TRIAL_TABLE["resource_profile"] == "1x"].reset_index(drop=True)
    flaky = attribution.flaky_tasks(one)
    times = attribution.time_effects(one)
    return {
        "PolicySensitivityResult": [attribution.policy_sensitivity(one)],
        "ResourceSensitivityResult": [attribution.resource_sensitivity(TRIAL_TABLE, "1x", "3x")],
        "FlakyTasksResult": [flaky],
        "CheckRun": list(flaky.checks),
        "TimeEffectsResult": [times],
        "VarianceComponentsResult": [times.components],
        "DriftResult": [
            times.drift,
            attribution.drift_test(one["score"].fillna(0.0), one["task_id"], np.zeros(len(one))),
        ],
    }


ATTRIBUTION_CLASSES = _attribution_classes()

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    ATTRIBUTION_INSTANCES = _attribution_instances()
    ATTRIBUTION_TABLES = attribution.attribution_for_trials(TRIAL_TABLE)


def test_the_attribution_walk_finds_the_result_classes():
    assert {"DriftResult", "PolicySensitivityResult", "ResourceSensitivityResult"} <= set(
        ATTRIBUTION_CLASSES
    )
    assert sorted(ATTRIBUTION_CLASSES) == sorted(ATTRIBUTION_INSTANCES)
    for name, objs in ATTRIBUTION_INSTANCES.items():
        assert objs and all(type(o) is ATTRIBUTION_CLASSES[name] for o in objs), name


@pytest.mark.parametrize("name", sorted(ATTRIBUTION_CLASSES))
def test_attribution_results_use_scipy_vocabulary(name):
    cls = ATTRIBUTION_CLASSES[name]
    assert dataclasses.is_dataclass(cls) and cls.__dataclass_params__.frozen, name
    bad = _not_scipy_names(f.name for f in dataclasses.fields(cls))
    for obj in ATTRIBUTION_INSTANCES[name]:
        bad += _not_scipy_names(obj.to_dict())
        if hasattr(obj, "to_frame"):
            bad += _not_scipy_names(obj.to_frame().columns)
        # the per-task tables a result carries (resource: table; flaky: flagged, evidence)
        for attr in ("table", "flagged", "evidence"):
            if isinstance(getattr(obj, attr, None), pd.DataFrame):
                bad += _not_scipy_names(getattr(obj, attr).columns)
    assert not bad, f"{name}: {sorted(set(bad))} — use statistic / pvalue (scipy.stats' names)"


def test_the_attribution_artifacts_use_scipy_vocabulary():
    # what the attribution rule writes (attribution.json, resource_sensitivity.parquet,
    # flaky_tasks.csv) and the report reads back
    tables = ATTRIBUTION_TABLES
    assert not tables.resource.empty and "pvalue_adjusted" in tables.resource.columns
    assert {"pvalue", "pvalue_adjusted"} <= set(attribution.all_analyses.RESOURCE_COLUMNS)
    groups = [g for label, g in tables.summary.items() if not label.startswith("_")]
    assert len(groups) == 2 and all("drift_pvalue" in g for g in groups)
    keys = [k for g in groups for k in g]
    bad = _not_scipy_names(keys) + _not_scipy_names(tables.resource.columns)
    bad += _not_scipy_names(tables.flaky.columns)
    assert not bad, sorted(set(bad))


def _walk(value):
    if isinstance(value, dict):
        for k, v in value.items():
            assert isinstance(k, str)
            yield from _walk(v)
    elif isinstance(value, list):
        for v in value:
            yield from _walk(v)
    else:
        yield value


@pytest.mark.parametrize("name", sorted(RESULT_CLASSES))
def test_to_dict_is_strict_json_with_nan_as_null(name):
    for obj in INSTANCES[name]:
        d = obj.to_dict()
        text = json.dumps(d, allow_nan=False)
        assert json.loads(text) == d
        # The one conversion rule: what to_dict() gives is what jsonable gives.
        assert jsonable(d) == d
        for v in _walk(d):
            assert v is None or isinstance(v, (str, bool, int, float)), (name, type(v))


def test_nan_fields_become_null_and_numbers_stay_numbers():
    icc = stats.icc_oneway(CONSTANT, TASKS)
    assert math.isnan(icc.icc) and math.isnan(icc.statistic)
    d = icc.to_dict()
    assert d["icc"] is None and d["statistic"] is None and d["pvalue"] is None
    assert d["n_tasks"] == 8 and isinstance(d["n_tasks"], int)
    live = stats.icc_oneway(SCORES, TASKS)
    assert live.to_dict()["statistic"] == live.statistic
    assert live.to_dict()["pvalue"] == live.pvalue


def test_nested_results_are_nested_records():
    res = INSTANCES["ComparisonResult"][0]
    d = res.to_dict()
    assert d["pvalue"] == res.pvalue
    assert d["mcnemar"] == res.mcnemar.to_dict()
    assert d["bootstrap"] == res.bootstrap.to_dict()
    assert d["power_analysis"] == res.power_analysis.to_dict()
    # Not binary: McNemar does not apply, and says so with null rather than a dict of NaN.
    partial = INSTANCES["ComparisonResult"][1]
    assert partial.mcnemar is None and partial.to_dict()["mcnemar"] is None


@pytest.mark.parametrize(
    ("name", "old", "new"),
    [
        ("ICCResult", "f_stat", "statistic"),
        ("ICCResult", "p_value", "pvalue"),
        ("ICCResult", "se_bonett", "se"),
        ("PairedDifferenceResult", "t", "statistic"),
        ("PairedDifferenceResult", "p", "pvalue"),
        ("McNemarResult", "chi2", "statistic"),
        ("McNemarResult", "p", "pvalue"),
        ("McNemarResult", "p_chi2", "pvalue_chi2"),
        ("McNemarResult", "p_exact", "pvalue_exact"),
        ("ComparisonResult", "p_paired", "pvalue"),
        ("AgreementResult", "kappa_p_value", "kappa_pvalue"),
        ("DriftResult", "t", "statistic"),
        ("DriftResult", "p", "pvalue"),
    ],
)
def test_old_names_are_deprecated_aliases_for_one_release(name, old, new):
    obj = {**INSTANCES, **ATTRIBUTION_INSTANCES}[name][0]
    with pytest.warns(DeprecationWarning, match=f"{name}.{old} is deprecated.*use .{new}"):
        value = getattr(obj, old)
    assert value == getattr(obj, new) or (math.isnan(value) and math.isnan(getattr(obj, new)))
    assert old not in obj.to_dict() and old not in {f.name for f in dataclasses.fields(obj)}
