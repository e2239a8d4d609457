"""Reading and validating trial tables: every bad input names file, row and column."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from evalnoise.errors import InputError
from evalnoise.trial_table import (
    METADATA_KEY,
    Columns,
    describe_columns,
    read_any,
    read_trials,
    resolve_columns,
    shown_group,
    stored_roles,
    trial_labels,
    validate_trials,
)

COLS = Columns(task="task_id", trial="trial", score="correct", group="agent")


def write_csv(tmp_path, text, name="t.csv"):
    p = tmp_path / name
    p.write_text(text)
    return p


def test_reads_all_three_formats_identically(tmp_path):
    frame = pd.DataFrame(
        {
            "agent": ["a", "a", "b", "b"],
            "task_id": ["x", "x", "x", "y"],
            "trial": [0, 1, 0, 0],
            "correct": [1, 0, 1, 1],
        }
    )
    frame.to_csv(tmp_path / "t.csv", index=False)
    frame.to_parquet(tmp_path / "t.parquet")
    with open(tmp_path / "t.jsonl", "w") as fh:
        for rec in frame.to_dict(orient="records"):
            fh.write(json.dumps(rec) + "\n")
    outs = [read_trials(tmp_path / f"t.{ext}", COLS) for ext in ("csv", "parquet", "jsonl")]
    for out in outs[1:]:
        pd.testing.assert_frame_equal(outs[0], out)
    assert list(outs[0].columns) == ["group", "task", "trial", "score"]
    np.testing.assert_array_equal(outs[0]["score"], [1.0, 0.0, 1.0, 1.0])


def test_booleans_and_words_become_scores(tmp_path):
    p = write_csv(tmp_path, "task_id,trial,correct\nx,0,true\nx,1,False\ny,0,C\ny,1,0.5\n")
    out = read_trials(p)
    np.testing.assert_array_equal(out["score"], [1.0, 0.0, 1.0, 0.5])
    assert set(out["group"]) == {"all"}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "task_id,trial,correct\nx,0,1\nx,1,maybe\n",
            r"t\.csv: row 2: column 'correct': "
            r"score 'maybe' is not a number",
        ),
        ("task_id,trial,correct\nx,0,1\nx,1,1.5\n", r"row 2: column 'correct': .*outside \[0, 1\]"),
        ("task_id,trial,correct\nx,0,1\nx,1,-0.1\n", r"row 2: .*outside \[0, 1\]"),
        ("task_id,trial,correct\nx,0,1\nx,1,\n", r"row 2: column 'correct': score is missing"),
        ("task_id,trial,correct\nx,0,1\n,1,1\n", r"row 2: column 'task_id': value is missing"),
        (
            "task_id,trial,correct\nx,0,1\ny,0,1\nx,0,0\n",
            r"row 3: column 'trial': duplicate trial: task 'x', trial '0' also appears in row 1",
        ),
        (
            "task,trial,correct\nx,0,1\n",
            r"column 'task_id': no such column \(the file has: "
            r"task, trial, correct\)",
        ),
        ("task_id,trial,correct\n", r"the file has no rows"),
        ("", r"the file is empty"),
    ],
)
def test_bad_csv_names_file_row_and_column(tmp_path, text, expected):
    p = write_csv(tmp_path, text)
    with pytest.raises(InputError, match=expected):
        read_trials(p)


def test_duplicates_are_per_group(tmp_path):
    p = write_csv(tmp_path, "agent,task_id,trial,correct\na,x,0,1\nb,x,0,0\n")
    assert len(read_trials(p, COLS)) == 2
    p = write_csv(tmp_path, "agent,task_id,trial,correct\na,x,0,1\nb,x,0,0\na,x,0,1\n")
    with pytest.raises(InputError, match=r"row 3: .*group 'a', task 'x', trial '0'"):
        read_trials(p, COLS)


def test_bad_jsonl_line_is_named(tmp_path):
    p = tmp_path / "t.jsonl"
    p.write_text('{"task_id": "x", "trial": 0, "correct": 1}\n{"task_id": \n')
    with pytest.raises(InputError, match=r"t\.jsonl: line 2 is not valid JSON"):
        read_trials(p)


def test_missing_file_and_unknown_type(tmp_path):
    with pytest.raises(InputError, match="no such file"):
        read_trials(tmp_path / "nope.csv")
    p = tmp_path / "t.xlsx"
    p.write_text("x")
    with pytest.raises(InputError, match=r"unknown file type '\.xlsx'"):
        read_trials(p)


def test_parquet_non_numeric_score_names_row(tmp_path):
    pd.DataFrame({"task_id": ["x", "y"], "trial": [0, 0], "correct": ["1", "n/a"]}).to_parquet(
        tmp_path / "t.parquet"
    )
    with pytest.raises(InputError, match=r"row 2: column 'correct': score 'n/a'"):
        read_trials(tmp_path / "t.parquet")


def test_trial_labels_one_and_one_point_zero_are_one_trial(tmp_path):
    # CSV text "1" and "1.0" for one task: the same trial, so a duplicate
    p = write_csv(tmp_path, "task_id,trial,score\nx,1,1\nx,1.0,0\n")
    with pytest.raises(InputError, match=r"row 2: column 'trial': duplicate trial: task 'x', "):
        read_trials(p)
    # JSON floats, Parquet integers and CSV text give the same labels
    frame = pd.DataFrame({"task_id": ["x", "x"], "trial": [1, 2], "score": [1, 0]})
    frame.to_parquet(tmp_path / "t.parquet")
    (tmp_path / "t.jsonl").write_text(
        '{"task_id": "x", "trial": 1.0, "score": 1}\n{"task_id": "x", "trial": 2.0, "score": 0}\n'
    )
    write_csv(tmp_path, "task_id,trial,score\nx,01,1\nx, 2 ,0\n")
    labels = [list(read_trials(tmp_path / f"t.{e}")["trial"]) for e in ("parquet", "jsonl", "csv")]
    assert labels == [["1", "2"]] * 3


def test_trial_labels_keep_text_and_huge_numbers():
    labels = trial_labels(pd.Series(["run2", "1.50", "-0", "12345678901234567890", "nan"]))
    assert list(labels) == ["run2", "1.5", "0", "12345678901234567890", "nan"]


def test_missing_column_lists_every_column(tmp_path):
    names = [f"c{i}" for i in range(15)]
    p = write_csv(tmp_path, ",".join(names) + "\n" + ",".join("1" * 15) + "\n")
    with pytest.raises(InputError) as err:
        read_trials(p, Columns(task="c0", trial="c1", score="c2", group="agent"))
    assert f"no such column (the file has: {', '.join(names)})" in str(err.value)


def test_no_score_column_lists_every_column(tmp_path):
    p = write_csv(tmp_path, "task_id,trial,points\nx,0,1\n")
    with pytest.raises(InputError, match=r"neither 'score' nor 'correct' \(the file has: "):
        read_trials(p)


def test_score_is_the_default_and_correct_the_fallback(tmp_path):
    p = write_csv(tmp_path, "task_id,trial,score,correct\nx,0,1,0\nx,1,1,0\n")
    assert list(read_trials(p)["score"]) == [1.0, 1.0]
    # an empty score column (the pipeline's scores table) falls back to correct
    p = write_csv(tmp_path, "task_id,trial,score,correct\nx,0,,0\nx,1,,1\n")
    assert list(read_trials(p)["score"]) == [0.0, 1.0]


def _with_roles(tmp_path, roles, name="t.parquet"):
    frame = pd.DataFrame(
        {"who": ["a", "a", "b"], "item": ["x", "x", "x"], "rep": [0, 1, 0], "pts": [1, 0, 1]}
    )
    table = pa.Table.from_pandas(frame, preserve_index=False)
    blob = json.dumps({"format": "test", "columns": roles}).encode()
    path = tmp_path / name
    pq.write_table(
        table.replace_schema_metadata({**table.schema.metadata, METADATA_KEY: blob}), path
    )
    return path


def test_stored_roles_are_the_defaults_and_flags_win(tmp_path):
    roles = {"task": "item", "trial": "rep", "score": "pts", "group": "who"}
    path = _with_roles(tmp_path, roles)
    raw = read_any(path)
    assert stored_roles(raw) == roles
    out = read_trials(path)
    assert list(out["group"]) == ["a", "a", "b"] and list(out["task"]) == ["x"] * 3
    columns, sources = resolve_columns(raw, Columns(group="item"), path=str(path))
    assert columns == Columns(task="item", trial="rep", score="pts", group="item")
    assert sources == {"task": "stored", "trial": "stored", "score": "stored", "group": "given"}
    assert describe_columns(columns, sources) == (
        "columns: task=item, trial=rep, score=pts, group=item "
        "(group: given by flags; task, trial, score: stored in the file by evalnoise)"
    )


def test_stored_role_naming_a_missing_column_is_an_error(tmp_path):
    path = _with_roles(tmp_path, {"task": "item", "trial": "rep", "score": "gone"})
    with pytest.raises(InputError, match=r"stored metadata names score column 'gone'.*who, item"):
        read_trials(path)


def test_group_keys_joined_by_nul_are_shown_readably(tmp_path):
    """The pipeline's import keys groups by agent NUL resource profile: never shown raw."""
    frame = pd.DataFrame(
        {"g": ["all\x00imported"] * 2, "task_id": ["x", "x"], "trial": [0, 0], "score": [1, 0]}
    )
    with pytest.raises(InputError) as err:
        validate_trials(frame, Columns(group="g"), path="t.csv")
    assert "group 'all / imported'" in str(err.value)
    assert "\x00" not in str(err.value) and "\\x00" not in str(err.value)
    assert shown_group("a\x00b") == "a / b"


def test_a_flag_replaces_a_stale_stored_role(tmp_path):
    path = _with_roles(tmp_path, {"task": "item", "trial": "rep", "score": "gone"})
    assert list(read_trials(path, Columns(score="pts", group="who"))["score"]) == [1.0, 0.0, 1.0]


@pytest.mark.parametrize("suffix", [".csv", ".jsonl"])
def test_a_byte_that_is_no_utf8_is_named_by_line_and_offset(tmp_path, suffix):
    """Issue 21.7: a 0xff byte at line 16 names line 16 and its offset in the file, not a
    position inside some decoder buffer."""
    if suffix == ".csv":
        lines = [b"task_id,trial,score"] + [f"t{i},0,1".encode() for i in range(14)]
    else:
        lines = [f'{{"task_id": "t{i}", "trial": 0, "score": 1}}'.encode() for i in range(15)]
    lines.append(b"t\xffx,0,1" if suffix == ".csv" else b'{"task_id": "t\xff", "trial": 0}')
    data = b"\n".join(lines) + b"\n"
    path = tmp_path / f"bad{suffix}"
    path.write_bytes(data)
    with pytest.raises(InputError) as info:
        read_any(path)
    message = str(info.value)
    offset = data.index(b"\xff")
    assert message.startswith(f"{path}: line 16: byte 0xff at offset {offset} ")
    assert "UTF-8" in message and "\n" not in message
