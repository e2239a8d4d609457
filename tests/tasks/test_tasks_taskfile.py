"""Task files: JSONL / CSV / Parquet → TASKS rows; malformed input names file, row, field."""

from __future__ import annotations

import json

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from evalnoise.errors import InputError
from evalnoise.schema import QUESTION_TASK_COLUMNS, TASKS
from evalnoise.tasks import load_task_file, sample_tasks, tasks_table


def _jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


GOOD = [
    {
        "id": "q1",
        "question": "What is 2+2?",
        "answer": "4",
        "level": 1,
        "cpus": 1,
        "memory_mb": 256,
        "time_limit_s": 30,
    },
    {"id": 2, "question": "Capital of France?", "answer": "Paris"},
    {"id": "q3", "question": "Half?", "answer": 0.5, "extra": "ignored"},
]


def test_jsonl(tmp_path):
    tasks = load_task_file(_jsonl(tmp_path / "t.jsonl", GOOD))
    assert list(tasks.columns) == list(QUESTION_TASK_COLUMNS)
    assert tasks["task_id"].tolist() == ["q1", "2", "q3"]
    assert tasks["answer"].tolist() == ["4", "Paris", "0.5"]
    assert tasks["level"].tolist()[0] == "1" and pd.isna(tasks["level"][1])
    assert tasks["memory_mb"][0] == 256 and pd.isna(tasks["memory_mb"][1])
    table = tasks_table(tasks)
    assert table.schema == TASKS and table.num_rows == 3


def test_csv_and_parquet_with_mapping(tmp_path):
    frame = pd.DataFrame(
        {"qid": ["a", "b"], "prompt": ["x?", "y?"], "gold": ["1", "2"], "mem": ["512", ""]}
    )
    csv = tmp_path / "t.csv"
    frame.to_csv(csv, index=False)
    mapping = {"id": "qid", "question": "prompt", "answer": "gold", "memory_mb": "mem"}
    tasks = load_task_file(csv, columns=mapping)
    assert tasks["task_id"].tolist() == ["a", "b"]
    assert tasks["memory_mb"][0] == 512 and pd.isna(tasks["memory_mb"][1])
    parquet = tmp_path / "t.parquet"
    pq.write_table(pa.Table.from_pandas(frame.assign(mem=[512, None])), parquet)
    same = load_task_file(parquet, columns=mapping)
    pd.testing.assert_frame_equal(tasks, same)


BAD = [
    # (rows, row, column, message fragment)
    ([{"question": "q", "answer": "a"}], None, "id", "required column"),
    (
        [{"id": "1", "question": "q", "answer": "a"}, {"id": "2", "question": "", "answer": "b"}],
        2,
        "question",
        "empty",
    ),
    ([{"id": "1", "question": "q", "answer": None}], 1, "answer", "missing"),
    (
        [{"id": "1", "question": "q", "answer": "a"}, {"id": "1", "question": "r", "answer": "b"}],
        2,
        "id",
        "duplicate id '1' (first in row 1)",
    ),
    (
        [{"id": "1", "question": "q", "answer": "a"}, {"id": 1, "question": "r", "answer": "b"}],
        2,
        "id",
        "duplicate",
    ),
    (
        [{"id": "1", "question": "q", "answer": "a", "memory_mb": 12.5}],
        1,
        "memory_mb",
        "whole number",
    ),
    ([{"id": "1", "question": "q", "answer": "a", "cpus": -1}], 1, "cpus", "positive"),
    (
        [{"id": "1", "question": "q", "answer": "a", "time_limit_s": "soon"}],
        1,
        "time_limit_s",
        "not a number",
    ),
    ([{"id": "1", "question": "q", "answer": True}], 1, "answer", "boolean"),
    ([{"id": "1", "question": ["a list"], "answer": "a"}], 1, "question", "expected text"),
    ([{"id": "1", "question": "q", "answer": "a", "cpus": False}], 1, "cpus", "boolean"),
]


@pytest.mark.parametrize(("rows", "row", "column", "fragment"), BAD)
def test_malformed_rows_name_file_row_and_field(tmp_path, rows, row, column, fragment):
    path = _jsonl(tmp_path / "bad.jsonl", rows)
    with pytest.raises(InputError) as info:
        load_task_file(path)
    err = info.value
    assert err.path == str(path) and err.row == row and err.column == column
    assert fragment in str(err)
    assert str(path) in str(err)


def test_file_level_errors(tmp_path):
    with pytest.raises(InputError, match="no such file"):
        load_task_file(tmp_path / "missing.jsonl")
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"id": "1", "question": "q", "answer": "a"}\n{not json\n')
    with pytest.raises(InputError, match="line 2 is not valid JSON"):
        load_task_file(broken)
    csv = tmp_path / "t.csv"
    csv.write_text("id,question,answer\n1,q,a\n2,,b\n")
    with pytest.raises(InputError) as info:
        load_task_file(csv)
    assert (info.value.row, info.value.column) == (2, "question")
    with pytest.raises(InputError, match="unknown task field"):
        load_task_file(csv, columns={"prompt": "question"})
    with pytest.raises(InputError) as info:
        load_task_file(csv, columns={"question": "prompt"})
    assert info.value.column == "prompt"
    empty = tmp_path / "e.jsonl"
    empty.write_text("\n")
    with pytest.raises(InputError):
        load_task_file(empty)


def test_sample_tasks_is_seeded(tmp_path):
    rows = [{"id": str(i), "question": f"q{i}", "answer": str(i)} for i in range(30)]
    tasks = load_task_file(_jsonl(tmp_path / "t.jsonl", rows))
    a, b = sample_tasks(tasks, 10, seed=42), sample_tasks(tasks, 10, seed=42)
    pd.testing.assert_frame_equal(a, b)
    assert a["task_id"].tolist() == tasks.sample(n=10, random_state=42)["task_id"].tolist()
    assert a["task_id"].tolist() != sample_tasks(tasks, 10, seed=1)["task_id"].tolist()
    assert a["sampling_seed"].eq(42).all()
    everything = sample_tasks(tasks, None, seed=3)
    assert everything["task_id"].tolist() == tasks["task_id"].tolist()
    with pytest.raises(ValueError):
        sample_tasks(tasks, 0, seed=1)
