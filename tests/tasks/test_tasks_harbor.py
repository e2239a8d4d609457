"""The Harbor task loader: schema 1.x and legacy 1.0, every rejection with its message,
unknown keys kept, task sets reported whole, tasks-table rows, the folder digest."""

from __future__ import annotations

import dataclasses
import textwrap
from pathlib import Path

import pytest

from evalnoise.tasks.harbor_folders import (
    ENVIRONMENT_TASK_COLUMNS,
    environment_task_rows,
    load_harbor_task,
    load_harbor_tasks,
)
from evalnoise.tasks.harbor_task import DEFAULTS, HarborTaskError, folder_digest, resolve_env
from evalnoise.tasks.harbor_toml import strip_canary

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "harbor-tasks"

MODERN = """\
schema_version = "1.4"

[task]
name = "acme/hello"
description = "say hello"

[metadata]
difficulty = "hard"
category = "demo"

[agent]
timeout_sec = 90.0
user = "agent"

[verifier]
timeout_sec = 30.0
environment_mode = "shared"
user = "root"

[verifier.env]
STRICT = "1"
TOKEN = "${HOST_TOKEN:-none}"

[environment]
cpus = 2
memory_mb = 1536
storage_mb = 4096
network_mode = "no-network"
build_timeout_sec = 120.0
workdir = "/srv"

[environment.env]
MODE = "test"

[solution.env]
HINT = "yes"
"""


def make_task(
    root: Path,
    name: str = "hello",
    toml: str = MODERN,
    *,
    instruction: str = "Say hello.\n",
    dockerfile: bool = True,
    test: bool = True,
    solution: bool = True,
) -> Path:
    folder = root / name
    (folder / "environment").mkdir(parents=True)
    (folder / "task.toml").write_text(textwrap.dedent(toml))
    if instruction is not None:
        (folder / "instruction.md").write_text(instruction)
    if dockerfile:
        (folder / "environment" / "Dockerfile").write_text("ARG BASE\nFROM ${BASE}\n")
    if test:
        (folder / "tests").mkdir()
        (folder / "tests" / "test.sh").write_text("echo 1 > /logs/verifier/reward.txt\n")
    if solution:
        (folder / "solution").mkdir()
        (folder / "solution" / "solve.sh").write_text("true\n")
    return folder


def problems_of(path: Path, **options) -> list[str]:
    with pytest.raises(HarborTaskError) as caught:
        load_harbor_tasks(path, **options)
    return [f"{p.field}: {p.reason}" for p in caught.value.problems]


def toml_with(**sections: str) -> str:
    """A valid offline task.toml with sections replaced or added (key: header → body)."""
    base = {
        "": 'schema_version = "1.4"',
        "[agent]": "timeout_sec = 10.0",
        "[verifier]": 'environment_mode = "shared"',
        "[environment]": 'network_mode = "no-network"',
    }
    base.update({(f"[{k.replace('_', '.')}]" if k else k): v for k, v in sections.items()})
    return "\n\n".join(f"{k}\n{v}" if k else v for k, v in base.items()) + "\n"


# -- what loads -------------------------------------------------------------------------------


def test_schema_1x_task_loads_every_field(tmp_path):
    folder = make_task(tmp_path)
    task = load_harbor_task(folder)
    assert task.name == "acme/hello"
    assert task.folder == folder.resolve()
    assert task.instruction == "Say hello.\n"
    assert task.level == "hard"
    assert (task.cpus, task.memory_mb, task.storage_mb) == (2.0, 1536, 4096)
    assert (task.agent_timeout_s, task.verifier_timeout_s, task.build_timeout_s) == (90, 30, 120)
    assert task.agent_user == "agent" and task.verifier_user == "root"
    assert dict(task.verifier_env) == {"STRICT": "1", "TOKEN": "${HOST_TOKEN:-none}"}
    assert dict(task.env) == {"MODE": "test"} and task.workdir == "/srv"
    assert dict(task.solution_env) == {"HINT": "yes"}
    assert task.docker_image is None and task.build_context == folder.resolve() / "environment"
    assert task.network_mode == "no-network" and task.schema_version == "1.4"
    assert task.metadata["category"] == "demo"
    assert task.defaulted == () and dict(task.unknown) == {}
    assert task.has_solution and task.digest == folder_digest(folder)


def test_legacy_version_1_0_sizes_and_allow_internet(tmp_path):
    legacy = """\
        version = "1.0"

        [metadata]
        difficulty = "medium"

        [agent]
        timeout_sec = 900.0

        [environment]
        docker_image = "local/tb-task:1"
        cpus = 1
        memory = "2G"
        storage = "10G"
        allow_internet = false
        """
    task = load_harbor_task(make_task(tmp_path, toml=legacy, dockerfile=False))
    assert task.name == "hello"  # no [task] table: the folder's name
    assert task.schema_version == "1.0"
    assert (task.memory_mb, task.storage_mb) == (2048, 10240)
    assert task.network_mode == "no-network"
    assert task.docker_image == "local/tb-task:1" and task.build_context is None
    assert task.verifier_timeout_s == DEFAULTS.verifier_timeout_s
    assert task.defaulted == ("verifier_timeout_s", "build_timeout_s")


@pytest.mark.parametrize(
    ("memory", "expected"), [("512M", 512), ("1.5G", 1536), ("2048K", 2), ("3g", 3072)]
)
def test_legacy_memory_sizes_as_harbor_parses_them(tmp_path, memory, expected):
    toml = toml_with(environment=f'network_mode = "no-network"\nmemory = "{memory}"')
    assert load_harbor_task(make_task(tmp_path, toml=toml)).memory_mb == expected


def test_defaults_fill_what_the_task_leaves_out(tmp_path):
    task = load_harbor_task(make_task(tmp_path, toml=toml_with()))
    assert (task.cpus, task.memory_mb) == (DEFAULTS.cpus, DEFAULTS.memory_mb)
    assert task.defaulted == ("cpus", "memory_mb", "verifier_timeout_s", "build_timeout_s")
    assert task.agent_timeout_s == 10.0


def test_unknown_keys_are_kept_not_fatal(tmp_path):
    toml = toml_with(
        environment='network_mode = "no-network"\nfancy = 3',
        verifier='environment_mode = "shared"\nretries = 2',
        extra='color = "blue"',
    )
    toml = 'owner = "me"\n' + toml
    task = load_harbor_task(make_task(tmp_path, toml=toml))
    assert dict(task.unknown) == {
        "owner": "me",
        "environment.fancy": 3,
        "verifier.retries": 2,
        "extra": {"color": "blue"},
    }


def test_public_network_runs_offline_when_asked(tmp_path):
    toml = toml_with(environment='network_mode = "public"')
    task = load_harbor_task(make_task(tmp_path, toml=toml), public_network="offline")
    assert task.network_mode == "public"


def test_canary_lines_are_stripped_like_harbor():
    text = "<!-- BENCHMARK DATA canary GUID 1234 -->\n# another canary line\n\nDo it.\n# keep\n"
    assert strip_canary(text) == "Do it.\n# keep\n"


def test_env_templates_resolve_like_harbor():
    env = {"A": "${X}", "B": "${Y:-fallback}", "C": "literal ${X}", "D": "${Z:-}"}
    assert resolve_env(env, {"X": "1"}) == {"A": "1", "B": "fallback", "C": "literal ${X}", "D": ""}
    with pytest.raises(KeyError, match="X"):
        resolve_env({"A": "${X}"}, {})


def test_harbor_tasks_init_template_loads_with_shared_verifier(tmp_path):
    """task.toml as `harbor tasks init acme/shared --verifier-mode shared` (Harbor 0.25)
    writes it: it declares public network, so a run that rejects public-network tasks
    refuses it; by default its trials get a network of their own."""
    init_toml = """\
        schema_version = "1.4"
        artifacts = []

        [task]
        name = "acme/shared"
        version = "1.0.0"
        description = ""
        authors = []
        keywords = []

        [metadata]

        [verifier]
        timeout_sec = 600.0
        environment_mode = "shared"
        collect = []

        [verifier.env]

        [agent]
        timeout_sec = 600.0

        [environment]
        network_mode = "public"
        build_timeout_sec = 600.0
        os = "linux"
        mcp_servers = []

        [environment.env]

        [solution.env]
        """
    folder = make_task(tmp_path, "shared", init_toml)
    task = load_harbor_task(folder, public_network="offline")
    assert task.name == "acme/shared" and dict(task.unknown) == {}
    assert load_harbor_task(folder).network_mode == "public"
    assert any("network_mode" in p for p in problems_of(folder, public_network="reject"))


# -- what is rejected, and how it is named -----------------------------------------------------


REJECTIONS = [
    (
        {"verifier": 'environment_mode = "sideways"'},
        "[verifier].environment_mode: must be 'shared' or 'separate'",
    ),
    (
        {"verifier_environment": "cpus = 2", "verifier": "timeout_sec = 5.0"},
        "[verifier.environment].cpus: not supported: the separate verifier's container takes "
        "the task's settings",
    ),
    (
        {"verifier_environment": 'docker_image = "x"'},
        "[verifier.environment]: conflicts with environment_mode",
    ),
    ({"environment": 'network_mode = "allowlist"\nallowed_hosts = ["pypi.org"]'}, "allowlist"),
    (
        {"environment": 'network_mode = "no-network"\nallowed_hosts = ["pypi.org"]'},
        "[environment].allowed_hosts: network allowlists are not supported (no egress proxy)",
    ),
    (
        {"agent": 'timeout_sec = 5.0\nnetwork_mode = "public"'},
        "[agent].network_mode: 'public' differs from the environment's 'no-network': a "
        "trial's container has one network for all its phases",
    ),
    (
        {"environment": 'network_mode = "no-network"\ngpus = 1'},
        "[environment].gpus: 1 GPU(s) requested",
    ),
    (
        {"environment": 'network_mode = "no-network"\nos = "windows"'},
        "[environment].os: only linux containers run here",
    ),
    (
        {"environment": 'network_mode = "no-network"\n[environment.tpu]\ntype = "v6e"'},
        "[environment].tpu",
    ),
    (
        {"environment": 'network_mode = "no-network"\n[[environment.mcp_servers]]\nname = "m"'},
        "[environment].mcp_servers: MCP servers need network access",
    ),
    (
        {"environment": 'network_mode = "no-network"\n[environment.healthcheck]\nretries = 2'},
        "[environment].healthcheck.command: required",
    ),
    (
        {"verifier": '[[verifier.collect]]\ncommand = "dump"'},
        "[[verifier.collect]]: collect hooks need compose services",
    ),
    ({"": 'schema_version = "2.0"'}, "schema_version: unsupported schema version '2.0'"),
    (
        {"environment": 'network_mode = "no-network"\ncpus = "two"'},
        "[environment].cpus: must be a number, got a string 'two'",
    ),
    (
        {"environment": 'network_mode = "no-network"\nmemory_mb = 1.5'},
        "[environment].memory_mb: must be a whole number",
    ),
    (
        {"environment": 'network_mode = "no-network"\nmemory_mb = 512\nmemory = "1G"'},
        "[environment].memory: '1G' (1024 MB) conflicts with memory_mb = 512",
    ),
    (
        {"environment": 'network_mode = "no-network"\nmemory = "lots"'},
        "[environment].memory: invalid size 'lots'",
    ),
    ({"agent": "timeout_sec = -1.0"}, "[agent].timeout_sec: must be a positive number"),
]


#: refused only when the run rejects public-network tasks (benchmark.network: reject)
PUBLIC_REJECTIONS = [
    (
        {"environment": 'network_mode = "public"'},
        "[environment].network_mode: the task declares network_mode = 'public'; the run "
        "rejects public-network tasks (benchmark.network: reject)",
    ),
    (
        {"environment": "cpus = 1"},
        "[environment].network_mode: the task declares no network_mode, which Harbor reads as "
        "'public'",
    ),
    (
        {"environment": "allow_internet = true"},
        "[environment].network_mode: the task declares allow_internet = true",
    ),
    (
        {"environment": 'network_mode = "public"', "agent": 'network_mode = "public"'},
        "[agent].network_mode: asks for public network; the run rejects public-network tasks",
    ),
]


@pytest.mark.parametrize(("sections", "message"), PUBLIC_REJECTIONS)
def test_public_network_is_refused_only_when_the_run_rejects_it(tmp_path, sections, message):
    folder = make_task(tmp_path, toml=toml_with(**sections))
    found = problems_of(folder, public_network="reject")
    assert any(message in p for p in found), found
    for choice in ("as_declared", "offline"):
        assert load_harbor_task(folder, public_network=choice).network_mode == "public"


def test_phase_network_may_only_repeat_the_environments(tmp_path):
    same = toml_with(environment='network_mode = "public"', agent='network_mode = "public"')
    assert load_harbor_task(make_task(tmp_path, "same", same)).network_mode == "public"
    other = toml_with(
        verifier='environment_mode = "shared"\nnetwork_mode = "no-network"',
        environment="cpus = 1",  # no network_mode: public, as Harbor reads it
    )
    folder = make_task(tmp_path, "other", other)
    assert problems_of(folder) == [
        "[verifier].network_mode: 'no-network' differs from the environment's 'public': a "
        "trial's container has one network for all its phases"
    ]
    # offline, no phase has a network: nothing to differ
    assert load_harbor_task(folder, public_network="offline").network_mode == "public"


@pytest.mark.parametrize(("sections", "message"), REJECTIONS)
def test_each_unsupported_feature_is_rejected_with_field_and_reason(tmp_path, sections, message):
    toml = toml_with(**sections)
    folder = make_task(tmp_path, toml=toml)
    found = problems_of(folder)
    assert any(message in p for p in found), found


def _steps_task(tmp_path, steps_toml, *, files=None, name="hello"):
    toml = toml_with() + '\nmulti_step_reward_strategy = "final"\n' + steps_toml
    # the strategy is a top-level key: put it before the first table
    toml = 'multi_step_reward_strategy = "final"\n' + toml.replace(
        '\nmulti_step_reward_strategy = "final"\n', "\n"
    )
    folder = make_task(tmp_path, name, toml=toml, instruction=None, test=False)
    for rel, text in (files or {}).items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_text(text)
    return folder


def test_multi_step_task_loads_each_step_as_harbor_reads_it(tmp_path):
    steps = """
[[steps]]
name = "one"
min_reward = 1.0

[steps.agent]
timeout_sec = 5.0
user = "agent"

[[steps]]
name = "two"
min_reward = { reward = 0.5, style = 1 }

[steps.verifier]
timeout_sec = 7.0
env = { LEVEL = "2" }

[steps.healthcheck]
command = "test -x /app/greet.sh"
retries = 5
"""
    folder = _steps_task(
        tmp_path,
        steps,
        files={
            "steps/one/instruction.md": "<!-- canary -->\nFirst.\n",
            "steps/one/tests/test.sh": "echo 1 > /logs/verifier/reward.txt\n",
            "steps/two/instruction.md": "Second.\n",
            "tests/test.sh": "echo 1 > /logs/verifier/reward.txt\n",
        },
    )
    task = load_harbor_task(folder)
    assert task.reward_strategy == "final"
    one, two = task.steps
    assert (one.name, one.instruction, one.agent_timeout_s, one.agent_user) == (
        "one",
        "First.\n",
        5.0,
        "agent",
    )
    assert one.verifier_timeout_s == task.verifier_timeout_s and dict(one.min_reward) == {
        "reward": 1.0
    }
    assert (two.agent_timeout_s, two.verifier_timeout_s) == (10.0, 7.0)  # the task's, its own
    assert dict(two.min_reward) == {"reward": 0.5, "style": 1.0}
    assert dict(two.verifier_env) == {"LEVEL": "2"}
    assert one.healthcheck is None
    assert dict(two.healthcheck) == {  # Harbor's HealthcheckConfig defaults filled in
        "command": "test -x /app/greet.sh",
        "interval_sec": 5.0,
        "timeout_sec": 30.0,
        "start_period_sec": 0.0,
        "start_interval_sec": 5.0,
        "retries": 5,
    }
    assert task.instruction == "[step one]\nFirst.\n\n\n[step two]\nSecond.\n"
    step_task = dataclasses.replace(task, active_step=one)
    assert step_task.tests_dirs == (folder / "tests", folder / "steps" / "one" / "tests")
    assert dataclasses.replace(task, active_step=two).tests_dirs == (folder / "tests",)


def test_multi_step_problems_are_named(tmp_path):
    steps = """
[[steps]]
name = "a/b"

[[steps]]
name = "one"
min_reward = "high"

[steps.verifier]
environment_mode = "separate"

[steps.healthcheck]
command = "true"

[[steps]]
name = "ONE"
"""
    folder = _steps_task(tmp_path, steps)
    assert problems_of(folder) == [
        "[[steps]][0].name: must be a portable folder name, got 'a/b'",
        "[[steps]] 'one'.verifier.environment_mode: a separate verifier environment is not "
        "supported",
        "[[steps]] 'one'.min_reward: must be a number or a table of numbers",
        "steps/one/instruction.md: missing",
        "steps/one/tests/test.sh: missing, and no tests/test.sh: the step's verifier has "
        "nothing to run",
        "[[steps]] 'ONE': duplicate step name",
    ]


def test_compose_yml_is_task_data_as_in_harbor(tmp_path):
    """Harbor reads only docker-compose.yaml; a .yml beside the Dockerfile is a file of the
    build context (real tasks COPY one into the image)."""
    folder = make_task(tmp_path, toml=toml_with())
    (folder / "environment" / "docker-compose.yml").write_text("services:\n  app: {}\n")
    (folder / "environment" / "Dockerfile").write_text(
        "ARG BASE\nFROM ${BASE}\nCOPY docker-compose.yml /app/\n"
    )
    task = load_harbor_task(folder)
    assert task.build_context == folder / "environment"


def test_missing_files_are_named(tmp_path):
    folder = make_task(tmp_path, toml=toml_with(), instruction=None, dockerfile=False, test=False)
    assert problems_of(folder) == [
        "instruction.md: missing",
        "tests/test.sh: missing: the verifier has nothing to run",
        "environment/Dockerfile: missing, and no [environment].docker_image: no image to run",
    ]


def test_empty_instruction_is_rejected(tmp_path):
    folder = make_task(tmp_path, toml=toml_with(), instruction="<!-- canary x -->\n\n  \n")
    assert problems_of(folder) == ["instruction.md: empty: the agent would get no instruction"]


def test_invalid_toml_is_reported(tmp_path):
    folder = make_task(tmp_path, toml="[task\nname = 1\n")
    (problem,) = problems_of(folder)
    assert problem.startswith("task.toml: not valid TOML")


def test_problems_of_a_set_are_reported_together_never_skipped(tmp_path):
    make_task(tmp_path, "good", toml_with())
    make_task(tmp_path, "gpu", toml_with(environment='network_mode = "no-network"\ngpus = 2'))
    make_task(tmp_path, "separate", toml_with(verifier='environment_mode = "sideways"'))
    (tmp_path / "not-a-task").mkdir()
    (tmp_path / "not-a-task" / "notes.md").write_text("hi")
    (tmp_path / ".hidden").mkdir()  # not a task folder, and not reported
    (tmp_path / "README.md").write_text("files beside the tasks are ignored")
    with pytest.raises(HarborTaskError) as caught:
        load_harbor_tasks(tmp_path)
    tasks = [(p.task, p.field) for p in caught.value.problems]
    assert tasks == [
        ("gpu", "[environment].gpus"),
        ("not-a-task", "task.toml"),
        ("separate", "[verifier].environment_mode"),
    ]
    text = str(caught.value)
    assert text.startswith(f"{tmp_path}: 3 problems in Harbor tasks:")
    assert "not-a-task: task.toml: missing: not a Harbor task folder" in text


def test_duplicate_task_names_in_a_set(tmp_path):
    toml = '[task]\nname = "acme/same"\n\n' + toml_with()
    make_task(tmp_path, "a", toml)
    make_task(tmp_path, "b", toml)
    assert problems_of(tmp_path) == ["[task].name: duplicate task id: folder 'a' has the same"]


def test_empty_set_and_not_a_folder(tmp_path):
    assert problems_of(tmp_path) == ["folder: no task folders in it"]
    assert problems_of(tmp_path / "nope") == ["folder: not a directory"]


def test_one_task_folder_is_a_set_of_one(tmp_path):
    folder = make_task(tmp_path, toml=toml_with())
    assert [t.name for t in load_harbor_tasks(folder)] == ["hello"]


def test_public_network_choice_is_checked(tmp_path):
    with pytest.raises(ValueError, match="public_network"):
        load_harbor_tasks(tmp_path, public_network="maybe")


# -- rows and digest ---------------------------------------------------------------------------


def test_tasks_table_rows(tmp_path):
    task = load_harbor_task(make_task(tmp_path))
    (row,) = environment_task_rows([task])
    assert row == {
        "task_id": "acme/hello",
        "question": "Say hello.\n",
        "answer": "",
        "level": "hard",
        "cpus": 2.0,
        "memory_mb": 1536,
        "time_limit_s": 90.0,
        "sampling_seed": None,
        "kind": "environment",
        "task_dir": str(task.folder),
        "verifier_time_limit_s": 30.0,
        "task_digest": task.digest,
    }
    assert set(ENVIRONMENT_TASK_COLUMNS) <= set(row)


def test_folder_digest_follows_every_file_but_caches(tmp_path):
    folder = make_task(tmp_path)
    first = folder_digest(folder)
    (folder / "tests" / "__pycache__").mkdir()
    (folder / "tests" / "__pycache__" / "x.pyc").write_bytes(b"cache")
    assert folder_digest(folder) == first
    (folder / "solution" / "solve.sh").write_text("false\n")
    second = folder_digest(folder)
    assert second != first
    (folder / "solution" / "solve.sh").chmod(0o755)
    assert folder_digest(folder) != second
    (folder / "tests" / "link").symlink_to("test.sh")
    assert folder_digest(folder) not in (first, second)


# -- the example task set ----------------------------------------------------------------------


def test_example_task_set_loads_offline():
    tasks = load_harbor_tasks(EXAMPLES)
    assert len(tasks) >= 16
    assert all(t.network_mode == "no-network" and t.has_solution for t in tasks)
    assert all(t.build_context is not None for t in tasks)
    sensitive = [t for t in tasks if "resource-sensitive" in t.metadata.get("tags", [])]
    assert len(sensitive) >= 5
    dockerfiles = [(t.build_context / "Dockerfile").read_text() for t in tasks]
    assert all("ARG BASE" in d and "FROM ${BASE}" in d for d in dockerfiles)
    assert {t.metadata["category"] for t in tasks} >= {
        "debugging",
        "data-processing",
        "file-editing",
        "scripting",
    }
