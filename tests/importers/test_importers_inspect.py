"""Inspect AI logs (.eval and .json) → TRIALS, on real inspect_ai 0.3.285 logs (README.md
in tests/data/inspect says how they were made). inspect_ai itself is not needed."""

from __future__ import annotations

import json
import zipfile
from datetime import datetime
from pathlib import Path

import pytest

from evalnoise.errors import InputError
from evalnoise.importers import import_trials, inspect_log

MODEL = "mockllm/model"


@pytest.fixture
def logs(data_dir: Path) -> Path:
    return data_dir / "inspect"


@pytest.fixture
def run_a(logs: Path) -> Path:
    """temperature 0.7, no seed, 3 samples × 3 epochs, .eval with zstandard members."""
    return next(logs.glob("*_arith_*.eval"))


@pytest.fixture
def run_a_json(logs: Path) -> Path:
    """run A converted to .json by `inspect log convert`."""
    return next((logs / "converted").glob("*_arith_*.json"))


@pytest.fixture
def run_b(logs: Path) -> Path:
    """seed 42, temperature 0, 3 samples × 3 epochs, written as .json."""
    return next(logs.glob("*_arith_*.json"))


@pytest.fixture
def eval_set(logs: Path) -> Path:
    return logs / "eval-set"


def _rows(result) -> dict[tuple[str, str, int], dict]:
    return {(r["agent"], r["task_id"], r["trial"]): r for r in result.table.to_pylist()}


def _scores(result) -> dict[str, list]:
    out: dict[str, list] = {}
    for (_, task, _), row in sorted(_rows(result).items()):
        out.setdefault(task, []).append(row["score"])
    return out


def test_eval_members_are_zstandard(run_a: Path) -> None:
    with zipfile.ZipFile(run_a) as zf:
        methods = {info.compress_type for info in zf.infolist()}
    assert methods == {inspect_log.ZIP_ZSTANDARD}


def test_eval_log_with_an_error_and_a_limit(run_a: Path) -> None:
    result = import_trials("inspect", [run_a], scorer="match")
    rows = _rows(result)
    assert len(rows) == 9
    # epochs are trials: epoch e → trial e − 1; the agent is eval.model
    assert _scores(result) == {"1": [1.0, 1.0, 0.0], "2": [1.0, None, 1.0], "3": [0.0] * 3}
    errored = rows[(MODEL, "2", 1)]
    assert errored["status"] == "infra_error" and errored["score"] is None
    assert "tool sandbox unreachable" in errored["error"]
    limited = rows[(MODEL, "3", 0)]
    assert (limited["status"], limited["error"]) == ("agent_error", "message limit")
    ok = rows[(MODEL, "1", 0)]
    assert ok["status"] == "ok" and ok["prediction"] == "2"
    assert isinstance(ok["started_at"], datetime) and ok["duration_s"] >= 0
    md = result.metadata
    assert md["counts"]["scorer"] == "match"
    assert md["counts"]["score_null"] == 1
    assert md["rule"].endswith("for one log this is epoch − 1")


def test_json_and_eval_of_one_run_give_the_same_table(run_a: Path, run_a_json: Path) -> None:
    keys = ("agent", "task_id", "trial", "status", "score", "prediction", "error", "seed")

    def rows(path: Path) -> list[tuple]:
        table = import_trials("inspect", [path], scorer="match").table.to_pylist()
        return [tuple(r[k] for k in keys) for r in table]

    assert rows(run_a) == rows(run_a_json)


def test_deflate_and_stored_members_read_as_before(run_a: Path, tmp_path: Path) -> None:
    """Older inspect_ai wrote deflate members: rewrite run A so, and a member stored."""
    out = tmp_path / run_a.name
    with zipfile.ZipFile(run_a) as src, zipfile.ZipFile(out, "w") as dst:
        for k, info in enumerate(src.infolist()):
            data = inspect_log._zstd_member(run_a, info)
            dst.writestr(info.filename, data, zipfile.ZIP_STORED if k % 2 else zipfile.ZIP_DEFLATED)
    original = import_trials("inspect", [run_a], scorer="match").table
    assert import_trials("inspect", [out], scorer="match").table.equals(original)


def test_journal_only_eval_log(run_a: Path, tmp_path: Path) -> None:
    """A run still going has no header.json: the eval spec comes from _journal/start.json."""
    out = tmp_path / "running.eval"
    with zipfile.ZipFile(run_a) as src, zipfile.ZipFile(out, "w") as dst:
        for info in src.infolist():
            if info.filename != "header.json":
                dst.writestr(info.filename, inspect_log._zstd_member(run_a, info))
    result = import_trials("inspect", [out], scorer="match")
    assert result.table.num_rows == 9
    assert result.metadata["counts"]["log_status"] == {"started": 1}


def test_several_scorers_need_a_choice(run_a: Path) -> None:
    with pytest.raises(InputError, match=r"several scorers \(includes, match\).*--scorer"):
        import_trials("inspect", [run_a])
    with pytest.raises(InputError, match="no scorer 'f1'"):
        import_trials("inspect", [run_a], scorer="f1")


def test_eval_set_folder_skips_its_index_files(eval_set: Path) -> None:
    """eval-set.json and logs.json are not logs (Inspect's own listing rule)."""
    result = import_trials("inspect", [eval_set])  # one scorer: no --scorer needed
    sources = [Path(s).name for s in result.metadata["sources"]]
    assert len(sources) == 2 and all(s.endswith(".eval") for s in sources)
    assert result.metadata["counts"]["eval_tasks"] == ["double", "triple"]
    # several eval tasks: the task id is prefixed with the task's name
    assert _scores(result) == {
        "double/1": [1.0, 1.0],
        "double/2": [0.0, 1.0],
        "triple/t1": [1.0, 0.0],
        "triple/t2": [1.0, 0.0],
    }


@pytest.mark.parametrize(
    ("name", "is_log"),
    [
        ("2026-11-23T14-43-44-00-00_double_abc.eval", True),
        ("anything.eval", True),
        ("2026-11-23T14-43-44-00-00_double_abc.json", True),
        ("2026-11-23T14:43:44+00:00_x.json", True),
        ("eval-set.json", False),
        ("logs.json", False),
        ("2026-11-23_summary.json", False),
        ("notes.txt", False),
    ],
)
def test_is_log_file_follows_inspect(name: str, is_log: bool) -> None:
    assert inspect_log.is_log_file(Path(name)) is is_log


def test_a_json_log_given_by_name_is_read_whatever_its_name(run_b: Path, tmp_path: Path) -> None:
    renamed = tmp_path / "my-log.json"
    renamed.write_bytes(run_b.read_bytes())
    assert import_trials("inspect", [renamed], scorer="match").table.num_rows == 9


def test_one_run_in_two_formats_is_named_as_such(
    logs: Path, run_a: Path, run_a_json: Path, tmp_path: Path
) -> None:
    with pytest.raises(InputError) as err:
        import_trials("inspect", [run_a, run_a_json], scorer="match")
    text = str(err.value)
    assert "one run (eval_id" in text and "two formats (.json and .eval" in text
    assert "eval-retry" not in text
    # a folder holding both: the same
    with pytest.raises(InputError, match="two formats"):
        import_trials("inspect", [logs], scorer="match")
    # without eval_id (older logs), the shared sample uuids and file name tell it
    data = json.loads(run_a_json.read_text())
    del data["eval"]["eval_id"]
    old = tmp_path / run_a_json.name
    old.write_text(json.dumps(data))
    with pytest.raises(InputError, match=r"same sample run \(uuid .*two formats") as err:
        import_trials("inspect", [run_a, old], scorer="match")
    assert "eval-retry" not in str(err.value)


def test_retry_log_repeating_samples_is_refused(run_b: Path, tmp_path: Path) -> None:
    data = json.loads(run_b.read_text())
    data["eval"]["eval_id"] = "retryRetryRetry"
    retry = tmp_path / ("2027-01-01T00-00-00-00-00_arith_retry.json")
    retry.write_text(json.dumps(data))
    with pytest.raises(InputError, match="eval-retry"):
        import_trials("inspect", [run_b, retry], scorer="match")


def test_runs_with_different_settings_are_different_agents(run_a: Path, run_b: Path) -> None:
    result = import_trials("inspect", [run_a, run_b], scorer="match")
    agents = sorted(set(result.table.column("agent").to_pylist()))
    assert agents == [
        f"{MODEL} [seed=42, task_args.fail=none, task_args.limit=none, temperature=0.0]",
        f"{MODEL} [seed=none, task_args.fail=[2, 2], task_args.limit=[3, 1], temperature=0.7]",
    ]
    assert result.metadata["counts"]["agents"] == 2


def test_agent_option_refuses_runs_with_different_settings(run_a: Path, run_b: Path) -> None:
    with pytest.raises(InputError) as err:
        import_trials("inspect", [run_a, run_b], scorer="match", agent="mine")
    text = str(err.value)
    assert "--agent 'mine' would merge runs with different settings" in text
    assert f"temperature 0.7 in {run_a.name}, 0.0 in {run_b.name}" in text
    assert "seed none" in text and "task_args.fail" in text


def test_agent_option_names_runs_of_equal_settings(eval_set: Path) -> None:
    table = import_trials("inspect", [eval_set], agent="mine").table
    assert set(table.column("agent").to_pylist()) == {"mine"}


def test_seed_and_generation_settings_are_columns(run_a: Path, run_b: Path) -> None:
    seeded = import_trials("inspect", [run_b], scorer="match").table.to_pylist()
    assert {r["seed"] for r in seeded} == {42}
    assert {r["temperature"] for r in seeded} == {0.0}
    assert json.loads(seeded[0]["generate_config"]) == {"seed": 42, "temperature": 0.0}
    assert json.loads(seeded[0]["task_args"]) == {"n": 3, "fail": None, "limit": None}
    sampled = import_trials("inspect", [run_a], scorer="match").table.to_pylist()
    assert {r["seed"] for r in sampled} == {None}
    assert {r["temperature"] for r in sampled} == {0.7}
    assert json.loads(sampled[0]["task_args"])["fail"] == [2, 2]
    # a fixed seed at temperature 0: the same score on every trial of a task
    assert _scores(import_trials("inspect", [run_b], scorer="match")) == {
        "1": [1.0] * 3,
        "2": [0.0] * 3,
        "3": [1.0] * 3,
    }


def _json_variant(run_b: Path, tmp_path: Path, name: str, **eval_changes) -> Path:
    """run B as another run: its own eval_id and sample uuids, ``eval_changes`` applied."""
    data = json.loads(run_b.read_text())
    data["eval"].update(eval_id=f"id-{name}", **eval_changes)
    for s in data["samples"]:
        s["uuid"] = f"{name}-{s['uuid']}"
    path = tmp_path / name
    path.write_text(json.dumps(data))
    return path


def test_logs_of_one_model_and_settings_continue_the_numbering(run_b: Path, tmp_path: Path) -> None:
    later = _json_variant(run_b, tmp_path, "a-later.json", created="2099-02-01T00:00:00Z")
    rows = _rows(import_trials("inspect", [later, run_b], scorer="match"))
    # eval.created orders the logs, not the names: trials 0-2 are run B's epochs
    assert {t for (_, s, t) in rows if s == "1"} == {0, 1, 2, 3, 4, 5}


def test_logs_of_several_tasks_prefix_the_task(run_b: Path, tmp_path: Path) -> None:
    other = _json_variant(run_b, tmp_path, "other.json", task="arith_hard")
    tasks = import_trials("inspect", [run_b, other], scorer="match").table.column("task_id")
    assert set(tasks.to_pylist()) == {f"{t}/{i}" for t in ("arith", "arith_hard") for i in "123"}


@pytest.mark.parametrize(
    ("change", "column", "message"),
    [
        ({"scores": {"match": {"value": "X"}}}, "scores.match.value", "is not C/I/P/N"),
        ({"scores": {"match": {"value": 2}}}, "scores.match.value", "outside [0, 1]"),
        ({"scores": {"match": {"answer": "B"}}}, "scores.match", "has no value"),
        ({"scores": {}}, "scores", "no score from scorer 'match'"),
        ({"epoch": 0}, "epoch", "epoch must be an integer"),
        ({"id": None}, "id", "sample id"),
        ({"limit": {"type": "gravity", "limit": 1}}, "limit", "unknown limit type"),
        ({"started_at": "soon"}, "started_at", "not an ISO-8601 timestamp"),
    ],
)
def test_malformed_sample(
    run_b: Path, tmp_path: Path, change: dict, column: str, message: str
) -> None:
    data = json.loads(run_b.read_text())
    data["samples"][4].update(change)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data))
    with pytest.raises(InputError) as err:
        import_trials("inspect", [path], scorer="match")
    assert err.value.path == str(path) and err.value.column == column
    assert "samples[4]" in str(err.value) and message in str(err.value)


def test_malformed_logs(run_a: Path, run_b: Path, tmp_path: Path) -> None:
    data = json.loads(run_b.read_text())
    del data["eval"]["model"]
    bad = tmp_path / "nomodel.json"
    bad.write_text(json.dumps(data))
    with pytest.raises(InputError, match=r"eval\.model"):
        import_trials("inspect", [bad])
    data = json.loads(run_b.read_text())
    data["samples"] = []
    empty = tmp_path / "empty.json"
    empty.write_text(json.dumps(data))
    with pytest.raises(InputError, match="no samples"):
        import_trials("inspect", [empty])
    notzip = tmp_path / "x.eval"
    notzip.write_text("hello")
    with pytest.raises(InputError, match="not a zip archive"):
        import_trials("inspect", [notzip])
    nohead = tmp_path / "nohead.eval"
    with zipfile.ZipFile(nohead, "w") as zf:
        zf.writestr("samples/1_epoch_1.json", "{}")
    with pytest.raises(InputError, match=r"header\.json"):
        import_trials("inspect", [nohead])
    badmember = tmp_path / "badmember.eval"
    with zipfile.ZipFile(run_a) as src, zipfile.ZipFile(badmember, "w") as dst:
        for info in src.infolist():
            data = inspect_log._zstd_member(run_a, info)
            dst.writestr(info.filename, b"{oops" if "2_epoch_1" in info.filename else data)
    with pytest.raises(InputError, match=r"'samples/2_epoch_1\.json' is not valid JSON"):
        import_trials("inspect", [badmember], scorer="match")


def _set_method(path: Path, member: str, method: int) -> None:
    """Rewrite the compression method of ``member`` in both of its zip headers."""
    raw = bytearray(path.read_bytes())
    with zipfile.ZipFile(path) as zf:
        offset = zf.getinfo(member).header_offset
    raw[offset + 8 : offset + 10] = method.to_bytes(2, "little")  # local header
    cd = raw.find(b"PK\x01\x02")  # the central directory's entries
    while cd != -1:
        name_len = int.from_bytes(raw[cd + 28 : cd + 30], "little")
        if raw[cd + 46 : cd + 46 + name_len] == member.encode():
            raw[cd + 10 : cd + 12] = method.to_bytes(2, "little")
            break
        cd = raw.find(b"PK\x01\x02", cd + 4)
    path.write_bytes(bytes(raw))


def test_corrupt_zstandard_member_is_named(run_a: Path, tmp_path: Path) -> None:
    out = tmp_path / run_a.name
    raw = bytearray(run_a.read_bytes())
    with zipfile.ZipFile(run_a) as zf:
        info = zf.getinfo("samples/1_epoch_1.json")
    start = info.header_offset + 30 + len(info.filename.encode()) + len(info.extra)
    raw[start + 20 : start + 40] = bytes(20)  # zero part of the compressed data
    out.write_bytes(bytes(raw))
    with pytest.raises(InputError, match=r"'samples/1_epoch_1\.json' cannot be read") as err:
        import_trials("inspect", [out], scorer="match")
    assert err.value.path == str(out)


def test_unknown_compression_method_is_a_clear_error(run_a: Path, tmp_path: Path) -> None:
    out = tmp_path / run_a.name
    out.write_bytes(run_a.read_bytes())
    _set_method(out, "samples/1_epoch_1.json", 95)  # XZ: neither zipfile nor we read it
    with pytest.raises(InputError, match="compression method 95") as err:
        import_trials("inspect", [out], scorer="match")
    assert "samples/1_epoch_1.json" in str(err.value) and err.value.path == str(out)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("C", 1.0),
        ("I", 0.0),
        ("P", 0.5),
        ("N", 0.0),
        (True, 1.0),
        (0, 0.0),
        (0.25, 0.25),
        ("yes", 1.0),
        ("False", 0.0),
        ("0.75", 0.75),
    ],
)
def test_value_to_float_as_inspect_ai(value: object, expected: float) -> None:
    assert inspect_log.value_to_float(value, inspect_log.Where("x"), "v") == expected


@pytest.mark.parametrize("value", ["c", "maybe", None, [1], {"a": 1}, "nan", 1.5])
def test_value_to_float_refuses(value: object) -> None:
    with pytest.raises(InputError):
        inspect_log.value_to_float(value, inspect_log.Where("x"), "v")
