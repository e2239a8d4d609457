"""evalnoise and Harbor itself (PyPI ``harbor`` 0.25, tools/install-harbor.sh) on the same
task folders: issue 22, item 9.

1. A task written by ``harbor task init`` (the committed ``tests/data/harbor/init-task/``
   and, with Harbor installed, a fresh one) is read by evalnoise's loader, which refuses
   what it cannot honour offline — Harbor's default public network, an empty instruction —
   naming the task, the field and the reason; its separate verifier environment is read
   (``tests/Dockerfile`` builds the verifier's image). Switched to
   ``environment_mode = "shared"`` and a local image (and given an instruction: the
   template's is empty) it loads, with ``public_network="offline"`` since its network is
   public.
2. Every example task (``examples/harbor-tasks/``) loads in Harbor's own task model with
   the name, instruction, resources and time limits evalnoise's loader reads.
3. Harbor's ``oracle`` and ``nop`` agents and evalnoise's ``oracle`` and ``null`` agents on
   the same example tasks, offline, against the same engine: equal rewards task by task
   (1.0 and 0.0). Harbor's Docker environment refuses ``network_mode = "no-network"`` (it
   enforces it through an egress-control sidecar built from a public image), so Harbor runs
   copies that declare ``"public"`` and gets no network from the compose overlay
   (``harbor_tools.compose_overlay``); evalnoise runs the folders as shipped. The per-trial
   seconds of both harnesses are printed (``pytest -s``), not asserted.

Without Harbor (or, for the runs, without the compose plugin, the engine or the base image)
these tests skip naming what is missing — and fail under CI (``model_stack.require``).
"""

from __future__ import annotations

import dataclasses
import json
import shutil
import time
import tomllib
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from harbor_tools import (
    HarborError,
    harbor_missing,
    harbor_run_missing,
    harbor_task_init,
    load_tasks_with_harbor,
    run_harbor,
)
from model_stack import require

from evalnoise.tasks.harbor_folders import (
    environment_task_rows,
    load_harbor_task,
    load_harbor_tasks,
)
from evalnoise.tasks.harbor_task import HarborTask, HarborTaskError

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples" / "harbor-tasks"
EXAMPLE_DIRS = sorted(p for p in EXAMPLES.iterdir() if (p / "task.toml").is_file())
INIT_TASK = REPO / "tests" / "data" / "harbor" / "init-task"
INIT_NAME = "evalnoise/init-task"
#: how evalnoise's problems name a task whose [task].name differs from its folder's
INIT_LABEL = f"{INIT_NAME} (init-task)"
#: quick example tasks of several kinds (not the memory-hungry resource-sensitive ones):
#: named rewards, typed output, file editing, the legacy format with a task env and workdir,
#: fixing a Python program, a non-root task user with a root verifier
COMPARED = (
    "access-log-report",
    "csv-to-jsonl",
    "edit-ini-config",
    "env-greeting",
    "fix-csv-quotes",
    "user-settings",
)
#: evalnoise's agent and Harbor's agent that do the same thing, and the reward both must get
AGENT_PAIRS = {"oracle": ("oracle", 1.0), "null": ("nop", 0.0)}
PROFILE = "3x"
CONCURRENCY = 2  # both harnesses run two trials at a time
INSTRUCTION = "Write the word done to /app/done.txt.\n"

PUBLIC_NETWORK = (
    "the task declares network_mode = 'public'; the run rejects public-network tasks "
    '(benchmark.network: reject). Declare network_mode = "no-network" if it needs none, or '
    "run with benchmark.network: as_declared (a network of the trial's own) or offline"
)
EMPTY_INSTRUCTION = "empty: the agent would get no instruction"


def _problems(folder: Path, public_network: str) -> list[tuple[str, str, str]]:
    """evalnoise's problems with a task folder as (task, field, reason); [] if it loads."""
    try:
        load_harbor_task(folder, public_network=public_network)
    except HarborTaskError as exc:
        assert str(exc).startswith(f"{folder.resolve()}: {len(exc.problems)} problem")
        for problem in exc.problems:
            assert f"  - {problem.task}: {problem.field}: {problem.reason}" in str(exc)
        return [(p.task, p.field, p.reason) for p in exc.problems]
    return []


def _make_runnable(folder: Path, image: str, local_image: str) -> Path:
    """Switch a ``harbor task init`` folder to what runs offline here: a shared verifier,
    a local image (``image="dockerfile"``: ``FROM ${BASE}``; ``"docker_image"``: the
    prebuilt ``local_image``) and an instruction."""
    toml = folder / "task.toml"
    text = toml.read_text()
    text = text.replace('environment_mode = "separate"', 'environment_mode = "shared"')
    if image == "docker_image":
        text = text.replace("[environment]\n", f'[environment]\ndocker_image = "{local_image}"\n')
    else:
        (folder / "environment" / "Dockerfile").write_text("ARG BASE\nFROM ${BASE}\nWORKDIR /app\n")
    toml.write_text(text)
    (folder / "instruction.md").write_text(INSTRUCTION)
    written = tomllib.loads(text)
    assert written["verifier"]["environment_mode"] == "shared"
    assert written["environment"].get("docker_image") == (
        local_image if image == "docker_image" else None
    )
    return folder


def _check_init_task(folder: Path, tmp_path: Path) -> dict[str, Path]:
    """What evalnoise must say about a folder as ``harbor task init`` writes it (defaults),
    and about it once switched; returns the switched copies by image variant."""
    assert _problems(folder, "reject") == [
        (INIT_LABEL, "[environment].network_mode", PUBLIC_NETWORK),
        (INIT_LABEL, "instruction.md", EMPTY_INSTRUCTION),
    ]
    # offline: the network is no longer a problem; the separate verifier never was
    assert _problems(folder, "offline") == [(INIT_LABEL, "instruction.md", EMPTY_INSTRUCTION)]
    # given an instruction, it loads as written: its verifier in a container of its own, of
    # the image tests/Dockerfile builds (offline that build fails: the trials' infra_error)
    as_written = tmp_path / "as-written"
    shutil.copytree(folder, as_written, ignore=shutil.ignore_patterns("__pycache__"))
    (as_written / "instruction.md").write_text(INSTRUCTION)
    verifier = load_harbor_task(as_written, public_network="offline").verifier
    assert verifier.separate and verifier.dockerfile
    local_image = "evalnoise-base:0123456789ab"  # loading does not look the image up
    switched = {}
    for image in ("dockerfile", "docker_image"):
        copy = tmp_path / image / "init-task"
        shutil.copytree(folder, copy, ignore=shutil.ignore_patterns("__pycache__"))
        _make_runnable(copy, image, local_image)
        # its network is still Harbor's default, public: refused unless run offline
        assert _problems(copy, "reject") == [
            (INIT_LABEL, "[environment].network_mode", PUBLIC_NETWORK)
        ]
        task = load_harbor_task(copy, public_network="offline")
        assert task.name == INIT_NAME
        assert task.folder == copy.resolve()
        assert task.instruction == INSTRUCTION
        assert task.network_mode == "public"  # what it asked for; trials run without
        assert task.schema_version == "1.4"
        assert task.level is None
        # Harbor leaves cpus and memory unset; evalnoise's defaults fill them, and say so
        assert task.defaulted == ("cpus", "memory_mb")
        assert (task.cpus, task.memory_mb, task.storage_mb) == (1.0, 2048, None)
        assert (task.agent_timeout_s, task.verifier_timeout_s, task.build_timeout_s) == (
            600.0,
            600.0,
            600.0,
        )
        assert task.has_solution is True
        assert dict(task.unknown) == {}  # every key the template writes is Harbor's
        assert dict(task.env) == dict(task.verifier_env) == dict(task.solution_env) == {}
        assert (task.workdir, task.agent_user, task.verifier_user) == (None, None, None)
        if image == "docker_image":
            assert (task.docker_image, task.build_context) == (local_image, None)
        else:
            assert (task.docker_image, task.build_context) == (None, copy.resolve() / "environment")
        switched[image] = copy
    return switched


# --- 1. a task written by `harbor task init` --------------------------------------------


def test_committed_init_task_is_refused_as_written_and_loads_once_switched(tmp_path) -> None:
    _check_init_task(INIT_TASK, tmp_path)


@pytest.fixture(scope="module")
def fresh_init(tmp_path_factory) -> dict[str, Path]:
    """``harbor task init`` run now: with Harbor's defaults, and with its own
    ``--verifier-mode shared``."""
    require(harbor_missing() is None, str(harbor_missing()))
    root = tmp_path_factory.mktemp("harbor-init")
    return {
        "default": harbor_task_init(INIT_NAME, root / "default"),
        "shared": harbor_task_init(INIT_NAME, root / "shared", "--verifier-mode", "shared"),
    }


def _files(folder: Path) -> dict[str, bytes]:
    return {
        p.relative_to(folder).as_posix(): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and "__pycache__" not in p.parts
    }


def test_fresh_harbor_task_init_is_the_committed_fixture(fresh_init) -> None:
    """The fixture is what this Harbor writes (its README: verbatim but for __pycache__)."""
    assert _files(fresh_init["default"]) == _files(INIT_TASK)


def test_fresh_harbor_task_init_is_refused_as_written_and_loads_once_switched(
    fresh_init, tmp_path
) -> None:
    switched = _check_init_task(fresh_init["default"], tmp_path)
    parsed = load_tasks_with_harbor(list(switched.values()))
    for copy in switched.values():
        task = load_harbor_task(copy, public_network="offline")
        harbor = parsed[str(copy)]
        assert "error" not in harbor, harbor.get("error")
        assert harbor["is_valid_dir"] is True
        assert harbor["verifier_mode"] == "shared"
        assert (harbor["name"], harbor["instruction"]) == (task.name, task.instruction)
        assert harbor["config"]["environment"]["docker_image"] == task.docker_image


def test_fresh_init_with_harbors_shared_verifier_mode(fresh_init, tmp_path) -> None:
    """``harbor task init --verifier-mode shared`` leaves evalnoise only the network and
    the empty instruction to object to; given an instruction it loads offline."""
    folder = fresh_init["shared"]
    assert _problems(folder, "reject") == [
        (INIT_LABEL, "[environment].network_mode", PUBLIC_NETWORK),
        (INIT_LABEL, "instruction.md", EMPTY_INSTRUCTION),
    ]
    copy = tmp_path / "init-task"
    shutil.copytree(folder, copy, ignore=shutil.ignore_patterns("__pycache__"))
    (copy / "instruction.md").write_text(INSTRUCTION)
    task = load_harbor_task(copy, public_network="offline")
    assert (task.name, task.instruction, task.network_mode) == (INIT_NAME, INSTRUCTION, "public")
    # the environment is still the template's `FROM ubuntu:24.04`: loading does not pull
    # images; offline, its build fails and the trials are the build's infra_error
    assert task.build_context == copy.resolve() / "environment"


# --- 2. the example tasks in Harbor's own task model -------------------------------------


@pytest.fixture(scope="module")
def harbor_model() -> dict[str, dict]:
    require(harbor_missing() is None, str(harbor_missing()))
    return load_tasks_with_harbor(EXAMPLE_DIRS)


def test_there_are_example_tasks() -> None:
    assert len(EXAMPLE_DIRS) == 18
    assert set(COMPARED) <= {p.name for p in EXAMPLE_DIRS}


LEGACY_WARNINGS = {
    "The 'allow_internet' field is deprecated. Use [environment].network_mode instead.",
    "The 'memory' field is deprecated. Use 'memory_mb' instead.",
}


@pytest.mark.parametrize("folder", EXAMPLE_DIRS, ids=lambda p: p.name)
def test_example_task_loads_in_harbors_model_as_evalnoise_reads_it(folder, harbor_model):
    parsed = harbor_model[str(folder)]
    assert "error" not in parsed, parsed.get("error")
    assert parsed["is_valid_dir"] is True  # `harbor run -p` would not skip it
    assert parsed["has_steps"] is False
    assert parsed["verifier_mode"] == "shared"
    task = load_harbor_task(folder)
    config = parsed["config"]
    environment = config["environment"]
    assert parsed["name"] == task.name
    assert parsed["instruction"] == task.instruction
    assert environment["cpus"] == task.cpus
    assert environment["memory_mb"] == task.memory_mb
    assert environment["storage_mb"] == task.storage_mb
    assert config["agent"]["timeout_sec"] == task.agent_timeout_s
    assert config["verifier"]["timeout_sec"] == task.verifier_timeout_s
    assert environment["build_timeout_sec"] == task.build_timeout_s
    assert environment["network_mode"] == task.network_mode == "no-network"
    assert environment["docker_image"] == task.docker_image is None
    assert environment["env"] == dict(task.env)
    assert environment["workdir"] == task.workdir
    assert (config["agent"]["user"], config["verifier"]["user"]) == (
        task.agent_user,
        task.verifier_user,
    )
    assert config["verifier"]["env"] == dict(task.verifier_env)
    assert config["metadata"] == dict(task.metadata)
    # nothing evalnoise counts as Harbor's defaults was filled in for the example tasks
    assert task.defaulted == ()
    if folder.name == "env-greeting":  # the legacy `version = "1.0"` format
        assert task.name == folder.name and config["task"] is None
        assert set(parsed["warnings"]) == LEGACY_WARNINGS
    else:
        assert parsed["warnings"] == []


# --- 3. Harbor's agents against evalnoise's, on the same tasks -----------------------------


def _as_dict(task: HarborTask) -> dict[str, Any]:
    return {
        f.name: dict(v) if isinstance(v := getattr(task, f.name), Mapping) else v
        for f in dataclasses.fields(task)
    }


def _public_copies(root: Path) -> dict[str, Path]:
    """The compared tasks with ``network_mode = "no-network"`` (legacy: ``allow_internet =
    false``) changed to public — what Harbor's Docker environment accepts — and nothing else."""
    copies = {}
    for name in COMPARED:
        copy = root / name
        shutil.copytree(EXAMPLES / name, copy)
        toml = copy / "task.toml"
        text = toml.read_text()
        changed = text.replace('network_mode = "no-network"', 'network_mode = "public"')
        changed = changed.replace("allow_internet = false", "allow_internet = true")
        differing = [
            a for a, b in zip(text.splitlines(), changed.splitlines(), strict=True) if a != b
        ]
        assert len(differing) == 1, (name, differing)
        toml.write_text(changed)
        copies[name] = copy
    return copies


@pytest.fixture(scope="module")
def base(docker_engine) -> str:
    from evalnoise.runner.base_image import build_base_image

    return build_base_image(client=docker_engine)


@pytest.fixture(scope="module")
def public_copies(tmp_path_factory) -> dict[str, Path]:
    return _public_copies(tmp_path_factory.mktemp("harbor-tasks"))


@pytest.fixture(scope="module")
def harbor_runs(base, public_copies, tmp_path_factory) -> dict:
    """Harbor's oracle and nop on public copies of the compared tasks, two at a time, in one
    job (one Harbor process; its two slots stay busy across both agents' trials)."""
    missing = harbor_run_missing(base)
    require(missing is None, str(missing))
    agents = [agent for agent, _ in AGENT_PAIRS.values()]
    run = run_harbor(
        list(public_copies.values()),
        jobs_dir=tmp_path_factory.mktemp("harbor-jobs"),
        job_name="+".join(agents),
        agent=agents,
        base=base,
        n_concurrent=CONCURRENCY,
    )
    runs = {agent: run.of_agent(agent) for agent in agents}
    # every trial is one agent's: none unnamed, none of a third agent
    assert sum(len(t) for r in runs.values() for t in r.outcomes.values()) == sum(
        len(t) for t in run.outcomes.values()
    )
    return runs


@pytest.fixture(scope="module")
def evalnoise_runs(base) -> dict:
    """evalnoise's oracle and null on the compared tasks as shipped, at 3x, two at a time;
    each task's image is made first (cached by its digest), so a trial's seconds are the
    trial's: ``{agent: {task id: (row, wall seconds of run_trial)}}`` plus ``images``."""
    from evalnoise.runner import agent_spec, trial_seed
    from evalnoise.runner.environment import EnvironmentBackend
    from evalnoise.runner.resources import resource_profile
    from evalnoise.runner.trial import TrialRequest

    backend = EnvironmentBackend(base=base)
    tasks = [load_harbor_tasks(EXAMPLES / name)[0] for name in COMPARED]
    images = {}
    for task in tasks:
        start = time.perf_counter()
        image = backend.images.get(task)
        assert image.ok, image.failure_text()
        images[task.name] = (time.perf_counter() - start, image.built)
    rows = environment_task_rows(tasks)

    def run(item: tuple[str, dict]) -> tuple[tuple[str, str], tuple[dict, float]]:
        agent, row = item
        spec = agent_spec({"name": agent})
        request = TrialRequest(
            agent=spec,
            task=row,
            resource_profile=resource_profile(PROFILE),
            trial=0,
            attempt=1,
            seed=trial_seed(0, agent, row["task_id"], 0),
            shard_id="compat-harbor",
        )
        start = time.perf_counter()
        result = backend.run_trial(request)
        return (agent, row["task_id"]), (result, time.perf_counter() - start)

    plan = [(agent, row) for agent in AGENT_PAIRS for row in rows]
    with ThreadPoolExecutor(max_workers=CONCURRENCY) as pool:
        results = dict(pool.map(run, plan))
    out: dict[str, Any] = {agent: {} for agent in AGENT_PAIRS}
    for (agent, task_id), value in results.items():
        out[agent][task_id] = value
    out["images"] = images
    return out


@pytest.mark.docker
@pytest.mark.slow
def test_harbor_refuses_the_example_tasks_as_shipped(base, tmp_path) -> None:
    """Why Harbor runs public copies: its Docker environment enforces ``no-network`` only
    through an egress-control sidecar it builds from a public image, and otherwise refuses
    the task before any trial (Harbor 0.25, harbor/environments/base.py)."""
    missing = harbor_run_missing(base)
    require(missing is None, str(missing))
    with pytest.raises(HarborError) as caught:
        run_harbor([EXAMPLES / "csv-to-jsonl"], jobs_dir=tmp_path, job_name="as-shipped", base=base)
    assert "network_mode='no-network' is not supported by" in str(caught.value)


def test_harbors_copies_are_the_example_tasks(public_copies) -> None:
    """The copies Harbor runs read, in evalnoise, as the shipped tasks but for the network
    they ask for (which neither harness gives them)."""
    assert sorted(public_copies) == sorted(COMPARED)
    for name, copy in public_copies.items():
        shipped = _as_dict(load_harbor_task(EXAMPLES / name))
        copied = _as_dict(load_harbor_task(copy, public_network="offline"))
        assert (shipped["network_mode"], copied["network_mode"]) == ("no-network", "public")
        for key in ("folder", "build_context", "digest", "network_mode"):
            shipped.pop(key), copied.pop(key)
        assert copied == shipped, name


def _seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:6.2f}"


@pytest.mark.docker
@pytest.mark.slow
@pytest.mark.parametrize("agent", list(AGENT_PAIRS))
def test_harbor_and_evalnoise_agents_score_the_same(agent, harbor_runs, evalnoise_runs) -> None:
    harbor_agent, expected = AGENT_PAIRS[agent]
    run = harbor_runs[harbor_agent]
    ours = evalnoise_runs[agent]
    lines = [
        f"\n{agent} (evalnoise, {PROFILE}) vs {harbor_agent} (Harbor {run.job_dir.name}), "
        f"{CONCURRENCY} trials at a time; seconds per trial",
        f"{'task':30} {'harbor':>7} {'evalnoise':>9} | {'harbor s':>8} (env  agent verif) "
        f"| {'evalnoise s':>11} (container agent verif)",
    ]
    compared = {}
    for task_id, (row, wall) in sorted(ours.items()):
        (trial,) = run.outcomes[task_id]
        compared[task_id] = (trial, row)
        phases = trial.phase_seconds
        lines.append(
            f"{task_id:30} {_seconds(trial.reward):>7} {_seconds(row['reward']):>9} | "
            f"{_seconds(trial.seconds):>8} ({_seconds(phases['environment_setup'])} "
            f"{_seconds(phases['agent_execution'])} {_seconds(phases['verifier'])}) | "
            f"{_seconds(wall):>11} ({_seconds(row['duration_s'])} "
            f"{_seconds(row['agent_duration_s'])} {_seconds(row['verifier_duration_s'])})"
        )
    harbor_mean = sum(t.seconds for t, _ in compared.values()) / len(compared)
    ours_mean = sum(wall for _, wall in ours.values()) / len(ours)
    lines.append(
        f"mean seconds per trial: Harbor {harbor_mean:.2f}, evalnoise {ours_mean:.2f} "
        f"(Harbor's job, both agents: {run.wall_seconds:.1f} s wall for "
        f"{len(compared) * len(AGENT_PAIRS)} trials)"
    )
    if agent == "oracle":
        lines.append(
            "evalnoise task images (made before the trials): "
            + ", ".join(
                f"{name.split('/')[-1]} {s:.2f} s{' built' if built else ''}"
                for name, (s, built) in evalnoise_runs["images"].items()
            )
        )
    print("\n".join(lines))

    names = [load_harbor_task(EXAMPLES / name).name for name in COMPARED]
    assert sorted(run.outcomes) == sorted(ours) == sorted(names)
    for task_id, (trial, row) in compared.items():
        assert trial.exception_type is None, (task_id, trial)
        assert (row["status"], row["error"]) == ("ok", None), (task_id, row["error"])
        assert trial.reward == row["reward"] == expected, (task_id, trial.rewards, row)
        # every named reward too (access-log-report's reward.json has four)
        assert trial.rewards == json.loads(row["rewards_json"]), task_id
