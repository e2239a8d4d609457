"""``evalnoise import``: Parquet output with metadata, atomic writes, errors, --help."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from evalnoise.cli import main
from evalnoise.cli.import_ import add_parser
from evalnoise.importers import METADATA_KEY, import_trials, read_metadata, write_trials
from evalnoise.schema import TRIALS


def test_writes_parquet_with_schema_and_metadata(data_dir: Path, tmp_path: Path, capsys) -> None:
    out = tmp_path / "tb.parquet"
    code = main(["import", "terminal-bench", str(data_dir / "terminal-bench"), "-o", str(out)])
    assert code == 0
    printed = capsys.readouterr().out
    assert "wrote 75 trials (3 agents, 5 tasks)" in printed
    assert "trial numbering: within (agent, task_id)" in printed
    table = pq.read_table(out)
    assert table.schema.remove_metadata() == TRIALS
    assert table.num_rows == 75
    meta = json.loads(table.schema.metadata[METADATA_KEY])
    assert meta["format"] == "terminal-bench"
    assert meta["rule"].startswith("within (agent, task_id), trials are numbered from 0")
    assert len(meta["sources"]) == 11
    assert meta == read_metadata(out)
    assert list(tmp_path.iterdir()) == [out]  # no temporary file left behind


def test_options_reach_the_importer(data_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "metr.parquet"
    code = main(
        [
            "import",
            "metr",
            str(data_dir / "metr" / "runs.jsonl"),
            "-o",
            str(out),
            "--include-humans",
            "--metr-score",
            "raw",
            "--resource-profile",
            "vivaria",
        ]
    )
    assert code == 0
    table = pq.read_table(out)
    assert table.num_rows == 19
    assert set(table.column("resource_profile").to_pylist()) == {"vivaria"}
    meta = read_metadata(out)
    assert meta["options"] == {"include_humans": True, "score": "raw"}
    assert meta["resource_profile"] == "vivaria"


def test_column_mapping_flag(tmp_path: Path) -> None:
    src = tmp_path / "s.csv"
    src.write_text("q,m,y,e\na,x,1,1\na,x,0,2\n")
    out = tmp_path / "t.parquet"
    assert (
        main(
            [
                "import",
                "table",
                str(src),
                "-o",
                str(out),
                "--column-mapping",
                "task=q,agent=m,score=y,trial=e",
            ]
        )
        == 0
    )
    assert pq.read_table(out).column("trial").to_pylist() == [0, 1]


def test_malformed_input_writes_nothing(data_dir: Path, tmp_path: Path, capsys) -> None:
    bad = tmp_path / "runs.jsonl"
    lines = (data_dir / "metr" / "runs.jsonl").read_text().splitlines()
    lines[4] = lines[4].replace('"score_binarized":0', '"score_binarized":"zero"')
    bad.write_text("\n".join(lines) + "\n")
    out = tmp_path / "out.parquet"
    out.write_bytes(b"previous content")
    code = main(["import", "metr", str(bad), "-o", str(out)])
    assert code == 2
    err = capsys.readouterr().err
    assert err.startswith("evalnoise import: error: ")
    assert f"{bad}: row 5: column 'score_binarized'" in err
    assert len(err.strip().splitlines()) == 1
    assert out.read_bytes() == b"previous content"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.parquet", "runs.jsonl"]


def test_option_for_another_format_is_an_error(data_dir: Path, tmp_path: Path, capsys) -> None:
    out = tmp_path / "x.parquet"
    code = main(["import", "metr", str(data_dir / "metr"), "-o", str(out), "--agent", "me"])
    assert code == 2
    assert "'agent' does not apply to format 'metr'" in capsys.readouterr().err
    assert not out.exists()


def test_failed_write_leaves_no_temp_file(data_dir: Path, tmp_path: Path) -> None:
    result = import_trials("tau-bench", [data_dir / "tau-bench-import"])
    target = tmp_path / "dir.parquet"
    target.mkdir()  # os.replace of a file onto a directory fails
    with pytest.raises(OSError):
        write_trials(result, target)
    assert [p.name for p in tmp_path.iterdir()] == ["dir.parquet"]
    assert list(target.iterdir()) == []


def test_help_lists_formats(capsys) -> None:
    parser = argparse.ArgumentParser(prog="evalnoise")
    sub = parser.add_subparsers(dest="command")
    add_parser(sub)
    with pytest.raises(SystemExit) as exit_:
        parser.parse_args(["import", "--help"])
    assert exit_.value.code == 0
    text = capsys.readouterr().out
    for fmt in ("inspect", "terminal-bench", "tau-bench", "metr", "table"):
        assert fmt in text
    for flag in ("--agent", "--include-humans", "--column-mapping", "-o OUT"):
        assert flag in text


def test_registers_run_for_themain() -> None:
    parser = argparse.ArgumentParser(prog="evalnoise")
    add_parser(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["import", "tau-bench", "x.json", "-o", "y.parquet"])
    assert callable(args.run)
    assert (args.format, args.paths, args.output) == ("tau-bench", ["x.json"], "y.parquet")


def test_imported_inspect_logs_analyze_with_no_flags(
    data_dir: Path, tmp_path: Path, capsys
) -> None:
    """What evalnoise import writes, evalnoise analyze reads with no column flags."""
    out = tmp_path / "t.parquet"
    assert main(["import", "inspect", str(data_dir / "inspect" / "eval-set"), "-o", str(out)]) == 0
    meta = read_metadata(out)
    assert meta["columns"]["score"] == "score" and meta["columns"]["group"] == "agent"
    capsys.readouterr()
    assert main(["analyze", str(out), "--json"]) == 0
    captured = capsys.readouterr()
    groups = json.loads(captured.out)["groups"]
    assert [(g["group"], g["n_tasks"], g["n_obs"]) for g in groups] == [("mockllm/model", 4, 8)]
    assert groups[0]["mean"] == pytest.approx(0.625)
    assert (
        "evalnoise analyze: columns: task=task_id, trial=trial, score=score, group=agent "
        "(task, trial, score, group: stored in the file by evalnoise)"
    ) in captured.err
    # an explicit flag still wins over the stored role
    assert main(["analyze", str(out), "--json", "--group", "resource_profile"]) == 0
    captured = capsys.readouterr()
    assert [g["group"] for g in json.loads(captured.out)["groups"]] == ["imported"]
    assert "group=resource_profile" in captured.err and "group: given by flags" in captured.err


def test_fixed_seed_explains_zero_within_task_variance(
    data_dir: Path, tmp_path: Path, capsys
) -> None:
    run_b = next((data_dir / "inspect").glob("*_arith_*.json"))
    out = tmp_path / "b.parquet"
    assert main(["import", "inspect", str(run_b), "--scorer", "match", "-o", str(out)]) == 0
    capsys.readouterr()
    assert main(["analyze", str(out), "--json"]) == 0
    (group,) = json.loads(capsys.readouterr().out)["groups"]
    (zero,) = [w for w in group["warnings"] if w.startswith("within-task variance is zero")]
    assert "same seed 42 (the table's seed column)" in zero
    # the same table without its seed column: no such explanation
    table = pq.read_table(out)
    pq.write_table(table.drop_columns(["seed"]), tmp_path / "noseed.parquet")
    assert main(["analyze", str(tmp_path / "noseed.parquet"), "--json"]) == 0
    (group,) = json.loads(capsys.readouterr().out)["groups"]
    assert not any("seed" in w for w in group["warnings"])


def test_compare_reads_the_stored_group(data_dir: Path, tmp_path: Path, capsys) -> None:
    logs = data_dir / "inspect"
    runs = [next(logs.glob("*_arith_*.eval")), next(logs.glob("*_arith_*.json"))]
    out = tmp_path / "ab.parquet"
    assert main(["import", "inspect", *map(str, runs), "--scorer", "match", "-o", str(out)]) == 0
    agents = sorted(set(pq.read_table(out).column("agent").to_pylist()))
    assert len(agents) == 2 and all("temperature=" in a for a in agents)
    capsys.readouterr()
    assert main(["compare", str(out), *agents, "--json", "--resamples", "200"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["n_tasks"] == 3
    assert "evalnoise compare: columns:" in captured.err and "group=agent" in captured.err


def test_two_formats_of_one_run_write_nothing(data_dir: Path, tmp_path: Path, capsys) -> None:
    out = tmp_path / "x.parquet"
    code = main(
        ["import", "inspect", str(data_dir / "inspect"), "--scorer", "match", "-o", str(out)]
    )
    assert code == 2
    err = capsys.readouterr().err
    assert "two formats" in err and len(err.strip().splitlines()) == 1
    assert not out.exists() and list(tmp_path.iterdir()) == []


def test_import_table_and_analyze_share_the_score_default(tmp_path: Path, capsys) -> None:
    """A table whose score column is `correct` (no `score`) reads the same in both."""
    src = tmp_path / "s.csv"
    src.write_text("agent,task_id,trial,correct\nm,a,1,1\nm,a,2,0\nm,b,1,1\nm,b,2,1\n")
    out = tmp_path / "t.parquet"
    assert main(["import", "table", str(src), "-o", str(out)]) == 0
    assert read_metadata(out)["column_mapping"]["score"] == "correct"
    capsys.readouterr()
    assert main(["analyze", str(src), "--json", "--group", "agent"]) == 0
    direct = json.loads(capsys.readouterr().out)["groups"][0]
    assert main(["analyze", str(out), "--json"]) == 0
    imported = json.loads(capsys.readouterr().out)["groups"][0]
    assert imported["mean"] == direct["mean"] == pytest.approx(0.75)


def test_analyze_attributes_the_noise_of_an_imported_log(
    data_dir: Path, tmp_path: Path, capsys
) -> None:
    """An Inspect log carries outcomes (an errored and a limit-hit sample) and timestamps:
    analyze gives the attribution the pipeline's stage gives, and names what could not run
    (no host, no second resource profile)."""
    out = tmp_path / "t.parquet"
    logs = sorted(str(p) for p in (data_dir / "inspect").glob("*.eval"))
    assert main(["import", "inspect", *logs, "--scorer", "match", "-o", str(out)]) == 0
    capsys.readouterr()
    assert main(["analyze", str(out)]) == 0
    text = capsys.readouterr().out
    assert "infra policy: as incorrect 44.4%" in text
    assert "infrastructure share of variance" in text
    assert "flaky tasks: 0 (checks run: infra_concentration, time_block)" in text
    assert "not run: resource_sensitivity (mockllm/model): no resource profile column" in text
    assert main(["analyze", str(out), "--json"]) == 0
    attribution = json.loads(capsys.readouterr().out)["attribution"]
    policy = {p["policy"]: p for p in attribution["summary"]["mockllm/model"]["policy"]}
    # the infra_error trial counted as incorrect, or left out: two different estimates
    assert policy["as_incorrect"]["mean"] == pytest.approx(4 / 9)
    assert policy["exclude"]["mean"] != pytest.approx(policy["as_incorrect"]["mean"])
    assert main(["analyze", str(out), "--json", "--no-attribution"]) == 0
    assert "attribution" not in json.loads(capsys.readouterr().out)
