"""Chart functions: input checks, the data they draw, and offline rendering."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import vl_convert as vlc

from evalnoise.analysis import per_task_table
from evalnoise.report import charts
from evalnoise.report._render import (
    PNG_SCALE,
    VL_VERSION,
    PngRenderer,
    chart_page,
    chart_spec,
    png_spec,
    script_json,
    write_chart,
)

EXTERNAL = re.compile(r"""(?:src|href)\s*=\s*["']?\s*(?:https?:)?//""", re.IGNORECASE)


def _datasets(spec: dict) -> list[list[dict]]:
    return list(spec.get("datasets", {}).values())


def _conv_table() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "group": ["g"] * 3 + ["h"] * 3,
            "trials": [2, 8, 16] * 2,
            "icc_mean": [0.3, 0.4, 0.45, np.nan, 0.5, 0.6],
            "icc_p05": [0.1, 0.2, 0.4, np.nan, 0.4, 0.55],
            "icc_p95": [0.5, 0.6, 0.5, np.nan, 0.6, 0.65],
            "plugin_mean": [0.5, 0.48, 0.46, 0.7, 0.65, 0.62],
            "plugin_p05": [0.3, 0.4, 0.44, 0.6, 0.6, 0.6],
            "plugin_p95": [0.7, 0.6, 0.5, 0.8, 0.7, 0.64],
            "full_icc": [0.46] * 3 + [0.61] * 3,
            "full_plugin": [0.46] * 3 + [0.62] * 3,
            "converged_at": [4] * 3 + [None] * 3,
        }
    )


def test_per_task_chart_ranks_within_group(example_frame: pd.DataFrame) -> None:
    spec = chart_spec(charts.per_task_chart(per_task_table(example_frame)))
    (rows,) = _datasets(spec)
    assert len(rows) == 100
    for group in {r["group"] for r in rows}:
        ranked = sorted((r for r in rows if r["group"] == group), key=lambda r: r["rank"])
        assert [r["rank"] for r in ranked] == list(range(1, 51))
        means = [r["mean"] for r in ranked]
        assert means == sorted(means, reverse=True)
    assert spec["facet"]["row"]["field"] == "group"


@pytest.mark.parametrize(
    "func,columns",
    [
        (charts.per_task_chart, ["group", "task", "n", "mean", "ci_low"]),
        (charts.tidy_convergence, ["group", "trials", "icc_mean"]),
        (charts.budget_chart, ["n_tasks", "trials"]),
        (charts.infra_chart, ["resource_profile", "agent", "accuracy"]),
        (charts.comparisons_chart, ["a", "b", "diff", "ci_low"]),
    ],
)
def test_missing_columns_are_named(func, columns: list[str]) -> None:
    frame = pd.DataFrame({c: [1] for c in columns})
    with pytest.raises(ValueError, match="missing columns"):
        func(frame)


def test_empty_table_is_refused() -> None:
    with pytest.raises(ValueError, match="no rows"):
        charts.budget_chart(pd.DataFrame(columns=["n_tasks", "trials", "se"]))


def test_tidy_convergence_long_form() -> None:
    tidy = charts.tidy_convergence(_conv_table())
    assert list(tidy.columns) == [
        "group",
        "trials",
        "estimator",
        "mean",
        "low",
        "high",
        "reference",
    ]
    # 12 (group, trials, estimator) rows minus the one NaN ANOVA mean
    assert len(tidy) == 11
    anova, plugin = charts.ESTIMATORS
    g_anova = tidy[(tidy["group"] == "g") & (tidy["estimator"] == anova)]
    assert g_anova["mean"].tolist() == [0.3, 0.4, 0.45]
    assert g_anova["low"].tolist() == [0.1, 0.2, 0.4]
    assert set(g_anova["reference"]) == {0.46}
    h_plugin = tidy[(tidy["group"] == "h") & (tidy["estimator"] == plugin)]
    assert h_plugin["trials"].tolist() == [2, 8, 16]
    assert set(h_plugin["reference"]) == {0.62}


def test_the_convergence_chart_reads_the_table_the_pipeline_writes() -> None:
    # two names, two concepts: the columns the pipeline writes and the subset the chart needs
    from evalnoise.pipeline.stages import CONVERGENCE_TABLE_COLUMNS

    assert set(charts.CONVERGENCE_CHART_COLUMNS) < set(CONVERGENCE_TABLE_COLUMNS)
    written = _conv_table().assign(agent="a", resource_profile="1x")
    tidy = charts.tidy_convergence(written[list(CONVERGENCE_TABLE_COLUMNS)])
    assert len(tidy) == 11
    for column in charts.CONVERGENCE_CHART_COLUMNS:
        with pytest.raises(ValueError, match=rf"missing columns \['{column}'\]"):
            charts.tidy_convergence(written.drop(columns=[column]))


def test_tidy_convergence_without_full_values() -> None:
    tidy = charts.tidy_convergence(_conv_table().drop(columns=["full_icc", "full_plugin"]))
    assert tidy["reference"].isna().all()
    spec = chart_spec(charts.convergence_chart(tidy))
    marks = [layer["mark"]["type"] for layer in spec["spec"]["layer"]]
    assert marks == ["area", "line"]  # no reference rule without reference values


def test_convergence_chart_layers_and_log_axis() -> None:
    spec = chart_spec(charts.convergence_chart(charts.tidy_convergence(_conv_table())))
    marks = [layer["mark"]["type"] for layer in spec["spec"]["layer"]]
    assert marks == ["area", "line", "rule"]
    x = spec["spec"]["layer"][0]["encoding"]["x"]
    assert x["scale"]["type"] == "log" and x["axis"]["values"] == [2, 8, 16]
    short = charts.tidy_convergence(_conv_table().assign(trials=[2, 3, 4] * 2))
    x = chart_spec(charts.convergence_chart(short))["spec"]["layer"][0]["encoding"]["x"]
    assert "type" not in x["scale"]  # a grid spanning less than 8× stays linear


def test_recommended_allocation_defaults_to_smallest_se_then_more_tasks() -> None:
    budget = pd.DataFrame({"n_tasks": [10, 20, 40], "trials": [4, 2, 1], "se": [0.05, 0.03, 0.03]})
    assert charts.recommended_allocation(budget).tolist() == [False, False, True]
    grouped = pd.concat(
        [budget.assign(group="a"), budget.assign(group="b", se=[0.01, 0.02, 0.03])],
        ignore_index=True,
    )
    assert charts.recommended_allocation(grouped).tolist() == [
        False,
        False,
        True,
        True,
        False,
        False,
    ]
    explicit = budget.assign(recommended=[True, False, False])
    assert charts.recommended_allocation(explicit).tolist() == [True, False, False]


def test_budget_chart_labels_the_recommendation() -> None:
    budget = pd.DataFrame({"n_tasks": [100, 10], "trials": [4, 40], "se": [0.02, 0.06]})
    spec = chart_spec(charts.budget_chart(budget))
    (rows,) = _datasets(spec)
    best = [r for r in rows if r["recommended"]]
    assert [r["label"] for r in best] == ["100 tasks × 4 trials"]


def test_comparisons_chart_colours_by_holm_p() -> None:
    comps = [
        {"a": "x", "b": "y", "diff": 0.1, "ci_low": 0.02, "ci_high": 0.18, "pvalue_holm": 0.01},
        {"a": "x", "b": "z", "diff": 0.0, "ci_low": -0.1, "ci_high": 0.1, "pvalue_holm": 0.9},
        {"a": "y", "b": "z", "diff": 0.0, "ci_low": -0.1, "ci_high": 0.1, "pvalue_holm": None},
    ]
    spec = chart_spec(charts.comparisons_chart(pd.DataFrame(comps)))
    (rows,) = _datasets(spec)
    assert [r["significance"] for r in rows] == [
        "Holm p < 0.05",
        "Holm p ≥ 0.05",
        "p not available",
    ]
    assert [r["pair"] for r in rows] == ["x − y", "x − z", "y − z"]
    plain = chart_spec(charts.comparisons_chart(pd.DataFrame(comps), p_column=None))
    assert "significance" not in _datasets(plain)[0][0]


def test_comparisons_chart_facets_by_kind() -> None:
    comps = pd.DataFrame(
        {
            "kind": ["agents", "resource profiles"],
            "a": ["x", "1x"],
            "b": ["y", "3x"],
            "diff": [0.1, -0.03],
            "ci_low": [0.0, -0.06],
            "ci_high": [0.2, 0.0],
        }
    )
    spec = chart_spec(charts.comparisons_chart(comps))
    assert spec["facet"]["row"]["field"] == "kind"


def test_infra_chart_keeps_profile_order() -> None:
    infra = pd.DataFrame(
        {
            "resource_profile": ["uncapped", "1x", "3x"],
            "agent": ["a"] * 3,
            "accuracy": [0.6, 0.5, 0.55],
            "ci_low": [0.5, 0.4, 0.45],
            "ci_high": [0.7, 0.6, 0.65],
            "infra_error_rate": [0.005, 0.058, 0.021],
            "infra_ci_low": [0.0, 0.04, 0.01],
            "infra_ci_high": [0.01, 0.08, 0.03],
        }
    )
    spec = chart_spec(charts.infra_chart(infra))
    assert len(spec["hconcat"]) == 2
    x = spec["hconcat"][0]["layer"][0]["encoding"]["x"]
    assert x["sort"] == ["uncapped", "1x", "3x"]


def test_script_json_cannot_close_the_script_element() -> None:
    text = script_json({"task": "</script><script>alert(1)</script>", "x": "a & b"})
    assert "<" not in text and ">" not in text and "&" not in text
    assert json.loads(text) == {"task": "</script><script>alert(1)</script>", "x": "a & b"}


def test_chart_page_is_offline_and_escaped() -> None:
    hostile = "</script><script>alert(1)</script>"
    per_task = pd.DataFrame(
        {
            "group": [hostile],
            "task": ["t"],
            "n": [3],
            "mean": [0.5],
            "ci_low": [0.1],
            "ci_high": [0.9],
        }
    )
    page = chart_page("title <b>", chart_spec(charts.per_task_chart(per_task)))
    assert page.count("</script>") == 2  # the bundle's and the embed script's
    assert "alert(1)" in page and "<script>alert" not in page
    assert "<title>title &lt;b&gt;</title>" in page
    assert not EXTERNAL.search(page)
    assert not re.search(r"<script[^>]*\bsrc\s*=", page, re.IGNORECASE)
    assert "Content-Security-Policy" in page and '"actions":false' in page


def test_write_chart_html_and_png_are_deterministic(tmp_path: Path) -> None:
    budget = pd.DataFrame(
        {"n_tasks": [100, 50, 10], "trials": [4, 8, 40], "se": [0.02, 0.03, 0.06]}
    )
    spec = chart_spec(charts.budget_chart(budget))
    first = write_chart(spec, tmp_path / "one", "budget", "Budget")
    second = write_chart(spec, tmp_path / "two", "budget", "Budget")
    assert [p.name for p in first] == ["budget.html", "budget.png"]
    assert first[1].read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
    for a, b in zip(first, second, strict=True):
        assert a.read_bytes() == b.read_bytes()


def _budget_spec() -> dict:
    budget = pd.DataFrame(
        {"n_tasks": [100, 50, 10], "trials": [4, 8, 40], "se": [0.02, 0.03, 0.06]}
    )
    return chart_spec(charts.budget_chart(budget))


def test_png_without_aria_is_the_same_picture() -> None:
    # png_spec drops the ARIA labels Vega writes into the SVG the rasterizer reads: the
    # pixels, and the PNG's bytes, are those of the spec as it is
    for spec in (_budget_spec(), chart_spec(charts.per_task_chart(_many_tasks(2, 300)))):
        assert png_spec(spec)["config"]["aria"] is False
        assert "aria" not in spec.get("config", {})  # the HTML's spec keeps its labels
        assert vlc.vegalite_to_png(
            png_spec(spec), scale=PNG_SCALE, vl_version=VL_VERSION
        ) == vlc.vegalite_to_png(spec, scale=PNG_SCALE, vl_version=VL_VERSION)


@pytest.mark.parametrize("workers", [0, 1, 2])
def test_png_workers_write_the_same_files(tmp_path: Path, workers: int) -> None:
    specs = {
        "budget": _budget_spec(),
        "per_task": chart_spec(charts.per_task_chart(_many_tasks(2, 300))),
        "convergence": chart_spec(charts.convergence_chart(charts.tidy_convergence(_conv_table()))),
    }
    here = {stem: write_chart(spec, tmp_path / "here", stem, stem) for stem, spec in specs.items()}
    with PngRenderer(workers) as png:
        assert png.workers == workers
        there = {
            stem: write_chart(spec, tmp_path / "there", stem, stem, png=png)
            for stem, spec in specs.items()
        }
    for stem in specs:
        for a, b in zip(here[stem], there[stem], strict=True):
            assert a.name == b.name
            assert a.read_bytes() == b.read_bytes()
    assert not list((tmp_path / "there").glob(".*"))  # no temporary file left behind


@pytest.mark.parametrize(
    ("cpus", "load", "workers"),
    [(1, 0.0, 0), (2, 0.0, 0), (2, 0.5, 0), (2, 9.0, 0), (3, 0.0, 2), (4, 1.0, 2), (16, 2.0, 2)],
)
def test_png_workers_only_on_idle_cpus(monkeypatch, cpus, load, workers) -> None:
    # a worker pays its own V8 engine and interpreter: processes only when two CPUs are idle
    # beside the report's thread (one process renders no more at once than the thread)
    import evalnoise.report._render as render

    monkeypatch.setattr(render.os, "sched_getaffinity", lambda pid: set(range(cpus)))
    monkeypatch.setattr(render.os, "getloadavg", lambda: (load, load, load))
    assert render.png_workers() == workers


def test_png_worker_errors_name_the_chart(tmp_path: Path) -> None:
    bad = {"mark": "no-such-mark", "data": {"values": [{"x": 1}]}}
    with pytest.raises(RuntimeError, match=r"PNG rendering failed: bad\.png: "):
        with PngRenderer(1) as png:
            write_chart(_budget_spec(), tmp_path, "good", "good", png=png)
            write_chart(bad, tmp_path, "bad", "bad", png=png)
    assert (tmp_path / "good.png").read_bytes().startswith(b"\x89PNG")
    assert not (tmp_path / "bad.png").exists()


def test_a_png_worker_never_waits_on_its_replies(tmp_path: Path) -> None:
    # 1,500 charts on one worker: their replies (~150 bytes each) are more than a pipe holds.
    # Replies the parent read only at the end once filled the pipe; the worker then stopped
    # reading its input and the report hung. Bad specs fail fast, so the test is quick.
    import threading

    bad = {"mark": "no-such-mark", "data": {"values": [{"x": 1}]}}
    outcome: list[BaseException | None] = []

    def report() -> None:
        try:
            with PngRenderer(1) as png:
                for i in range(1500):
                    png.submit(bad, tmp_path / f"{'chart-with-a-long-name-' * 3}{i}.png")
        except BaseException as exc:  # handed to the test's thread
            outcome.append(exc)
        else:
            outcome.append(None)

    worker = threading.Thread(target=report, daemon=True)
    worker.start()
    worker.join(timeout=120)
    assert not worker.is_alive(), "the PNG worker and the report waited on each other"
    (error,) = outcome
    assert isinstance(error, RuntimeError) and str(error).count(".png: ") == 1500


def test_png_thread_errors_name_the_chart(tmp_path: Path) -> None:
    bad = {"mark": "no-such-mark", "data": {"values": [{"x": 1}]}}
    with pytest.raises(RuntimeError, match=r"PNG rendering failed: bad\.png: "):
        with PngRenderer(0) as png:
            write_chart(bad, tmp_path, "bad", "bad", png=png)
            write_chart(_budget_spec(), tmp_path, "good", "good", png=png)
    assert (tmp_path / "good.png").read_bytes().startswith(b"\x89PNG")
    assert not (tmp_path / "bad.png").exists()


def test_a_failed_report_stops_its_png_thread(tmp_path: Path) -> None:
    import threading

    with pytest.raises(KeyError):
        with PngRenderer(0) as png:
            for i in range(3):
                write_chart(_budget_spec(), tmp_path, f"c{i}", "c", png=png)
            raise KeyError("the report failed")
    assert not [t for t in threading.enumerate() if t.name == "evalnoise-png"]


def test_a_dead_png_worker_fails_the_report(tmp_path: Path) -> None:
    png = PngRenderer(1)
    png._procs[0].kill()
    png._procs[0].wait()
    write_chart(_budget_spec(), tmp_path, "budget", "budget", png=png)
    with pytest.raises(RuntimeError, match=r"budget\.png: the PNG worker exited \(-9\)"):
        png.close()
    assert not (tmp_path / "budget.png").exists()


def _many_tasks(groups: int, tasks: int) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    mean = rng.uniform(size=groups * tasks)
    return pd.DataFrame(
        {
            "group": np.repeat([f"g{i}" for i in range(groups)], tasks),
            "task": np.tile([f"t{j:05d}" for j in range(tasks)], groups),
            "n": 10,
            "mean": mean,
            "ci_low": np.clip(mean - 0.2, 0, 1),
            "ci_high": np.clip(mean + 0.2, 0, 1),
        }
    )


def test_per_task_chart_of_thousands_of_questions_draws_every_kth_rank() -> None:
    # 5,000 questions a group: the 100,000-trial benchmark's report failed here (altair
    # refuses a dataset of more than 5,000 rows)
    spec = chart_spec(charts.per_task_chart(_many_tasks(2, 5000)))
    (rows,) = _datasets(spec)
    for group in ("g0", "g1"):
        ranks = sorted(r["rank"] for r in rows if r["group"] == group)
        k = -(-5000 // charts.PER_TASK_POINTS)
        assert k == 5 and ranks == [*range(1, 5001, k), 5000]  # 1, 6, …, 4996 and the last
        means = [
            r["mean"]
            for r in sorted((r for r in rows if r["group"] == group), key=lambda r: r["rank"])
        ]
        assert means == sorted(means, reverse=True)
    assert "every k-th rank" in json.dumps(spec["title"])


def test_per_task_chart_below_the_cap_draws_every_question() -> None:
    spec = chart_spec(charts.per_task_chart(_many_tasks(1, charts.PER_TASK_POINTS)))
    (rows,) = _datasets(spec)
    assert sorted(r["rank"] for r in rows) == list(range(1, charts.PER_TASK_POINTS + 1))
    assert "every k-th" not in json.dumps(spec["title"])


def test_chart_spec_takes_a_dataset_past_altairs_default_limit() -> None:
    import altair as alt

    frame = pd.DataFrame({"x": np.arange(6000), "y": np.arange(6000) % 7})
    spec = chart_spec(alt.Chart(frame).mark_point().encode(x="x:Q", y="y:Q"))
    assert len(_datasets(spec)[0]) == 6000
    # the lift is scoped to the call: altair's own default is left as it was
    with pytest.raises(alt.MaxRowsError):
        alt.Chart(frame).mark_point().encode(x="x:Q", y="y:Q").to_dict()


def test_the_vega_bundle_is_cached_per_version_and_rebuilt_when_not_a_bundle(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """vl-convert bundles anew on every call (seconds, in every report job): the bundle is
    kept in the user cache under vl-convert's and Vega-Lite's versions; a cached file that
    is not a bundle is replaced, and the pages are the same with or without the cache."""
    import vl_convert as vlc

    from evalnoise.report import _render

    monkeypatch.setenv("EVALNOISE_CACHE_DIR", str(tmp_path))
    fresh = vlc.javascript_bundle(vl_version=_render.VL_VERSION)
    _render.vega_bundle.cache_clear()
    try:
        assert _render.vega_bundle() == fresh
        (cached,) = (tmp_path / "vega").iterdir()
        assert cached.name == f"bundle-{vlc.__version__}-{_render.VL_VERSION}.js"
        assert cached.read_text(encoding="utf-8") == fresh

        calls = []
        monkeypatch.setattr(vlc, "javascript_bundle", lambda **kw: calls.append(kw) or fresh)
        _render.vega_bundle.cache_clear()
        assert _render.vega_bundle() == fresh and calls == []  # read from the cache

        cached.write_text("truncated", encoding="utf-8")
        _render.vega_bundle.cache_clear()
        assert _render.vega_bundle() == fresh and len(calls) == 1
        assert cached.read_text(encoding="utf-8") == fresh
    finally:
        _render.vega_bundle.cache_clear()
