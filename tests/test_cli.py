"""The command line: exact JSON shapes, readable tables, and one-line errors with exit 2."""

from __future__ import annotations

import json
import math
import re
import subprocess
import sys
import warnings
from dataclasses import fields
from pathlib import Path

import pandas as pd
import pytest

from evalnoise.cli import build_parser, main
from evalnoise.group_records import GroupRecord

EXAMPLE = Path(__file__).resolve().parents[1] / "src/evalnoise/data/gpqa_diamond_example.csv"

#: ``analyze --json``'s keys of a group: the typed record's fields in their order
#: (:class:`evalnoise.group_records.GroupRecord`; a new number is a new field, and
#: tests/test_group_records.py checks that every field is written), without the optional
#: ones the command has no data for (pipeline-only: identity, costs, judges…)
ANALYZE_OPTIONAL = ("pass_k", "outcome_consistency", "trajectory_consistency")
ANALYZE_KEYS = [
    f.name
    for f in fields(GroupRecord)
    if not f.metadata.get("optional") or f.name in ANALYZE_OPTIONAL
]
COMPARE_KEYS = [
    "a",
    "b",
    "n_tasks",
    "n_dropped_a",
    "n_dropped_b",
    "mean_a",
    "mean_b",
    "diff",
    "se_paired",
    "ci_low",
    "ci_high",
    "pvalue",
    "mcnemar",
    "bootstrap",
    "mdd",
    "power_analysis",
    "sigma2_between",
    "sigma2_within",
    "confidence",
    "warnings",
]


def run_json(capsys, argv):
    assert main([*argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_every_subcommand_has_help(capsys):
    """``python -m evalnoise`` in a process of its own once (the entry point), every
    subcommand's help in this one (a process each only started Python again)."""
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    assert {"analyze", "compare", "plan"} <= set(sub.choices)
    out = subprocess.run(
        [sys.executable, "-m", "evalnoise", "analyze", "--help"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "usage: evalnoise analyze" in out.stdout
    for name in sub.choices:
        try:
            code = main([name, "--help"])  # `run` prints its own help and returns
        except SystemExit as exc:  # argparse's help exits
            code = exc.code
        assert code == 0, name
        assert "usage: evalnoise " + name in capsys.readouterr().out


def test_analyze_json_has_exactly_the_promised_keys(capsys):
    out = run_json(capsys, ["analyze", str(EXAMPLE), "--group", "model"])
    assert list(out) == ["groups"]
    assert [g["group"] for g in out["groups"]] == [
        "openai/gpt-5-nano-2025-08-07",
        "openai/gpt-5.4-mini-2026-03-17",
    ]
    frame = pd.read_csv(EXAMPLE)
    for g in out["groups"]:
        assert list(g) == ANALYZE_KEYS
        part = frame[frame["model"] == g["group"]]
        assert g["n_obs"] == len(part) == 250
        assert g["n_tasks"] == 50
        assert g["mean"] == pytest.approx(part["correct"].mean(), abs=1e-12)
        assert g["mean_pooled"] == g["mean"]  # balanced: 5 trials of each task
        assert g["ci_method"] == "clustered"
        assert g["ci_low"] < g["mean"] < g["ci_high"]
        assert g["icc_ci_low"] <= g["icc"] <= g["icc_ci_high"]
        assert g["df1"] == 49 and g["df2"] == 200 and g["n0"] == pytest.approx(5)
        assert g["interpretation"] in {"poor", "moderate", "good", "excellent"}


def test_analyze_convergence_and_nan_as_null(tmp_path, capsys):
    # one trial per task: ICC is undefined; the JSON must say null, not NaN or 0
    p = tmp_path / "one.csv"
    p.write_text("task_id,trial,correct\na,0,1\nb,0,0\nc,0,1\n")
    out = run_json(capsys, ["analyze", str(p)])
    g = out["groups"][0]
    assert g["icc"] is None and g["warnings"]
    out = run_json(
        capsys, ["analyze", str(EXAMPLE), "--group", "model", "--convergence", "--subsamples", "20"]
    )
    assert {row["trials"] for row in out["convergence"]} >= {2, 4, 5}


def test_analyze_text_prints_the_reporting_line(capsys):
    assert main(["analyze", str(EXAMPLE), "--group", "model"]) == 0
    out = capsys.readouterr().out
    assert "ICC" in out and "between-query SE" in out and "95% CI [" in out


def test_compare_json_shape_and_sign(capsys):
    a, b = "openai/gpt-5-nano-2025-08-07", "openai/gpt-5.4-mini-2026-03-17"
    out = run_json(
        capsys, ["compare", str(EXAMPLE), "--group", "model", a, b, "--resamples", "2000"]
    )
    assert list(out) == COMPARE_KEYS
    assert list(out["mcnemar"]) == [
        "n01", "n10", "n_pairs", "statistic", "pvalue_chi2", "pvalue_exact", "pvalue", "method"
    ]  # fmt: skip
    assert list(out["bootstrap"]) == [
        "diff", "ci_low", "ci_high", "se", "n_resamples", "seed", "confidence"
    ]  # fmt: skip
    assert out["diff"] == pytest.approx(out["mean_a"] - out["mean_b"])
    assert out["mean_a"] == pytest.approx(0.68) and out["mean_b"] == pytest.approx(0.608)
    frame = pd.read_csv(EXAMPLE).pivot_table(
        index=["task_id", "trial"], columns="model", values="correct"
    )
    assert out["mcnemar"]["n01"] == int(((frame[a] == 0) & (frame[b] == 1)).sum())
    assert out["mcnemar"]["n10"] == int(((frame[a] == 1) & (frame[b] == 0)).sum())
    assert out["bootstrap"]["n_resamples"] == 2000


def test_plan_both_modes(capsys):
    out = run_json(capsys, ["plan", "--icc", "0.7", "--trials", "8", "--ci-width", "0.2"])
    assert list(out) == ["n_tasks_needed"] and out["n_tasks_needed"] > 1
    out = run_json(
        capsys,
        [
            "plan",
            "--budget",
            "400",
            "--sigma2-between",
            "0.1",
            "--sigma2-within",
            "0.02",
            "--max-tasks",
            "150",
        ],
    )
    assert list(out) == [
        "allocations",
        "recommended",
        "max_tasks",
        "tasks_without_cap",
        "pool_bound",
    ]
    rec = out["recommended"]
    assert rec["n_tasks"] <= 150 and rec["n_tasks"] * rec["trials"] <= 400
    assert rec["se"] == pytest.approx(min(a["se"] for a in out["allocations"]))
    assert all(math.isfinite(a["se"]) for a in out["allocations"])


@pytest.mark.parametrize(
    ("argv", "content", "message"),
    [
        (
            ["analyze"],
            "task_id,trial,points\na,0,1\n",
            r"no score column: the file has neither 'score' nor 'correct' "
            r"\(the file has: task_id, trial, points\); name it with --score",
        ),
        (["analyze"], "task_id,trial,correct\na,0,1\na,1,x\n", r"row 2: column 'correct'"),
        (["analyze"], "", r"the file is empty"),
        (
            ["compare", "--group", "agent", "p", "q"],
            "agent,task_id,trial,correct\np,a,0,1\n",
            r"group 'q' not found",
        ),
        (["plan", "--icc", "0.5"], None, r"give either"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(tmp_path, capsys, argv, content, message):
    """In this process (what ``python -m evalnoise`` exits with is main's return value; the
    test below runs one case as a process), with every warning recorded: none may be raised,
    as a process would print it on stderr beside the error line."""
    cmd = [argv[0]]
    if content is not None:
        p = tmp_path / "t.csv"
        p.write_text(content)
        cmd.append(str(p))
    cmd += argv[1:]
    with warnings.catch_warnings(record=True) as raised:
        warnings.simplefilter("always")
        try:
            code = main(cmd)
        except SystemExit as exc:  # an argparse error exits
            code = exc.code
    res = capsys.readouterr()
    assert code == 2, res.err
    assert not raised, [str(w.message) for w in raised]
    assert res.out == ""
    lines = res.err.strip().splitlines()
    assert len(lines) == 1, res.err
    assert re.search(message, lines[0]), lines[0]


def test_bad_input_exits_2_with_one_line_as_a_process(tmp_path):
    p = tmp_path / "t.csv"
    p.write_text("task_id,trial,correct\na,0,1\na,1,x\n")
    res = subprocess.run(
        [sys.executable, "-m", "evalnoise", "analyze", str(p)], capture_output=True, text=True
    )
    assert res.returncode == 2, res.stderr
    assert res.stdout == ""
    assert res.stderr.splitlines() == [
        f"evalnoise analyze: error: {p}: row 2: column 'correct': score 'x' is not a number"
    ]


def test_analyze_says_which_columns_it_used(tmp_path, capsys):
    """Defaults are announced on stderr: score is `score`, else `correct` (the example)."""
    assert main(["analyze", str(EXAMPLE), "--group", "model"]) == 0
    err = capsys.readouterr().err
    assert (
        "evalnoise analyze: columns: task=task_id, trial=trial, score=correct, group=model "
        "(group: given by flags; task, trial, score: defaults)"
    ) in err
    p = tmp_path / "t.csv"
    p.write_text("task_id,trial,score,correct\na,0,1,0\na,1,1,0\nb,0,0,0\nb,1,0,1\n")
    assert main(["analyze", str(p), "--json"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["groups"][0]["mean"] == 0.5  # score, not correct (0.25)
    assert "score=score" in captured.err


def test_compare_without_a_group_column_says_so(tmp_path, capsys):
    p = tmp_path / "t.csv"
    p.write_text("agent,task_id,trial,score\np,a,0,1\nq,a,0,0\n")
    assert main(["compare", str(p), "p", "q"]) == 2
    assert "give --group COL" in capsys.readouterr().err


def test_compare_text_says_why_mcnemar_was_skipped(tmp_path, capsys):
    # partial credit: McNemar does not apply; the JSON says null, the text says why
    p = tmp_path / "partial.csv"
    rows = ["task_id,trial,score,agent"]
    for i, (x, y) in enumerate([(0.5, 1), (0, 1), (1, 0.5), (1, 1)]):
        rows += [f"t{i},0,{x},x", f"t{i},0,{y},y"]
    p.write_text("\n".join(rows) + "\n")
    with pytest.warns(RuntimeWarning, match="not binary"):
        out = run_json(capsys, ["compare", str(p), "--group", "agent", "x", "y"])
    assert out["mcnemar"] is None and out["pvalue"] is not None
    with pytest.warns(RuntimeWarning, match="not binary"):
        assert main(["compare", str(p), "--group", "agent", "x", "y"]) == 0
    assert "McNemar          skipped: scores are not binary (0/1)" in capsys.readouterr().out
