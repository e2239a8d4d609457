"""Any CSV/JSONL/Parquet table with a column mapping → TRIALS."""

from __future__ import annotations

import json
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

import pandas as pd
import pytest

from evalnoise.errors import InputError
from evalnoise.importers import import_trials
from evalnoise.importers.table import parse_mapping

CSV = """item_id,model_id,score,epoch
q1,m1,1,1
q1,m1,0,2
q2,m1,1,1
q2,m1,1,2
q1,m2,0,2
q1,m2,1,1
"""
MAPPING = "task=item_id,trial=epoch,score=score,agent=model_id"


@pytest.fixture
def csv(tmp_path: Path) -> Path:
    path = tmp_path / "scores.csv"
    path.write_text(CSV)
    return path


def test_csv_with_mapping(csv: Path) -> None:
    result = import_trials("table", [csv], column_mapping=MAPPING)
    rows = result.table.to_pylist()
    got = {(r["agent"], r["task_id"], r["trial"]): r["score"] for r in rows}
    # epochs 1, 2 become trials 0, 1 — in epoch order, not row order (m2's rows are swapped)
    assert got == {
        ("m1", "q1", 0): 1.0, ("m1", "q1", 1): 0.0, ("m1", "q2", 0): 1.0,
        ("m1", "q2", 1): 1.0, ("m2", "q1", 0): 1.0, ("m2", "q1", 1): 0.0,
    }  # fmt: skip
    assert {r["status"] for r in rows} == {"ok"}
    md = result.metadata
    assert md["column_mapping"] == {
        "task": "item_id",
        "score": "score",
        "trial": "epoch",
        "agent": "model_id",
    }
    assert "column 'epoch'" in md["rule"]
    assert md["options"]["column_mapping"] == MAPPING


def test_mapping_as_dict_and_jsonl(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in [
        {"q": 7, "ok": True, "run": "run10"},
        {"q": 7, "ok": False, "run": "run9"},
    ]) + "\n")  # fmt: skip
    rows = import_trials(
        "table", [path], agent="me", column_mapping={"task": "q", "score": "ok", "trial": "run"}
    ).table.to_pylist()
    # text trial labels in natural order: run9 before run10; numeric task 7 stays "7"
    assert [(r["task_id"], r["trial"], r["score"]) for r in rows] == [("7", 0, 0.0), ("7", 1, 1.0)]


def test_schema_names_need_no_mapping_parquet(tmp_path: Path) -> None:
    frame = pd.DataFrame({
        "agent": ["a", "a", "a"],
        "task_id": ["t1", "t1", "t2"],
        "trial": [0, 1, 0],
        "score": [0.25, None, 1.0],
        "status": ["ok", "oom_killed", "ok"],
        "started_at": pd.to_datetime(["2025-01-01T00:00:00Z"] * 3),
        "duration_s": [1.5, 2.0, 3.0],
        "unrelated": [1, 2, 3],
    })  # fmt: skip
    path = tmp_path / "trials.parquet"
    frame.to_parquet(path)
    rows = import_trials("table", [path]).table.to_pylist()
    assert [(r["task_id"], r["trial"], r["status"], r["score"]) for r in rows] == [
        ("t1", 0, "ok", 0.25), ("t1", 1, "oom_killed", None), ("t2", 0, "ok", 1.0),
    ]  # fmt: skip
    assert rows[0]["started_at"] == datetime(2025, 1, 1, tzinfo=UTC)
    assert rows[2]["duration_s"] == 3.0


def test_row_order_numbering_without_trial_column(tmp_path: Path) -> None:
    a = tmp_path / "a.csv"
    a.write_text("task,correct\nx,true\nx,no\n")
    b = tmp_path / "b.csv"
    b.write_text("task,correct\nx,1\n")
    result = import_trials("table", [b, a], agent="m", column_mapping="task=task,score=correct")
    rows = result.table.to_pylist()
    # files in the order given: b's row is trial 0
    assert [(r["trial"], r["score"]) for r in rows] == [(0, 1.0), (1, 1.0), (2, 0.0)]
    assert "row order" in result.metadata["rule"]


@pytest.mark.parametrize(
    ("csv_text", "row", "column", "message"),
    [
        ("item_id,model_id,score,epoch\nq1,m1,1,1\nq1,m1,2,2\n", 2, "score", "outside [0, 1]"),
        ("item_id,model_id,score,epoch\nq1,m1,1,1\nq1,m1,abc,2\n", 2, "score", "not a number"),
        ("item_id,model_id,score,epoch\nq1,m1,1,1\nq1,m1,,2\n", 2, "score", "score is missing"),
        ("item_id,model_id,score,epoch\nq1,m1,1,1\nq1,m1,0,1\n", 2, None, "duplicate trial"),
        ("item_id,model_id,score,epoch\nq1,m1,1,1\n,m1,0,2\n", 2, "item_id", "task is missing"),
        ("item_id,model_id,score,epoch\nq1,m1,1,1\nq1,m1,0,\n", 2, "epoch", "trial is missing"),
        ("item_id,model_id,score,epoch\nq1,,1,1\n", 1, "model_id", "agent is missing"),
    ],
)
def test_malformed_rows(
    tmp_path: Path, csv_text: str, row: int, column: str | None, message: str
) -> None:
    path = tmp_path / "bad.csv"
    path.write_text(csv_text)
    with pytest.raises(InputError) as err:
        import_trials("table", [path], column_mapping=MAPPING)
    assert (err.value.path, err.value.row, err.value.column) == (str(path), row, column)
    assert message in str(err.value)


def test_bad_status_and_duration(tmp_path: Path) -> None:
    path = tmp_path / "s.csv"
    path.write_text("task_id,score,status,duration_s\nt,1,crashed,1\n")
    with pytest.raises(InputError, match="status 'crashed'") as err:
        import_trials("table", [path], agent="a")
    assert err.value.column == "status"
    path.write_text("task_id,score,duration_s\nt,1,-3\n")
    with pytest.raises(InputError, match="not ≥ 0"):
        import_trials("table", [path], agent="a")


def test_mapping_errors(csv: Path) -> None:
    with pytest.raises(InputError, match="unknown column-mapping key 'model'"):
        import_trials("table", [csv], column_mapping="task=item_id,model=model_id")
    with pytest.raises(InputError, match="not KEY=COLUMN"):
        import_trials("table", [csv], column_mapping="task")
    with pytest.raises(InputError, match="given twice"):
        parse_mapping("task=a,task=b")
    with pytest.raises(InputError, match="no such column") as err:
        import_trials("table", [csv], column_mapping="task=question,score=score", agent="a")
    assert err.value.column == "question"
    with pytest.raises(InputError, match="no task column"):
        import_trials("table", [csv], column_mapping="score=score", agent="a")
    with pytest.raises(InputError, match="no agent column"):
        import_trials("table", [csv], column_mapping="task=item_id,trial=epoch")
    with pytest.raises(InputError, match="both --agent and an agent column"):
        import_trials("table", [csv], column_mapping=MAPPING, agent="x")


def test_full_gpqa_scores(shared_data) -> None:
    """198 items × 5 epochs × 2 models (shared/data/README.md)."""
    path = shared_data("gpqa/gpqa_diamond_scores.csv")
    result = import_trials("table", [path], column_mapping=MAPPING)
    rows = result.table.to_pylist()
    assert len(rows) == 198 * 5 * 2
    per = Counter((r["agent"], r["task_id"]) for r in rows)
    assert len(per) == 2 * 198 and set(per.values()) == {5}
    assert {r["trial"] for r in rows} == {0, 1, 2, 3, 4}
    raw = pd.read_csv(path)
    ours = pd.DataFrame(rows).groupby("agent")["score"].mean()
    theirs = raw.groupby("model_id")["score"].mean()
    assert ours.to_dict() == pytest.approx(theirs.to_dict())


def test_missing_mapped_column_lists_every_column(tmp_path: Path) -> None:
    names = [f"col{i}" for i in range(25)]
    path = tmp_path / "wide.csv"
    path.write_text(",".join(names) + "\n" + ",".join("1" * 25) + "\n")
    with pytest.raises(InputError) as err:
        import_trials("table", [path], agent="m", column_mapping="task=col0,score=nope")
    assert f"(the file has: {', '.join(names)})" in str(err.value)
    assert err.value.column == "nope"
