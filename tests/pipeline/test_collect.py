"""Reading score shards for the analysis: the trials' numbers, not what the agents wrote."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from evalnoise.pipeline.collect import PAYLOAD_COLUMNS, read_scores
from evalnoise.schema import SCORES


def _shard(path, n, *, drop=()):
    """``n`` rows of a score shard whose text columns are 10 kB each."""
    columns = {}
    for field in SCORES:
        if field.name in drop:
            continue
        if field.name in PAYLOAD_COLUMNS:
            columns[field.name] = pa.array(["x" * 10_000] * n, field.type)
        elif field.name in ("agent", "resource_profile", "scorer", "status"):
            columns[field.name] = pa.array(["a"] * n, field.type)
        elif field.name == "task_id":
            columns[field.name] = pa.array([f"t{i}" for i in range(n)], field.type)
        elif field.name in ("trial", "attempt", "completion_tokens"):
            columns[field.name] = pa.array(list(range(n)), field.type)
        else:
            columns[field.name] = pa.nulls(n, field.type)
    pq.write_table(pa.table(columns), path)
    return path


def test_payload_left_on_disk_unless_asked(tmp_path):
    paths = [_shard(tmp_path / "a.parquet", 50), _shard(tmp_path / "b.parquet", 30)]
    scores = read_scores(paths)
    assert len(scores) == 80
    assert not set(PAYLOAD_COLUMNS) & set(scores.columns)
    assert set(scores.columns) == {f.name for f in SCORES} - set(PAYLOAD_COLUMNS)
    # what the analysis holds is a few bytes a trial, not the agents' 50 kB of text
    assert scores.memory_usage(deep=True).sum() < 80 * 5_000
    full = read_scores(paths, payload=True)
    assert set(full.columns) == {f.name for f in SCORES}
    assert (full["stdout_tail"].str.len() == 10_000).all()


def test_shard_without_a_newer_column_reads_null_there(tmp_path):
    old = _shard(tmp_path / "old.parquet", 3, drop=("completion_tokens", "stdout_tail"))
    new = _shard(tmp_path / "new.parquet", 2)
    scores = read_scores([old, new])
    assert scores["completion_tokens"].isna().sum() == 3
    assert scores["completion_tokens"].dropna().tolist() == [0, 1]
    full = read_scores([old, new], payload=True)
    assert full["stdout_tail"].isna().sum() == 3


def test_a_file_given_twice_is_read_once(tmp_path):
    # an imported table is one file for every group: listed once per group, its trials
    # must still count once each
    one = _shard(tmp_path / "imported.parquet", 7)
    other = _shard(tmp_path / "b.parquet", 3)
    assert len(read_scores([one, one])) == 7
    assert len(read_scores([one, str(one), other, one])) == 10


def test_no_shards_is_an_error():
    with pytest.raises(ValueError, match="no score shards"):
        read_scores([])


def test_only_the_columns_asked_for(tmp_path):
    from evalnoise.attribution.all_analyses import TrialColumns

    paths = [_shard(tmp_path / "a.parquet", 5), _shard(tmp_path / "b.parquet", 4)]
    wanted = TrialColumns().read()
    scores = read_scores(paths, columns=wanted)
    assert len(scores) == 9
    # every column the attribution reads that a shard has, and no other
    assert set(scores.columns) == set(wanted) & {f.name for f in SCORES}
    assert scores["task_id"].tolist() == read_scores(paths)["task_id"].tolist()
    # a payload column is read only with payload=True, even when asked for
    assert "stdout_tail" not in read_scores(paths, columns=["task_id", "stdout_tail"])
    both = read_scores(paths, columns=["task_id", "stdout_tail"], payload=True)
    assert set(both.columns) == {"task_id", "stdout_tail"}


def test_levels_looked_up_once_per_task_are_the_levels_of_every_row():
    import pandas as pd

    from evalnoise.pipeline.collect import _levels_of

    levels = {"a": 1, "b": "hard", "None": 3}
    for tasks in (
        pd.Series(["b", "a", "b", "c", "a"], dtype="str"),
        pd.Series(["b", None, "a"], dtype=object),  # a missing task: row by row, as before
    ):
        assert _levels_of(tasks, levels, str) == [levels.get(str(t)) for t in tasks.tolist()]
