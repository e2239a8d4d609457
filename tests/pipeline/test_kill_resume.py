"""A run killed at any moment resumes to the same result.

The tiny evaluation (2 agents × 1 resource profile × 3 tasks × 2 trials, the stdlib agent of
tests/pipeline/tiny_agent in real containers) runs once uninterrupted in one workspace (the
reference, made once per test run and shared with test_slurm.py) and, in another, is killed
in each stage in turn: ``evalnoise run --cores 2`` is started in its own process group and,
while a job of the stage's rule runs, the whole group gets SIGKILL (Snakemake, its jobs, the
wrapper; the trial containers outlive it and the runner removes them on the rerun). Then
``evalnoise run --cores 2`` runs again — no manual ``snakemake --unlock``: the wrapper finds
Snakemake's stale locks and removes them — and results/ must be what the uninterrupted run
made.

- run_trials: the workspace's first run, killed once some trials are journaled and a
  shard's job is running (``TINY_SLEEP_S`` widens each trial to 1 s). No trial is lost
  or run twice: those journaled before the kill keep their start times.
- score, analyze_group, compare, report: ``evalnoise run --forcerun <rule>`` on the finished
  workspace, killed while a job of that rule runs (inside Snakemake's process, so the kill
  takes Snakemake with it; each is held by a pause in the workspace's copy of its script:
  score, analyze_group and compare once their log is open, the report once its files are
  written in its staging directory, before the rename). Snakemake removes a
  job's outputs when it starts it, so the kill leaves them missing (or, for the report, its
  directory) under a summary, manifest and report that look up to date — the state in which
  a missing pair file used to stay missing ("Nothing to be done").
- compare, then DVC: after the resume, ``dvc repro`` records results/analysis complete
  (before, ``snakemake all_analysis`` did not rebuild a missing pair file and DVC recorded
  the directory without it) and ``dvc status`` is clean.

**What "the same result" means.** Every file under results/ except results/logs/ (logs
append and carry times) exists in both workspaces, and compares by SHA-256 of:

- its bytes, for everything that holds no time, directly or derived: under results/analysis/,
  results/metrics.json, the tasks, the image records, results/config.json,
  results/health.json and results/report/ (Evaluation Cards as JSON and Markdown,
  cards.json, charts as HTML);
- trial shards, score shards and journals: every column or field except ``duration_s``,
  ``peak_memory_bytes``, ``started_at`` and ``ended_at`` (wall-clock measurements of the
  trial's container; a trial's agent, profile, task, trial, attempt, seed, status, exit
  code, prediction, limits, image, scorer verdict and judge status must be identical),
  rows in key order (journals are appended as trials finish, concurrently);
- canary records without ``duration_s``;
- what is computed from *when* trials ran, masked: the attribution stage's time-block
  variance components, infrastructure share and drift (keys ``infra_share*``,
  ``components``, ``infra_components``, ``drift_*``, ``time_blocks`` in
  results/analysis/attribution.json and results/metrics.json; the "infrastructure share of
  variance" line of summary.txt). A resumed run ran some trials later than an uninterrupted
  one, so these legitimately differ — the same holds between any two runs;
- what the run spent, masked: the groups' cost drivers (key ``costs`` in the analysis'
  JSON and the cards; the cards' "per trial attempt" lines), whose container seconds are
  the trials' ``duration_s`` and whose judge calls depend on what a killed run had cached;
- results/report/index.html with the workspace's git commit and the run's start and end
  times masked (it prints the manifest's provenance);
- the manifest without ``git`` (each workspace is its own repository), ``started_at``,
  ``ended_at`` and ``execution`` (every job that ran a shard: a shard killed and resumed
  lists both jobs, by design); its artifact list compares by path, and by hash for the
  byte-identical artifacts above.

The wrapper itself (stale locks, a concurrent run, exit codes, arguments) and
:func:`evalnoise.atomic.atomic_directory` have fast tests at the end, without an engine.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

import pandas as pd
import pytest
from pipeline_helpers import (
    TINY_REFERENCE,
    WHEN_TEXT,
    leftover_containers,
    make_workspace,
    remove_containers,
    run_tool,
    tool_env,
    venv_tool,
    without_when,
)

from evalnoise.cli.run import exclusive, run_snakemake

#: The test run's shared tiny evaluation: its finished, uninterrupted workspace is the
#: reference (the ``tiny_reference`` fixture, tests/pipeline/conftest.py).
TINY = TINY_REFERENCE
N_TRIALS = 2 * 1 * 3 * 2

#: Wall-clock measurements of a trial: the only fields two runs of it may differ in.
MEASURED = ("duration_s", "peak_memory_bytes", "started_at", "ended_at")
TRIAL_KEY = ["agent", "resource_profile", "task_id", "trial", "attempt"]


# -- what must be identical -----------------------------------------------------------------


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _table(path: Path) -> str:
    frame = pd.read_parquet(path).drop(columns=list(MEASURED), errors="ignore")
    frame = frame.sort_values(TRIAL_KEY).reset_index(drop=True)
    return _sha(frame.to_csv(index=False).encode())


def _journal(path: Path) -> str:
    records = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    rows = [{k: v for k, v in r.items() if k not in MEASURED} for r in records]
    rows.sort(key=lambda r: json.dumps(r, sort_keys=True))
    return _sha(json.dumps(rows, sort_keys=True).encode())


def _canary(path: Path) -> str:
    record = json.loads(path.read_text())
    record.pop("duration_s", None)
    return _sha(json.dumps(record, sort_keys=True).encode())


def _text(path: Path) -> str:
    text = path.read_text()
    text = re.sub(r"\b[0-9a-f]{40}\b", "<commit>", text)
    text = re.sub(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z", "<time>", text)
    # the report shows the manifest's execution record (dropped in _manifest): a killed
    # and resumed run ran more trial jobs than one that never stopped
    text = re.sub(r"(<th>trial jobs</th><td>)[^<]*", r"\1<jobs>", text)
    return _sha(WHEN_TEXT.sub("<when>", text).encode())


def _json(path: Path) -> str:
    return _sha(json.dumps(without_when(json.loads(path.read_text())), sort_keys=True).encode())


SHARD = re.compile(r"(trials|scores|judged/[^/]+)/[^/]+/[^/]+/t[^/]+/c[^/]+\.parquet")


def _manifest(path: Path, exact: set[str]) -> str:
    manifest = json.loads(path.read_text())
    for key in ("git", "started_at", "ended_at", "execution"):
        manifest.pop(key, None)
    manifest["artifacts"] = [
        a if a["path"].removeprefix("results/") in exact else a["path"]
        for a in manifest["artifacts"]
    ]
    return _sha(json.dumps(manifest, sort_keys=True).encode())


def _is_exact(path: Path) -> bool:
    """Whether ``path`` must be byte-identical (it holds no time, directly or derived)."""
    if path.suffix == ".json":
        return without_when(json.loads(path.read_text())) == json.loads(path.read_text())
    if path.suffix in (".txt", ".md"):
        return not WHEN_TEXT.search(path.read_text())
    return True


def fingerprint(workspace: Path) -> dict[str, str]:
    """results/ of ``workspace`` as {path: digest of what must not change} (module doc)."""
    results = workspace / "results"
    out, exact = {}, set()
    files = [p for p in sorted(results.rglob("*")) if p.is_file()]
    for path in files:
        relative = path.relative_to(results).as_posix()
        if relative.startswith("logs/") or relative == "manifest.json":
            continue
        if SHARD.fullmatch(relative):
            out[relative] = _table(path)
        elif relative.endswith(".jsonl") and "/journals/" in relative:
            out[relative] = _journal(path)
        elif re.fullmatch(r"trials/[^/]+/canary\.json", relative):
            out[relative] = _canary(path)
        elif relative == "report/.snakemake_timestamp":
            out[relative] = "present"  # Snakemake's marker of a finished directory output
        elif relative == "report/index.html":
            out[relative] = _text(path)
        elif _is_exact(path):
            out[relative] = _sha(path.read_bytes())
            exact.add(relative)
        elif path.suffix == ".json":
            out[relative] = _json(path)
        else:
            out[relative] = _text(path)
    if (results / "manifest.json").exists():
        out["manifest.json"] = _manifest(results / "manifest.json", exact)
    return out


def assert_same_results(workspace: Path, reference: Path) -> None:
    got, want = fingerprint(workspace), fingerprint(reference)
    assert sorted(got) == sorted(want), "files differ: " + str(sorted(set(got) ^ set(want)))
    differ = [path for path in want if got[path] != want[path]]
    assert not differ, f"contents differ: {differ}"


# -- running and killing --------------------------------------------------------------------


def evalnoise_run(workspace: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run_tool(workspace, "evalnoise", "run", "--cores", "2", *args)


def run_killed(
    workspace: Path,
    rule: str,
    *args: str,
    ready: Callable[[], bool] = lambda: True,
    timeout: float = 240,
) -> str:
    """Start ``evalnoise run --cores 2 ARGS`` in its own process group; SIGKILL the group
    as soon as a job of ``rule`` is running and ``ready()``. A job in its own process is
    running while its script, which Snakemake writes to .snakemake/scripts/tmp*.<rule>.py
    for the job's lifetime, exists; a job inside Snakemake's process (``run:`` +
    in_process) once its log says it started. Returns what the run printed."""
    scripts = workspace / ".snakemake" / "scripts"
    before = set(scripts.glob("*")) if scripts.is_dir() else set()
    log = workspace.parent / f"{workspace.name}-killed-in-{rule}.log"
    with open(log, "w") as out:
        proc = subprocess.Popen(
            [venv_tool("evalnoise"), "run", "--cores", "2", *args],
            cwd=workspace,
            env=tool_env(workspace),
            start_new_session=True,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        deadline = time.monotonic() + timeout
        while True:
            running = [p for p in scripts.glob(f"*.{rule}.py") if p not in before]
            if (running or in_process_running(workspace, rule)) and ready():
                break
            assert proc.poll() is None, f"the run ended before a {rule} job could be killed"
            assert time.monotonic() < deadline, f"no {rule} job ran within {timeout}s"
            time.sleep(0.02)
    finally:
        with suppress(ProcessLookupError):  # the run already ended (the assertion says why)
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    return log.read_text()


#: Where the kill tests hold a job of each rule (see :func:`paused`): the line of its script
#: the pause follows. The report is held half-written: its files in the staging directory
#: (evalnoise.atomic.atomic_directory), not yet renamed into results/report.
LOG_OPEN = "log = log_to(snakemake.log[0])\n"
PAUSE_AFTER = {
    "score": LOG_OPEN,
    "analyze_group": LOG_OPEN,
    "compare": LOG_OPEN,
    "report": "    files = build_report(staging, inputs, png=png)\n",
}


@contextmanager
def paused(workspace: Path, rule: str) -> Iterator[None]:
    """The workspace's script of ``rule`` sleeps after its :data:`PAUSE_AFTER` line, until
    the kill.

    A job inside Snakemake's process does its work at this scale in milliseconds, too soon
    for a poll to catch it running. The pause holds the job where the kill is to land
    (started with no output yet; the report with its files staged). The script is restored
    before the resume, which runs the real one."""
    from evalnoise.pipeline.dependencies import workflow_rules

    script = workspace / workflow_rules(workspace)[rule].script
    original = script.read_text()
    anchor = PAUSE_AFTER[rule]
    assert anchor in original, f"{script}: no line {anchor.strip()!r} to pause after"
    indent = anchor[: len(anchor) - len(anchor.lstrip())]
    sleep = f"{indent}__import__('time').sleep(600)\n"
    script.write_text(original.replace(anchor, anchor + sleep, 1))
    try:
        yield
    finally:
        script.write_text(original)


def in_process_running(workspace: Path, rule: str) -> bool:
    """Whether a job of ``rule`` runs inside Snakemake's process now: its log's last
    in-process line says it started and not yet that it is done
    (evalnoise.pipeline.jobs.run_script; Snakemake empties a job's log when it starts it)."""
    pattern = re.compile(rf"in-process job {re.escape(rule)} (started|done)")
    for path in (workspace / "results" / "logs").rglob("*.log"):
        try:
            marks = pattern.findall(path.read_text(errors="replace"))
        except FileNotFoundError:  # Snakemake removed it as its job started
            continue
        if marks and marks[-1] == "started":
            return True
    return False


def stale_locks(workspace: Path) -> list[Path]:
    return sorted((workspace / ".snakemake" / "locks").glob("*.lock"))


def resume(workspace: Path) -> subprocess.CompletedProcess[str]:
    """The rerun after a kill: `evalnoise run` finds the stale locks and unlocks first."""
    assert stale_locks(workspace), "the killed run left no Snakemake lock"
    resumed = evalnoise_run(workspace)
    assert "snakemake --unlock" in resumed.stderr
    assert not stale_locks(workspace)
    return resumed


def trial_rows(workspace: Path) -> list[dict]:
    """The trials journaled so far (a line being appended, or torn by the kill, left out)."""
    rows = []
    for path in sorted((workspace / "results" / "trials").glob("*/*/journals/*.jsonl")):
        for line in path.read_text().splitlines():
            try:
                record = json.loads(line)
            except ValueError:
                continue
            if "journal" not in record:
                rows.append(record)
    return rows


def trial_key(row: dict) -> tuple:
    return tuple(row[k] for k in TRIAL_KEY)


# -- fixtures ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def engine(docker_engine):
    return docker_engine


@pytest.fixture(scope="module")
def reference(tiny_reference, engine) -> Path:
    """The tiny evaluation, run once without interruption (``evalnoise run --cores 2``):
    the test run's shared one, which test_slurm.py's local executor results are too."""
    return tiny_reference


@pytest.fixture(scope="module")
def killed(tmp_path_factory, engine):
    """The workspace killed in every stage in turn (its first run is killed in trials)."""
    ws = make_workspace(tmp_path_factory.mktemp("killed") / "ws", TINY)
    yield ws
    remove_containers(engine, leftover_containers(engine, ws))


def finished(workspace: Path) -> Path:
    """``workspace`` with the evaluation complete (after a test that failed mid-way too)."""
    if stale_locks(workspace) or not (workspace / "results" / "health.json").exists():
        evalnoise_run(workspace)
    return workspace


# -- tests ------------------------------------------------------------------------------------


@pytest.mark.docker
@pytest.mark.slow
def test_killed_during_trials_resumes_with_every_trial_once(killed, reference, engine):
    ws = killed
    assert not (ws / "results").exists(), "the trials case needs the workspace's first run"
    run_killed(ws, "run_trials", ready=lambda: len(trial_rows(ws)) >= 3)
    at_kill = trial_rows(ws)
    assert 3 <= len(at_kill) < N_TRIALS

    resume(ws)

    rows = trial_rows(ws)
    keys = [trial_key(r) for r in rows]
    assert len(rows) == N_TRIALS and len(set(keys)) == len(keys)
    by_key = dict(zip(keys, rows, strict=True))
    for row in at_kill:  # journaled before the kill: kept, not run again
        assert by_key[trial_key(row)]["started_at"] == row["started_at"]
    assert not leftover_containers(engine, ws)
    assert_same_results(ws, reference)


#: A job of each rule, as the kill leaves it: some of the rule's outputs missing.
STAGE_OUTPUTS = {
    "score": ("scores/*/*/t*/c*.parquet", 2),
    "analyze_group": ("analysis/groups/*/*.json", 2),
    "compare": ("analysis/pairs/*/*/*/*.json", 1),
}


@pytest.mark.docker
@pytest.mark.slow
@pytest.mark.parametrize("rule", ["score", "analyze_group", "compare", "report"])
def test_killed_during_a_stage_resumes_to_the_same_result(rule, killed, reference):
    ws = finished(killed)
    results = ws / "results"
    ready = (
        # the report is half-written: some of its files are in its staging directory
        (lambda: any(p.is_file() for p in results.glob(".report.*.tmp/**/*")))
        if rule == "report"
        else (lambda: True)
    )
    with paused(ws, rule):
        run_killed(ws, rule, "--forcerun", rule, ready=ready)
    if rule == "report":
        assert not (results / "report").exists()  # never there half-populated
    else:
        pattern, count = STAGE_OUTPUTS[rule]
        assert len(list(results.glob(pattern))) < count
        assert (results / "analysis" / "summary.txt").exists()  # consumers look up to date

    resume(ws)

    assert not list(results.rglob(".*.tmp")), "a killed writer's temporary is left"
    assert_same_results(ws, reference)
    if rule == "compare":
        # DVC records the resumed results, complete
        run_tool(ws, "dvc", "repro")
        assert_same_results(ws, reference)
        outs = dvc_lock_outs(ws)
        assert outs["results/analysis"]["nfiles"] == len(
            [p for p in (results / "analysis").rglob("*") if p.is_file()]
        )
        assert "up to date" in run_tool(ws, "dvc", "status").stdout


def dvc_lock_outs(workspace: Path) -> dict[str, dict]:
    import yaml

    lock = yaml.safe_load((workspace / "dvc.lock").read_text())
    return {out["path"]: out for stage in lock["stages"].values() for out in stage.get("outs", [])}


# -- the wrapper on its own (a stand-in for snakemake; no engine, seconds) --------------------

FAKE_SNAKEMAKE = """
import json, os, shutil, sys
with open(os.environ["FAKE_SNAKEMAKE_CALLS"], "a") as handle:
    handle.write(json.dumps(sys.argv[1:]) + "\\n")
if "--unlock" in sys.argv:
    shutil.rmtree(".snakemake/locks")
sys.exit(int(os.environ.get("FAKE_SNAKEMAKE_EXIT", "0")))
"""


@pytest.fixture
def fake(tmp_path, monkeypatch):
    """A project directory (the cwd) and a stand-in snakemake that records its calls."""
    project = tmp_path / "project"
    project.mkdir()
    script = tmp_path / "snakemake.py"
    script.write_text(FAKE_SNAKEMAKE)
    calls = tmp_path / "calls.jsonl"
    monkeypatch.chdir(project)
    monkeypatch.setenv("FAKE_SNAKEMAKE_CALLS", str(calls))

    def run(*argv: str) -> int:
        return run_snakemake(list(argv), snakemake=[sys.executable, str(script)])

    def made() -> list[list[str]]:
        return (
            [json.loads(line) for line in calls.read_text().splitlines()] if calls.exists() else []
        )

    return project, run, made


def _kill_leftovers(project: Path) -> None:
    locks = project / ".snakemake" / "locks"
    locks.mkdir(parents=True)
    (locks / "0.input.lock").write_text("results/tasks.parquet\n")
    (locks / "0.output.lock").write_text("results/analysis/summary.txt\n")
    pairs = project / "results" / "analysis" / "pairs"
    pairs.mkdir(parents=True)
    (pairs / "b.json").write_text("{}\n")
    (pairs / ".b.json.k3x9q2ab.tmp").write_text("{")  # atomic_path, killed
    shards = project / "results" / "trials" / "a" / "1x" / "t0000-0001"
    shards.mkdir(parents=True)
    (shards / ".c0000-0002.parquet.tmp-4242").write_bytes(b"PAR1")  # the runner's, killed
    (project / "results" / ".report.ab12cd34.tmp" / "cards").mkdir(parents=True)
    (project / "results" / ".report.ab12cd34.tmp" / "cards.json").write_text("{")


def test_run_unlocks_a_killed_runs_locks_and_clears_its_temporaries(fake, capsys):
    project, run, made = fake
    _kill_leftovers(project)
    assert run("--cores", "2", "all") == 0
    assert made() == [
        ["--cores", "2", "all", "--unlock"],
        ["--cores", "2", "all", "--rerun-incomplete"],
    ]
    assert "snakemake --unlock" in capsys.readouterr().err
    left = sorted(p.relative_to(project).as_posix() for p in (project / "results").rglob("*"))
    assert left == [
        "results/analysis",
        "results/analysis/pairs",
        "results/analysis/pairs/b.json",
        "results/trials",
        "results/trials/a",
        "results/trials/a/1x",
        "results/trials/a/1x/t0000-0001",
    ]


def test_run_without_leftovers_just_runs_snakemake_and_returns_its_exit_code(fake, monkeypatch):
    _, run, made = fake
    monkeypatch.setenv("FAKE_SNAKEMAKE_EXIT", "3")
    assert run("-n") == 3
    assert run("--touch") == 3  # never --rerun-incomplete with --touch
    assert run("--ri") == 3
    assert made() == [["-n", "--rerun-incomplete"], ["--touch"], ["--ri"]]


def test_run_refuses_while_another_evalnoise_run_is_active(fake, capsys):
    project, run, made = fake
    _kill_leftovers(project)
    with exclusive(project / ".snakemake" / "evalnoise-run.lock") as holder:
        assert holder is None
        assert run("--cores", "2") == 1
    assert made() == []
    assert f"pid {os.getpid()}" in capsys.readouterr().err
    assert (project / ".snakemake" / "locks" / "0.input.lock").exists()


@pytest.mark.skipif(not Path("/proc/self/cwd").exists(), reason="needs /proc (Linux)")
def test_run_keeps_the_locks_of_a_snakemake_working_here(fake, capsys):
    project, run, made = fake
    _kill_leftovers(project)
    other = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(60)", "snakemake", "--cores", "1"],
        cwd=project,
    )
    try:
        assert run("--cores", "2") == 0
    finally:
        other.kill()
        other.wait()
    assert made() == [["--cores", "2", "--rerun-incomplete"]]  # no --unlock
    assert "its locks are live" in capsys.readouterr().err
    assert (project / ".snakemake" / "locks" / "0.input.lock").exists()
    assert (project / "results" / "analysis" / "pairs" / ".b.json.k3x9q2ab.tmp").exists()


def test_run_passes_every_argument_to_snakemake():
    from evalnoise.cli import build_parser

    args = build_parser().parse_args(["run", "--cores", "2", "-n", "--forcerun", "compare"])
    assert args.snakemake_args == ["--cores", "2", "-n", "--forcerun", "compare"]


def test_a_directory_written_atomically_is_never_there_half_written(tmp_path):
    from evalnoise.atomic import atomic_directory, remove_temporaries

    target = tmp_path / "report"
    target.mkdir()
    (target / "old.html").write_text("old")
    killed = subprocess.run(
        [
            sys.executable,
            "-c",
            "import os, signal, sys\n"
            "from evalnoise.atomic import atomic_directory\n"
            "with atomic_directory(sys.argv[1]) as staging:\n"
            "    (staging / 'index.html').write_text('half')\n"
            "    os.kill(os.getpid(), signal.SIGKILL)\n",
            str(target),
        ],
        check=False,
    )
    assert killed.returncode == -signal.SIGKILL
    assert [p.name for p in target.iterdir()] == ["old.html"]  # the old one, whole
    left = list(tmp_path.glob(".report.*.tmp"))  # the killed writer's staging directory
    assert len(left) == 1 and remove_temporaries(tmp_path) == left

    with atomic_directory(target) as staging:
        (staging / "index.html").write_text("new")
    assert [p.name for p in target.iterdir()] == ["index.html"]
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]
