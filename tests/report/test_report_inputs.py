"""ReportInputs: read from the report rule's files, normalised from records and frames, typed.

The files are written the way ``scripts/summarize.py``, ``scripts/attribution.py`` and the
sequential rules write them; what :meth:`ReportInputs.read` makes of them is checked against
the same files read by hand with ``json`` and ``pandas``.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalnoise.attribution import AttributionTables
from evalnoise.errors import InputError
from evalnoise.formatting import dumps
from evalnoise.report import CardContext, ReportInputs
from evalnoise.report.group_cards import card_stems
from evalnoise.report.inputs import COMPARISON_KIND_LABELS

CTX = CardContext(benchmark="toy QA", infra_policy="as incorrect", backend="docker")
GROUP = {"group": "a@3x", "agent": "a", "resource_profile": "3x", "n_tasks": 2, "mean": 0.5}
#: results/sequential/summary.json and rounds.csv of an adaptive run, as the report reads them
SEQUENTIAL = {
    "enabled": True,
    "target": "accuracy",
    "goal": 0.2,
    "rounds": 2,
    "groups": {"a@3x": {"rounds": 2, "tasks": 8, "trials": 16, "fixed_design_trials": 48}},
    "units": [{"unit": "a@3x", "groups": ["a@3x"], "round": 1, "status": "target_met"}],
}
ROUNDS = [
    {"round": 0, "unit": "a@3x", "reason": "continue with more tasks: half-width 0.31"},
    {"round": 1, "unit": "a@3x", "reason": "target met: half-width 0.19 <= 0.2"},
]


def _csv(frame: pd.DataFrame, path: Path) -> Path:
    frame.to_csv(path, index=False, float_format="%.6g")  # as scripts/summarize.py writes
    return path


def _rule_files(root: Path, inputs: dict, attribution: AttributionTables) -> dict:
    """The report rule's input files (keywords named as in rules/report.smk) of ``inputs``
    (the failure run's), with one budget row whose SE is undefined."""
    root.mkdir(parents=True, exist_ok=True)
    groups = root / "groups.json"
    groups.write_text(dumps({"groups": inputs["groups"], "levels": inputs["levels"]}) + "\n")
    comparisons = root / "comparisons.json"
    comparisons.write_text(dumps(inputs["comparisons"]) + "\n")
    manifest = root / "manifest.json"
    manifest.write_text(dumps(inputs["manifest"]) + "\n")
    budget = inputs["budget"].copy()
    budget.loc[len(budget)] = {"group": "x@1x", "n_tasks": 1, "trials": 1, "se": np.nan}
    summary = root / "attribution.json"
    summary.write_text(dumps(attribution.summary) + "\n", encoding="utf-8")
    resource, flaky = root / "resource_sensitivity.parquet", root / "flaky_tasks.csv"
    attribution.resource.to_parquet(resource, index=False)
    attribution.flaky.to_csv(flaky, index=False, float_format="%.6g")
    seq_summary = root / "summary.json"
    seq_summary.write_text(dumps(SEQUENTIAL) + "\n")
    rounds = _csv(pd.DataFrame(ROUNDS), root / "rounds.csv")
    return {
        "groups": groups,
        "comparisons": comparisons,
        "convergence": _csv(inputs["convergence"], root / "convergence.csv"),
        "budget": _csv(budget, root / "budget.csv"),
        "profiles": _csv(inputs["infra"], root / "resource_profiles.csv"),
        "per_task": _csv(inputs["per_task"], root / "per_task.csv"),
        "manifest": manifest,
        "attribution": summary,
        "resource_sensitivity": resource,
        "flaky_tasks": flaky,
        "sequential": [seq_summary, rounds],
    }


def _load(path: Path):
    return json.loads(path.read_text(encoding="utf-8"))


def test_read_loads_every_field_from_the_rule_files(
    failure_inputs, synthetic_attribution, tmp_path
) -> None:
    files = _rule_files(tmp_path, failure_inputs, synthetic_attribution)
    got = ReportInputs.read(CTX, **files)

    grouped = _load(files["groups"])
    assert got.groups == tuple(grouped["groups"]) and got.levels == tuple(grouped["levels"])
    assert got.card_context is CTX
    for name, path in (("per_task", "per_task"), ("convergence", "convergence")):
        pd.testing.assert_frame_equal(getattr(got, name), pd.read_csv(files[path]))
    pd.testing.assert_frame_equal(got.infra, pd.read_csv(files["profiles"]))
    budget = pd.read_csv(files["budget"])
    assert budget["se"].isna().sum() == 1
    pd.testing.assert_frame_equal(got.budget, budget[budget["se"].notna()])

    pairs = _load(files["comparisons"])
    assert pairs["comparisons"] and pairs["skipped"]
    assert list(got.comparisons.columns) == [
        "a", "b", "diff", "ci_low", "ci_high", "pvalue_holm", "kind",
    ]  # fmt: skip
    for row, rec in zip(got.comparisons.to_dict("records"), pairs["comparisons"], strict=True):
        assert row["kind"] == COMPARISON_KIND_LABELS[rec["kind"]]
        assert (row["a"], row["b"], row["diff"]) == (rec["a"], rec["b"], rec["diff"])
        assert row["pvalue_holm"] == rec.get("pvalue_holm")
    assert got.skipped_comparisons == tuple(
        {**r, "kind": COMPARISON_KIND_LABELS[r["kind"]]} for r in pairs["skipped"]
    )

    assert isinstance(got.attribution, AttributionTables) and got.attribution.problems == ()
    assert got.attribution.summary == _load(files["attribution"])
    assert len(got.attribution.resource) == len(synthetic_attribution.resource)
    assert got.manifest == _load(files["manifest"])
    assert got.sequential == _load(files["sequential"][0])
    assert got.sequential_rounds == tuple(pd.read_csv(files["sequential"][1]).to_dict("records"))


def test_read_a_fixed_design_with_empty_tables_and_no_attribution(
    failure_inputs, synthetic_attribution, tmp_path
) -> None:
    files = _rule_files(tmp_path, failure_inputs, synthetic_attribution)
    for name in ("convergence", "budget", "per_task", "profiles"):
        header = pd.read_csv(files[name]).head(0)
        _csv(header, files[name])  # what summarize writes when nothing was defined
    (tmp_path / "nothing.json").write_text(dumps({"comparisons": [], "skipped": []}))
    files["comparisons"] = tmp_path / "nothing.json"
    files["attribution"].unlink()
    files["sequential"] = []
    got = ReportInputs.read(CTX, **files)
    for name in ("per_task", "convergence", "budget", "infra", "comparisons"):
        assert getattr(got, name) is None, name
    assert got.skipped_comparisons == ()
    assert got.sequential is None and got.sequential_rounds == ()
    # a missing attribution file is named, never an error
    assert got.attribution.problems == (f"{files['attribution']}: missing",)


def test_read_names_the_file_and_the_key(failure_inputs, synthetic_attribution, tmp_path):
    files = _rule_files(tmp_path, failure_inputs, synthetic_attribution)
    files["groups"].write_text(dumps({"groups": failure_inputs["groups"]}))
    with pytest.raises(InputError, match=rf"^{re.escape(str(files['groups']))}: .*'levels'"):
        ReportInputs.read(CTX, **files)
    files["groups"].write_text("{not json")
    with pytest.raises(InputError, match=re.escape(str(files["groups"]))):
        ReportInputs.read(CTX, **files)
    files["groups"].write_text("[]")
    with pytest.raises(InputError, match="expected a JSON object, got list"):
        ReportInputs.read(CTX, **files)
    files = _rule_files(tmp_path / "again", failure_inputs, synthetic_attribution)
    pairs = _load(files["comparisons"])
    del pairs["comparisons"][0]["kind"]
    files["comparisons"].write_text(dumps(pairs))
    with pytest.raises(InputError, match=r"comparisons\.json: column 'kind': missing key"):
        ReportInputs.read(CTX, **files)


def test_of_normalises_records_frames_and_the_comparisons_file() -> None:
    before = {"kind": "agents", "within": "1x", "a": "p", "b": "q", "reason": "given"}
    after = {"kind": "agents", "within": "3x", "a": "r", "b": "s", "reason": "in the file"}
    pair = {"a": "a@3x", "b": "b@3x", "diff": 0.1, "ci_low": 0.0, "ci_high": 0.2}
    got = ReportInputs.of(
        groups=[GROUP],
        card_context=CTX,
        convergence=[{"group": "a@3x", "trials": 2, "icc_mean": 0.3}],
        per_task=pd.DataFrame(columns=["group", "task", "n"]),
        infra=[],
        budget=[
            {"n_tasks": 1, "trials": 2, "se": math.inf},
            {"n_tasks": 2, "trials": 1, "se": 0.1},
        ],
        comparisons={"comparisons": [pair], "skipped": [after]},
        skipped_comparisons=[before],
        sequential_rounds=[{"round": 0}],
    )
    assert got.groups == (GROUP,) and isinstance(got.groups, tuple)
    assert list(got.convergence["icc_mean"]) == [0.3]
    assert got.per_task is None and got.infra is None  # empty as missing
    assert got.budget.to_dict("records") == [{"n_tasks": 2, "trials": 1, "se": 0.1}]
    assert got.comparisons.to_dict("records") == [pair]
    assert got.skipped_comparisons == (before, after)  # the given ones first
    assert got.sequential_rounds == ({"round": 0},)
    assert got.attribution is None and got.manifest is None and got.sequential is None


def test_of_checks_the_attribution_tables() -> None:
    got = ReportInputs.of(
        groups=[GROUP],
        card_context=CTX,
        attribution={"summary": [], "resource": [{"agent": "a"}], "flaky": None},
    )
    assert got.attribution.summary == {}
    assert got.attribution.resource.empty and got.attribution.flaky.empty
    assert got.attribution.problems[0] == "attribution summary: missing or not an object"
    assert got.attribution.problems[1].startswith("resource table: invalid (lacks column(s) ")
    with pytest.raises(TypeError, match="attribution: expected AttributionTables"):
        ReportInputs.of(groups=[GROUP], card_context=CTX, attribution="attribution.json")


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("groups", [GROUP], "groups must be a tuple of mappings"),
        ("groups", ("a@3x",), "groups must be a tuple of mappings"),
        ("per_task", [{"group": "a@3x"}], "per_task must be a DataFrame or None, got list"),
        ("comparisons", {"comparisons": []}, "comparisons must be a DataFrame or None"),
        ("attribution", {"summary": {}}, "attribution must be AttributionTables or None"),
        ("manifest", "manifest.json", "manifest must be a mapping or None, got str"),
        ("card_context", {"benchmark": "x"}, "card_context must be a CardContext"),
    ],
)
def test_the_record_takes_only_normalised_forms(field, value, message) -> None:
    fields = {"groups": (GROUP,), "card_context": CTX, field: value}
    with pytest.raises(TypeError, match=re.escape(message)):
        ReportInputs(**fields)


def test_the_record_takes_no_empty_table() -> None:
    empty = pd.DataFrame(columns=["group", "task", "n"])
    with pytest.raises(ValueError, match="per_task has no rows"):
        ReportInputs(groups=(GROUP,), card_context=CTX, per_task=empty)
    assert ReportInputs.of(groups=[GROUP], card_context=CTX, per_task=empty).per_task is None


def test_the_record_is_frozen_and_needs_a_group() -> None:
    with pytest.raises(ValueError, match="no group records"):
        ReportInputs(groups=(), card_context=CTX)
    with pytest.raises(ValueError, match="no group records"):
        ReportInputs.of(groups=[], card_context=CTX)
    inputs = ReportInputs(groups=(GROUP,), card_context=CTX)
    with pytest.raises(dataclasses.FrozenInstanceError):
        inputs.manifest = {}  # type: ignore[misc]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.none()), max_size=8))
def test_budget_keeps_exactly_the_rows_with_a_finite_se(ses) -> None:
    frame = pd.DataFrame({"n_tasks": range(len(ses)), "se": ses})
    got = ReportInputs.of(groups=[GROUP], card_context=CTX, budget=frame).budget
    finite = [i for i, se in enumerate(ses) if se is not None and math.isfinite(se)]
    if not finite:
        assert got is None
    else:
        assert list(got["n_tasks"]) == finite


@settings(max_examples=80, deadline=None)
@given(
    st.sets(
        st.tuples(st.text("ab /", min_size=1, max_size=3), st.sampled_from([None, "1x", "1 x"])),
        min_size=1,
        max_size=8,
    )
)
def test_card_stems_are_distinct_file_names(keys) -> None:
    stems = card_stems(sorted(keys, key=lambda k: (k[0], k[1] or "")))
    assert len(set(stems.values())) == len(keys)
    assert all(re.fullmatch(r"[A-Za-z0-9._-]+", s) for s in stems.values())


def test_card_stems_that_slug_alike_get_their_hash() -> None:
    keys = [("a/b", "1x"), ("a b", "1x"), ("c", None)]
    stems = card_stems(keys)
    digest = {k: hashlib.sha256(f"{k[0]}\0{k[1] or ''}".encode()).hexdigest()[:8] for k in keys}
    assert stems == {
        ("a/b", "1x"): f"a-b__1x-{digest[('a/b', '1x')]}",
        ("a b", "1x"): f"a-b__1x-{digest[('a b', '1x')]}",
        ("c", None): "c",
    }
