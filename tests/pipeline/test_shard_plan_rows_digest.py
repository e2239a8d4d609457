"""task_rows_digest keeps digests per SHA-256 of the rows' JSON (Snakemake asks for the same
chunk once per agent × resource profile): the same digests as encoding every time, and a
changed row is a new digest even in the same frame object."""

from __future__ import annotations

import hashlib
import json

from evalnoise.pipeline import shard_plan
from evalnoise.pipeline.sampling import sample_tasks
from evalnoise.pipeline.shard_plan import ENVIRONMENT_TASK_COLUMNS, parse_range, task_rows_digest


def _encoded(tasks, chunk: str) -> str:
    """The digest as task_rows_digest always computed it (no memo): the rows' JSON without
    the environment tasks' columns where they are all null (question tasks' digests, and so
    their finished shards, stay what they were before environment tasks existed)."""
    first, last = parse_range(chunk)
    rows = tasks.iloc[first : last + 1]
    rows = rows.drop(
        columns=[c for c in ENVIRONMENT_TASK_COLUMNS if c in rows and rows[c].isna().all()]
    )
    records = json.loads(rows.to_json(orient="records", date_format="iso"))
    text = json.dumps(records, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def test_kept_digests_are_the_encoded_ones(default_config, monkeypatch):
    monkeypatch.setattr(shard_plan, "_ROWS_DIGESTS", {})
    tasks = sample_tasks({**default_config["benchmark"], "n": 40})
    chunks = [
        f"{start:04d}-{min(start + width, 40) - 1:04d}"
        for width in (1, 6, 40)
        for start in range(0, 40, width)
    ]
    for _ in range(2):  # cold, then kept
        assert [task_rows_digest(tasks, c) for c in chunks] == [_encoded(tasks, c) for c in chunks]
    assert len(shard_plan._ROWS_DIGESTS) == len(set(chunks))


def test_an_edited_row_in_the_same_frame_is_a_new_digest(default_config, monkeypatch):
    monkeypatch.setattr(shard_plan, "_ROWS_DIGESTS", {})
    tasks = sample_tasks({**default_config["benchmark"], "n": 8})
    before = task_rows_digest(tasks, "0000-0005")
    tasks.loc[2, "memory_mb"] = 4096  # in place: the same object
    after = task_rows_digest(tasks, "0000-0005")
    assert after != before
    assert after == _encoded(tasks, "0000-0005")
    assert task_rows_digest(tasks, "0006-0007") == _encoded(tasks, "0006-0007")


def test_the_kept_digests_are_bounded(default_config, monkeypatch):
    monkeypatch.setattr(shard_plan, "_ROWS_DIGESTS", {})
    monkeypatch.setattr(shard_plan, "_ROWS_DIGESTS_KEPT", 3)
    tasks = sample_tasks({**default_config["benchmark"], "n": 8})
    for row in range(8):
        assert task_rows_digest(tasks, f"{row:04d}-{row:04d}") == _encoded(
            tasks, f"{row:04d}-{row:04d}"
        )
        assert len(shard_plan._ROWS_DIGESTS) <= 3
