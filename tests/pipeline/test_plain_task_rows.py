"""The generated benchmark's tasks as plain rows: what Snakemake's DAG build reads without
pandas (~0.5 s of every Snakemake start), the same rows and the same per-chunk digests as the
pandas table ``sample_tasks`` writes."""

from __future__ import annotations

import copy
import json
import math
import subprocess
import sys

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pipeline_helpers import ROOT

from evalnoise.pipeline.run_plan import RunPlan
from evalnoise.pipeline.sampling import generated_rows, sample_tasks
from evalnoise.pipeline.settings import load_schema, read_yaml, with_defaults
from evalnoise.pipeline.shard_plan import plain_rows_digest, task_rows_digest


def _python(value):
    """A table cell as a Python value: null (None, NaN, pd.NA) → None, numpy → Python."""
    if value is None or value is pd.NA or value != value:
        return None
    return value.item() if hasattr(value, "item") else value


def _plain(frame: pd.DataFrame) -> list[dict]:
    """The table's rows as Python values."""
    return [
        {k: _python(v) for k, v in row.items()} for row in frame.astype(object).to_dict("records")
    ]


def _chunks(n: int) -> list[str]:
    return [
        f"{start:04d}-{min(start + width, n) - 1:04d}"
        for width in (1, 3, n)
        for start in range(0, n, width)
    ]


@pytest.fixture(scope="module")
def default_benchmark(default_config_raw, schema) -> dict:
    """The default config's benchmark section, defaults filled in (read, never changed)."""
    return with_defaults(copy.deepcopy(default_config_raw), schema)["benchmark"]


BENCHMARKS = [
    {},
    {"n": 1},
    {"n": 40, "seed": 7},
    {"n": 10, "levels": [3, 1]},
    {"n": 12, "cpus": 2, "memory_mb": 300, "time_limit_s": 12.5},
    {"n": 5, "cpus": 0.25, "time_limit_s": 600},
]


@pytest.mark.parametrize("overrides", BENCHMARKS, ids=lambda o: json.dumps(o))
def test_plain_rows_are_the_sampled_table(default_config, overrides):
    benchmark = {**default_config["benchmark"], **overrides}
    table = sample_tasks(benchmark)
    rows = generated_rows(benchmark)
    assert rows == _plain(table)
    # the same Python types as the table's columns read back (2 → 2.0 for cpus)
    assert [type(v) for v in rows[0].values()] == [type(v) for v in _plain(table)[0].values()]
    for chunk in _chunks(len(rows)):
        assert plain_rows_digest(rows, chunk) == task_rows_digest(table, chunk)


@settings(max_examples=60, deadline=None)
@given(
    cpus=st.floats(min_value=1e-12, max_value=1e17, allow_nan=False),
    time_limit_s=st.one_of(
        st.floats(min_value=1e-12, max_value=1e17, allow_nan=False),
        st.decimals(min_value=0, max_value=10**6, places=4).map(float),
    ),
)
def test_a_float_pandas_would_round_is_left_to_pandas(default_benchmark, cpus, time_limit_s):
    """Where pandas' JSON (10 decimals) would change a value, the plain digest declines
    (None) and the DAG asks pandas; where it answers, it is pandas' digest."""
    benchmark = {**default_benchmark, "n": 3, "cpus": cpus}
    benchmark["time_limit_s"] = time_limit_s
    table = sample_tasks(benchmark)
    plain = plain_rows_digest(generated_rows(benchmark), "0000-0002")
    assert plain in (None, task_rows_digest(table, "0000-0002"))
    short = all(float(f"{x:.4f}") == x and x < 1e15 for x in (cpus, time_limit_s))
    assert short <= (plain is not None)  # every value with 4 decimals or fewer: answered


def test_a_value_beyond_the_promise_is_declined():
    row = {"task_id": "t", "cpus": 1 / 3}
    assert plain_rows_digest([row], "0000-0000") is None
    assert plain_rows_digest([{**row, "cpus": math.nan}], "0000-0000") is None
    assert plain_rows_digest([{**row, "cpus": 0.5}], "0000-0000") is not None


def test_the_run_plan_digests_shards_without_pandas(tmp_path):
    """The DAG build's view: RunPlan of the default config, every shard's ``task_rows``
    param, in a fresh interpreter that must not have loaded pandas or pyarrow; and those
    digests are the pandas ones."""
    script = f"""
import json, sys
sys.path.insert(0, {str(ROOT / "src")!r})
from types import SimpleNamespace
from evalnoise.pipeline.settings import load_schema, read_yaml, with_defaults
from evalnoise.pipeline.run_plan import RunPlan
from evalnoise.pipeline.settings import load_schema, read_yaml, with_defaults
schema = load_schema({str(ROOT / "config" / "schemas" / "config.schema.yaml")!r})
config = with_defaults(read_yaml({str(ROOT / "config" / "config.yaml")!r}), schema)
plan = RunPlan.from_config(config)
chunks = plan.plan.chunks
digests = {{c: plan.task_rows_param(SimpleNamespace(chunk=c)) for c in chunks}}
print(json.dumps({{"digests": digests, "heavy": sorted(
    m for m in sys.modules if m.split(".")[0] in ("pandas", "pyarrow"))}}))
"""
    out = subprocess.run(
        [sys.executable, "-c", script], check=True, capture_output=True, text=True, cwd=tmp_path
    )
    found = json.loads(out.stdout)
    assert found["heavy"] == []
    config_path = ROOT / "config" / "config.yaml"
    assert found["digests"], config_path
    schema = load_schema(ROOT / "config" / "schemas" / "config.schema.yaml")
    table = sample_tasks(with_defaults(read_yaml(config_path), schema)["benchmark"])
    assert found["digests"] == {c: task_rows_digest(table, c) for c in found["digests"]}


def test_an_imported_or_file_benchmark_has_no_plain_rows(default_config, tmp_path):
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(
        "\n".join(json.dumps({"id": f"q{i}", "question": "?", "answer": "1"}) for i in range(3))
    )
    config = {**default_config, "benchmark": {**default_config["benchmark"], "source": "file"}}
    config["benchmark"]["path"] = str(tasks)
    config["benchmark"]["n"] = None
    plan = RunPlan.from_config(config)
    assert plan.rows() is None
    with pytest.raises(ValueError, match="generated_rows"):
        generated_rows(config["benchmark"])
    from types import SimpleNamespace

    digest = plan.task_rows_param(SimpleNamespace(chunk="0000-0002"))
    assert digest == task_rows_digest(plan.planned_tasks(), "0000-0002")
