"""The report's charts, defined once as plain-dict Vega-Lite specs (evalnoise.report.specs), are
altair's, key for key, and evalnoise.report.charts gives them back as altair charts.

The reference is an independent altair build of every chart (``altair_reference``: the
altair builders the report used before, with their own data preparation), through
``chart_spec`` (altair's ``to_dict(validate=True)``). The specs are compared as JSON text
without sorting keys, so the keys' order, ints against floats and the inline datasets' names
all count; the PNG of a spec is then vl-convert's rendering of the very same JSON. The altair
charts of ``evalnoise.report.charts`` are the specs loaded into altair: their ``to_dict``
must be the spec again, byte for byte.
"""

from __future__ import annotations

import json

import altair_reference as reference
import numpy as np
import pandas as pd
import pytest

from evalnoise.analysis import per_task_table
from evalnoise.report import ReportInputs, build_report, chart_tables, charts, specs, vegalite
from evalnoise.report._render import VL_VERSION, chart_spec

#: spec function of evalnoise.report.specs → the chart function of the same chart, in the
#: reference and in evalnoise.report.charts
PAIRS = {
    "per_task_spec": "per_task_chart",
    "convergence_spec": "convergence_chart",
    "budget_spec": "budget_chart",
    "dstudy_spec": "dstudy_chart",
    "passk_spec": "passk_chart",
    "infra_spec": "infra_chart",
    "comparisons_spec": "comparisons_chart",
    "resource_sensitivity_spec": "resource_sensitivity_chart",
}


def _text(spec: dict) -> str:
    return json.dumps(spec, ensure_ascii=False)


def _same(name: str, *args, **kwargs) -> dict:
    ours = getattr(specs, name)(*args, **kwargs)
    theirs = chart_spec(getattr(reference, PAIRS[name])(*args, **kwargs))
    assert _text(ours) == _text(theirs), name
    chart = getattr(charts, PAIRS[name])(*args, **kwargs)
    assert _text(chart_spec(chart)) == _text(ours), f"{PAIRS[name]} does not give {name} back"
    return ours


def test_schema_and_version_are_altairs() -> None:
    import altair as alt

    assert vegalite.SCHEMA_URL == alt.SCHEMA_URL
    assert VL_VERSION == "v" + "_".join(alt.SCHEMA_VERSION.lstrip("v").split(".")[:2])


@pytest.fixture
def checked(monkeypatch) -> list[str]:
    """Every spec function the report calls also builds the reference chart and compares,
    and loads its spec into altair (as evalnoise.report.charts does) and compares again."""
    seen: list[str] = []
    for name in PAIRS:
        original = getattr(specs, name)

        def both(*args, _name=name, _original=original, **kwargs):
            ours = _original(*args, **kwargs)
            theirs = chart_spec(getattr(reference, PAIRS[_name])(*args, **kwargs))
            assert _text(ours) == _text(theirs), _name
            assert _text(chart_spec(charts._as_chart(ours))) == _text(ours), _name
            seen.append(_name)
            return ours

        monkeypatch.setattr(specs, name, both)
    return seen


def test_report_of_the_example_run(checked, example_inputs, tmp_path) -> None:
    build_report(tmp_path, ReportInputs.of(**example_inputs))
    assert {"per_task_spec", "convergence_spec", "budget_spec", "comparisons_spec"} <= set(checked)


def test_report_of_the_failure_run(checked, failure_inputs, tmp_path) -> None:
    # invalid groups (relabelled, crosses and dashed intervals), skipped comparisons, the
    # resource-sensitive tasks and the D study
    build_report(tmp_path, ReportInputs.of(**failure_inputs))
    assert {"infra_spec", "comparisons_spec"} <= set(checked)


def _tasks(groups: int, tasks: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    mean = rng.uniform(size=groups * tasks).round(3)
    mean[::7] = 1.0  # ties, broken by task id
    return pd.DataFrame(
        {
            "group": np.repeat([f"g{i}" for i in range(groups)], tasks),
            "task": [f"t{i:05d}" for i in range(tasks)] * groups,
            "n": 10,
            "mean": mean,
            "ci_low": np.clip(mean - 0.2, 0, 1),
            "ci_high": np.clip(mean + 0.2, 0, 1),
        }
    )


@pytest.mark.parametrize(("groups", "tasks"), [(1, 3), (2, 300), (2, 2500), (3, 1001)])
def test_per_task(groups, tasks) -> None:
    _same("per_task_spec", _tasks(groups, tasks), confidence=0.9)


def test_per_task_of_trials(example_frame) -> None:
    _same("per_task_spec", per_task_table(example_frame))


def _convergence_table(
    trials: list[int], *, reference: bool = True, nan: bool = True
) -> pd.DataFrame:
    k = len(trials)
    rng = np.random.default_rng(len(trials))
    icc = rng.uniform(-0.1, 0.8, 2 * k)
    if nan:
        icc[k] = np.nan
    table = pd.DataFrame(
        {
            "group": ["g"] * k + ["h"] * k,
            "trials": trials * 2,
            "icc_mean": icc,
            "icc_p05": icc - 0.1,
            "icc_p95": icc + 0.1,
            "plugin_mean": icc + 0.05,
            "plugin_p05": icc - 0.05,
            "plugin_p95": icc + 0.15,
        }
    )
    if reference:
        table["full_icc"] = 0.4
        table["full_plugin"] = 0.45
    return table


def _convergence(trials: list[int], *, reference: bool = True) -> pd.DataFrame:
    return chart_tables.tidy_convergence(_convergence_table(trials, reference=reference))


@pytest.mark.parametrize(
    ("trials", "reference"), [([2, 4, 8, 16], True), ([2, 3, 4], False), ([3, 5, 7], True)]
)
def test_convergence(trials, reference) -> None:
    _same("convergence_spec", _convergence(trials, reference=reference))
    _same("convergence_spec", _convergence(trials, reference=reference), band_label="IQR")


@pytest.mark.parametrize("group", [True, False])
@pytest.mark.parametrize("n_tasks", [[100, 50, 10], [1000, 100, 10, 2], [8, 4]])
def test_budget(group, n_tasks) -> None:
    se = np.linspace(0.1, 0.02, len(n_tasks))
    rows = pd.DataFrame({"n_tasks": n_tasks, "trials": [400 // n for n in n_tasks], "se": se})
    if group:
        rows = pd.concat([rows.assign(group="b"), rows.assign(group="a", se=rows["se"] * 2)])
    _same("budget_spec", rows)
    _same("budget_spec", rows.assign(recommended=[True] + [False] * (len(rows) - 1)), title="T")


def test_dstudy() -> None:
    curve = pd.DataFrame(
        {
            "group": ["a", "a", "b", "b"],
            "budget_multiple": [0.25, 1.0, 0.25, 1.0],
            "budget": [250.0, 1000.0, 250.0, 1000.0],
            "se": [0.08, 0.04, 0.09, np.nan],
            "tasks": [25, 100, 50, 100],
            "trials": [10, 10, 5, 10],
        }
    )
    _same("dstudy_spec", curve)


@pytest.mark.parametrize("valid", [None, [True, False, None, "false"]])
def test_infra(valid) -> None:
    infra = pd.DataFrame(
        {
            "resource_profile": ["1x", "1x", "3x", "3x"],
            "agent": ["b", "a", "b", "a"],
            "accuracy": [0.5, 0.6, 0.55, 0.65],
            "ci_low": [0.4, 0.5, 0.45, 0.55],
            "ci_high": [0.6, 0.7, 0.65, 0.75],
            "infra_error_rate": [0, 0.1, 0.0, np.inf],
            "infra_ci_low": [0, 0.05, 0, 0],
            "infra_ci_high": [0.01, 0.2, 0.01, 0.02],
        }
    )
    if valid is not None:
        infra["valid"] = valid
    _same("infra_spec", infra, confidence=0.9)


@pytest.mark.parametrize("kind", [False, True])
@pytest.mark.parametrize("p_column", ["pvalue_holm", None, "absent"])
def test_comparisons(kind, p_column) -> None:
    table = pd.DataFrame(
        {
            "a": ["x", "x", "y"],
            "b": ["y", "z", "z"],
            "diff": [0.1, -0.02, 0.03],
            "ci_low": [0.05, -0.08, -0.01],
            "ci_high": [0.15, 0.04, 0.07],
            "pvalue_holm": [0.001, 0.5, np.nan],
        }
    )
    if kind:
        table["kind"] = ["agents", "agents", "resource profiles"]
    _same("comparisons_spec", table, p_column=p_column, alpha=0.01)


@pytest.mark.parametrize("comparisons", [1, 2])
@pytest.mark.parametrize("optional", [False, True])
def test_resource_sensitivity(comparisons, optional) -> None:
    rows = []
    for c in range(comparisons):
        for t in range(4):
            rows.append(
                {
                    "agent": f"agent{c}",
                    "profile_a": "1x",
                    "profile_b": "3x" if c else "uncapped",
                    "task_id": f"task-{t}",
                    "accuracy_a": t / 4,
                    "accuracy_b": 1 - t / 8,
                    "pvalue_adjusted": [0.01, 0.2, np.nan, 0.04][t],
                    "significant": [True, False, None, "true"][t],
                }
            )
    table = pd.DataFrame(rows)
    if optional:
        table["between_limits"] = [False, True, True, False] * comparisons
        table["n_pairs"] = 10
        table["pvalue"] = 0.02
    _same("resource_sensitivity_spec", table, alpha=0.1, adjust="Holm")


def test_values_follow_altairs_sanitizing() -> None:
    frame = pd.DataFrame(
        {
            "f": [1.5, np.nan, np.inf],
            "i": np.array([1, 2, 3], dtype="int32"),
            "b": [True, False, True],
            "o": ["x", None, np.nan],
            "c": pd.Categorical(["u", None, "u"]),
            "n": pd.array([1, None, 3], dtype="Int64"),
            "s": pd.array(["p", None, "q"], dtype="string"),
        }
    )
    from altair.utils.data import to_values

    assert json.dumps(vegalite.values(frame)) == json.dumps(to_values(frame)["values"])


@pytest.mark.parametrize("reference_columns", [True, False])
def test_tidy_convergence_is_the_references(reference_columns) -> None:
    # rows shuffled: both sort them by group, estimator and trials
    table = _convergence_table([2, 4, 8], reference=reference_columns)
    table = table.sample(frac=1, random_state=0)
    pd.testing.assert_frame_equal(
        chart_tables.tidy_convergence(table), reference.tidy_convergence(table)
    )


@pytest.mark.parametrize("explicit", [False, True])
def test_recommended_allocation_is_the_references(explicit) -> None:
    budget = pd.DataFrame(
        {
            "group": ["b", "b", "a", "a", "a"],
            "n_tasks": [10, 20, 10, 20, 40],
            "trials": [4, 2, 8, 4, 2],
            "se": [0.05, 0.05, 0.04, 0.03, 0.03],
        }
    )
    if explicit:
        budget["recommended"] = [None, True, False, None, True]
    assert (
        chart_tables.recommended_allocation(budget).tolist()
        == reference.recommended_allocation(budget).tolist()
    )
