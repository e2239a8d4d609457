"""Terminal-Bench results.json → TRIALS, on the committed excerpt and the full leaderboard."""

from __future__ import annotations

import json
import shutil
from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path

import pytest

from evalnoise.errors import InputError
from evalnoise.importers import import_trials
from evalnoise.schema import TRIALS

OPENHANDS = "20250711_openhands_claude-4-sonnet"
GOOSE = "20250829_goose_claude-4-sonnet"
ORCHESTRATOR = "20250902_orchestrator_claude-4-sonnet"

# The brief's mapping, restated as the specification the importer must meet.
EXPECTED_STATUS = {
    "unset": "ok",
    "agent_timeout": "timeout",
    "test_timeout": "timeout",
    "agent_installation_failed": "infra_error",
    "parse_error": "agent_error",
    "unknown_agent_error": "agent_error",
}


@pytest.fixture
def tb(data_dir: Path) -> Path:
    return data_dir / "terminal-bench"


def _rows(result) -> dict[tuple[str, str, int], dict]:
    return {(r["agent"], r["task_id"], r["trial"]): r for r in result.table.to_pylist()}


def _raw_by_trial(tb: Path) -> dict[tuple[str, str, int], dict]:
    """Every raw record keyed by the trial number the stated rule gives it."""
    out: dict[tuple[str, str, int], dict] = {}
    runs = {
        OPENHANDS: [f"openhands-sonnet{s}/results.json" for s in ("", "2", "3", "4", "5")],
        GOOSE: sorted(p.name for p in (tb / GOOSE).glob("*__results.json")),
    }
    for agent, files in runs.items():
        for trial, name in enumerate(files):
            for rec in json.loads((tb / agent / name).read_text())["results"]:
                out[(agent, rec["task_id"], trial)] = rec
    for rec in json.loads((tb / ORCHESTRATOR / "results.json").read_text())["results"]:
        i = int(rec["trial_name"].rsplit(".", 1)[1].split("-of-")[0])
        out[(ORCHESTRATOR, rec["task_id"], i - 1)] = rec
    return out


def test_excerpt_shape_and_schema(tb: Path) -> None:
    result = import_trials("terminal-bench", [tb])
    t = result.table
    assert t.schema == TRIALS
    assert t.num_rows == 75
    assert sorted(set(t.column("agent").to_pylist())) == [OPENHANDS, GOOSE, ORCHESTRATOR]
    per = defaultdict(list)
    for r in t.to_pylist():
        per[(r["agent"], r["task_id"])].append(r["trial"])
        assert r["resource_profile"] == "imported"
        assert r["attempt"] == 1
    assert len(per) == 15
    assert all(sorted(v) == [0, 1, 2, 3, 4] for v in per.values())


def test_every_record_lands_on_its_stated_trial_with_mapped_status_and_score(tb: Path) -> None:
    rows = _rows(import_trials("terminal-bench", [tb]))
    raw = _raw_by_trial(tb)
    assert set(rows) == set(raw)
    seen_modes = set()
    for key, rec in raw.items():
        row = rows[key]
        seen_modes.add(rec["failure_mode"])
        status = EXPECTED_STATUS[rec["failure_mode"]]
        if (
            rec["is_resolved"] is not None
            and rec["failure_mode"] != "test_timeout"
            and status in ("timeout", "agent_error")
        ):
            # the tests ran after the agent failed and gave a verdict: it decides (a
            # resolved trial is resolved, as the leaderboard counts it), the failure a flag
            assert (row["status"], row["verified_after"]) == ("ok", status), key
        else:
            assert (row["status"], row["verified_after"]) == (status, None), key
        assert row["score"] == (1.0 if rec["is_resolved"] is True else 0.0), key
        assert row["error"] == (None if rec["failure_mode"] == "unset" else rec["failure_mode"])
        if "trial_started_at" in rec:
            assert row["started_at"] == datetime.fromisoformat(rec["trial_started_at"])
            assert row["ended_at"] == datetime.fromisoformat(rec["trial_ended_at"])
            assert row["duration_s"] == pytest.approx(
                (row["ended_at"] - row["started_at"]).total_seconds()
            )
        else:
            assert row["started_at"] is None and row["duration_s"] is None
    # the excerpt was chosen to exercise every failure mode in the leaderboard data
    assert seen_modes == set(EXPECTED_STATUS)


def test_known_records(tb: Path) -> None:
    rows = _rows(import_trials("terminal-bench", [tb]))
    # openhands-sonnet4 (4th run folder → trial 3): oom, agent_installation_failed
    r = rows[(OPENHANDS, "oom", 3)]
    assert (r["status"], r["score"]) == ("infra_error", 0.0)
    assert r["error"] == "agent_installation_failed"
    # a dotted task id parses: eval-mteb.hard.1-of-1.openhands-sonnet
    assert (OPENHANDS, "eval-mteb.hard", 0) in rows
    # timestamps are UTC-aware
    assert rows[(OPENHANDS, "oom", 0)]["started_at"].tzinfo is not None
    assert rows[(OPENHANDS, "oom", 0)]["started_at"].utcoffset() == UTC.utcoffset(None)


def test_mean_score_per_agent_equals_mean_of_run_accuracies(tb: Path) -> None:
    """The leaderboard number: mean over runs of each results.json's `accuracy`."""
    result = import_trials("terminal-bench", [tb])
    accs = defaultdict(list)
    for f in result.metadata["counts"]["per_file"]:
        agent = result.metadata["counts"]["agent_of_file"][f["path"]]
        accs[agent].append(f["accuracy"])
    scores = defaultdict(list)
    for r in result.table.to_pylist():
        scores[r["agent"]].append(r["score"])
    for agent, a in accs.items():
        assert sum(scores[agent]) / len(scores[agent]) == pytest.approx(sum(a) / len(a), abs=1e-12)


def test_metadata_states_the_rule_and_sources(tb: Path) -> None:
    md = import_trials("terminal-bench", [tb]).metadata
    assert md["format"] == "terminal-bench"
    assert "natural sort order" in md["rule"] and "<i>" in md["rule"]
    assert len(md["sources"]) == 11
    assert md["sources"][0].endswith(f"{OPENHANDS}/openhands-sonnet/results.json")
    assert md["sources"][1].endswith(f"{OPENHANDS}/openhands-sonnet2/results.json")
    assert md["counts"]["rows"] == 75
    assert md["counts"]["agents"] == 3
    assert md["counts"]["by_agent"][ORCHESTRATOR] == {
        "rows": 25,
        "tasks": 5,
        "trials_min": 5,
        "trials_max": 5,
    }


def test_run_folder_alone_names_its_submission(tb: Path) -> None:
    t = import_trials("terminal-bench", [tb / OPENHANDS / "openhands-sonnet3"]).table
    assert set(t.column("agent").to_pylist()) == {OPENHANDS}
    assert set(t.column("trial").to_pylist()) == {0}


def test_agent_option(tb: Path) -> None:
    t = import_trials("terminal-bench", [tb / GOOSE], agent="goose").table
    assert set(t.column("agent").to_pylist()) == {"goose"}
    with pytest.raises(InputError, match="3 submission folders"):
        import_trials("terminal-bench", [tb], agent="x")


def test_resource_profile_option(tb: Path) -> None:
    t = import_trials("terminal-bench", [tb / GOOSE], resource_profile="3x").table
    assert set(t.column("resource_profile").to_pylist()) == {"3x"}


def test_option_of_another_format_is_refused(tb: Path) -> None:
    with pytest.raises(InputError, match="include_humans"):
        import_trials("terminal-bench", [tb], include_humans=True)


def _copy_run(tb: Path, tmp_path: Path) -> Path:
    dest = tmp_path / "sub" / "run1" / "results.json"
    dest.parent.mkdir(parents=True)
    shutil.copy(tb / OPENHANDS / "openhands-sonnet" / "results.json", dest)
    return dest


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("is_resolved", "yes", "expected true, false or null"),
        ("failure_mode", "sandbox_start_failed", "unknown failure_mode"),
        ("trial_name", "oom-1-of-1", "does not start with the task_id"),
        ("trial_name", "{task}.first", "is not <task>.<i>-of-<n>"),
        ("trial_started_at", "yesterday", "not an ISO-8601 timestamp"),
        ("task_id", 7, "expected a task id string"),
    ],
)
def test_malformed_record_names_file_row_and_field(
    tb: Path, tmp_path: Path, field: str, value: object, message: str
) -> None:
    dest = _copy_run(tb, tmp_path)
    data = json.loads(dest.read_text())
    rec = data["results"][2]
    rec[field] = value.format(task=rec["task_id"]) if isinstance(value, str) else value
    dest.write_text(json.dumps(data))
    with pytest.raises(InputError) as err:
        import_trials("terminal-bench", [dest])
    text = str(err.value)
    assert str(dest) in text and "row 3" in text and "results[2]" in text
    assert repr(field) in text and message in text
    assert err.value.path == str(dest) and err.value.row == 3 and err.value.column == field


def test_missing_field(tb: Path, tmp_path: Path) -> None:
    dest = _copy_run(tb, tmp_path)
    data = json.loads(dest.read_text())
    del data["results"][0]["is_resolved"]
    dest.write_text(json.dumps(data))
    with pytest.raises(InputError, match=r"row 1.*'is_resolved'.*missing"):
        import_trials("terminal-bench", [dest])


def test_not_json_and_not_benchmark_results(tmp_path: Path) -> None:
    bad = tmp_path / "results.json"
    bad.write_text('{"results": [')
    with pytest.raises(InputError, match="not valid JSON") as err:
        import_trials("terminal-bench", [bad])
    assert err.value.path == str(bad)
    bad.write_text("[1, 2]")
    with pytest.raises(InputError, match="BenchmarkResults"):
        import_trials("terminal-bench", [bad])


def test_duplicate_trial_in_one_file(tb: Path, tmp_path: Path) -> None:
    dest = _copy_run(tb, tmp_path)
    data = json.loads(dest.read_text())
    data["results"].append(dict(data["results"][0]))
    dest.write_text(json.dumps(data))
    with pytest.raises(InputError, match="duplicate trial") as err:
        import_trials("terminal-bench", [dest])
    assert err.value.row == 6


def test_same_file_twice_and_missing_path(tb: Path, tmp_path: Path) -> None:
    f = tb / ORCHESTRATOR / "results.json"
    with pytest.raises(InputError, match="given twice"):
        import_trials("terminal-bench", [f, f])
    with pytest.raises(InputError, match="no such file"):
        import_trials("terminal-bench", [tmp_path / "nope"])
    with pytest.raises(InputError, match=r"no Terminal-Bench results\.json files found"):
        import_trials("terminal-bench", [tmp_path])


def test_run_order_is_natural_not_lexicographic(tb: Path, tmp_path: Path) -> None:
    """run10 comes after run9, not after run1."""
    src = json.loads((tb / OPENHANDS / "openhands-sonnet" / "results.json").read_text())
    for k in (1, 2, 10, 9):
        d = tmp_path / "sub" / f"run{k}"
        d.mkdir(parents=True)
        data = json.loads(json.dumps(src))
        for rec in data["results"]:
            rec["is_resolved"] = k == 10  # mark run10's trials
        (d / "results.json").write_text(json.dumps(data))
    rows = import_trials("terminal-bench", [tmp_path / "sub"]).table.to_pylist()
    assert {r["trial"] for r in rows if r["score"] == 1.0} == {3}


# --- the full leaderboard (shared/data), when present ------------------------------------


def test_full_leaderboard_accuracy_reproduced(shared_data) -> None:
    root = shared_data("terminal-bench/core-0.1.1")
    result = import_trials("terminal-bench", [root])
    t = result.table.to_pylist()
    # the leaderboard number: mean over the submission's runs of each file's `accuracy`
    published = defaultdict(list)
    for path in sorted(root.rglob("*results.json")):
        agent = path.relative_to(root).parts[0]
        published[agent].append(json.loads(path.read_text())["accuracy"])
    scores = defaultdict(list)
    trials = defaultdict(set)
    for r in t:
        scores[r["agent"]].append(r["score"])
        trials[(r["agent"], r["task_id"])].add(r["trial"])
    assert set(scores) == set(published) and len(published) == 13
    for agent, accs in published.items():
        ours = sum(scores[agent]) / len(scores[agent])
        assert abs(ours - sum(accs) / len(accs)) <= 1e-9, agent
        assert len(scores[agent]) == 400
    assert all(v == {0, 1, 2, 3, 4} for v in trials.values())
    assert len({task for _, task in trials}) == 80
    # statuses agree with the raw failure modes, record for record, in total (an agent
    # failure whose tests gave a verdict is ok, the failure kept in verified_after)
    modes = defaultdict(int)
    for path in root.rglob("*results.json"):
        for rec in json.loads(path.read_text())["results"]:
            status = EXPECTED_STATUS[rec["failure_mode"]]
            verified = rec["is_resolved"] is not None and rec["failure_mode"] != "test_timeout"
            modes["ok" if verified and status in ("timeout", "agent_error") else status] += 1
    assert result.metadata["counts"]["status"] == dict(sorted(modes.items()))


def test_full_leaderboard_swe_agent_mini_headline(shared_data, tmp_path, capsys) -> None:
    """swe-agent-mini + claude-4-sonnet: the leaderboard's accuracy 0.1275 = 51 / 400
    resolved, counting the 20 trials that timed out but passed their tests, is the headline;
    the stricter reading (those 20 as failures) is 0.0775 beside it."""
    from evalnoise.cli import main

    root = shared_data("terminal-bench/core-0.1.1") / "20250825_swe-agent-mini_claude-4-sonnet"
    out = tmp_path / "swe.parquet"
    assert main(["import", "terminal-bench", str(root), "-o", str(out)]) == 0
    capsys.readouterr()
    assert main(["analyze", str(out), "--json", "--no-attribution"]) == 0
    (group,) = json.loads(capsys.readouterr().out)["groups"]
    assert group["mean"] == pytest.approx(0.1275, abs=1e-12)
    assert group["health"]["valid"] is True
    assert group["readings"]["verified_as_failures"]["mean"] == pytest.approx(0.0775, abs=1e-12)
    assert main(["analyze", str(out), "--json", "--no-attribution", "--after-agent-failure",
                 "failure"]) == 0  # fmt: skip
    (strict,) = json.loads(capsys.readouterr().out)["groups"]
    assert strict["mean"] is None  # today's reading: 219 of 400 not ok, withheld
    assert "219 of 400" in strict["withheld"]


def test_the_headline_is_the_leaderboard_accuracy(tb: Path, tmp_path: Path, capsys) -> None:
    """A trial that timed out but passed its tests is resolved (the leaderboard's rule):
    `evalnoise analyze` on the import gives each agent the leaderboard's accuracy, and the
    stricter reading (those verdicts as failures) beside it."""
    from evalnoise.cli import main

    out = tmp_path / "tb.parquet"
    assert main(["import", "terminal-bench", str(tb), "-o", str(out)]) == 0
    capsys.readouterr()
    assert main(["analyze", str(out), "--json", "--no-attribution"]) == 0
    groups = {g["group"]: g for g in json.loads(capsys.readouterr().out)["groups"]}
    rows = import_trials("terminal-bench", [tb]).table.to_pylist()
    verified_agents = 0
    for agent, group in groups.items():
        mine = [r for r in rows if r["agent"] == agent]
        leaderboard = sum(r["score"] for r in mine) / len(mine)  # 5 trials of every task
        strict = sum(r["score"] for r in mine if r["verified_after"] is None) / len(mine)
        assert group["readings"]["failures_as_incorrect"]["mean"] == pytest.approx(leaderboard)
        assert group["health"]["valid"] is True
        assert group["mean"] == pytest.approx(leaderboard)
        if any(r["verified_after"] for r in mine):
            verified_agents += 1
            assert group["readings"]["verified_as_failures"]["mean"] == pytest.approx(strict)
            assert strict <= leaderboard
    assert verified_agents == 3  # every agent of the excerpt has such trials
    resolved_late = [r for r in rows if r["verified_after"] and r["score"] == 1.0]
    assert resolved_late  # and some of them passed their tests: the readings differ
