"""Same agent, same behaviour (issue 37, item 4): Harbor's Terminus-2 through evalnoise's
bridge and through Harbor's own ``harbor run`` (its docker environment, the compose plugin),
on the same 2 example tasks, against the same served SmolLM2 at temperature 0 with the same
seed, one episode each (``max_turns: 1``).

Compared, task by task: the first prompt the model got (``trajectory.json``'s first user
message: the instruction and the terminal's first screen), the first command Terminus-2 sent
(the first step's keystrokes; "" when the reply carried none, None when the agent ended
before its first step) and the reward. The cause of divergence this test found: the
container's hostname in the shell prompt (Docker names a host by its container id), so the
small model's reply — and whether it overran the context — differed. evalnoise pins every
trial container's hostname (``TRIAL_HOSTNAME``) so its own trials repeat, and the test gives
Harbor's container the same through the compose overlay; should a first prompt still differ
the test says whether only the hostname differs or names the first differing line.

Harbor's docker environment refuses ``network_mode = "no-network"`` offline (it needs an
egress sidecar from a public image), so Harbor runs copies that declare ``"public"`` and gets
no network from the compose overlay (``tests/harbor_tools.py``); evalnoise runs the folders
as shipped.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
from harbor_tools import compose_overlay, harbor_cli, harbor_run_missing, read_job
from model_stack import require

from evalnoise.runner import agent_spec, trial_seed
from evalnoise.runner.environment import TRIAL_HOSTNAME
from evalnoise.runner.resources import resource_profile
from evalnoise.runner.trial import TrialRequest
from evalnoise.tasks.harbor_folders import environment_task_rows, load_harbor_task

pytestmark = [pytest.mark.docker, pytest.mark.slow, pytest.mark.usefixtures("requires_model_stack")]

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples" / "harbor-tasks"
#: the two ways a first turn ends at these settings (N_CTX, MAX_TOKENS): on csv-to-jsonl the
#: reply cut at the bound is asked again and the next reply is parsed (it holds no command);
#: on env-greeting every reply is cut until the prompt outgrows the context
#: (ContextLengthExceededError)
TASKS = ("csv-to-jsonl", "env-greeting")
SEED = 1234
#: the task's limits, its agent time × TIME_FACTOR on both sides: one SmolLM2 call on a
#: shared CPU can outlast the example tasks' 120 s
TIME_FACTOR = 5.0
PROFILE = {
    "name": "3x-slow",
    "memory_limit_factor": 3.0,
    "cpu_limit_factor": 3.0,
    "time_limit_factor": TIME_FACTOR,
}
#: The served model's context and the reply's bound. Terminus-2's first prompt on these
#: tasks (its instructions, the task's and the terminal's first screen) is some 800-870
#: tokens, and the small model's first reply some 130-180 (or longer): a reply that ends
#: within the bound is parsed for its first command, one cut at the bound is asked again
#: within the turn until the server refuses the prompt that outgrew the context. The smaller
#: the context, the fewer such replies a trial costs (each costs the model seconds).
N_CTX = 1280
MAX_TOKENS = 192
KWARGS = {
    "temperature": 0.0,
    "max_turns": 1,
    "record_terminal_session": False,
    "enable_summarize": False,
    "model_info": {"max_input_tokens": N_CTX, "max_output_tokens": MAX_TOKENS},
    # bounded replies: without a limit the small model can talk until the context is full
    "llm_call_kwargs": {"seed": SEED, "max_tokens": MAX_TOKENS},
}


def first_prompt_and_command(trial_dir: Path) -> tuple[str | None, str | None]:
    """(the first user message, the first step's keystrokes) of a Terminus-2 trajectory."""
    found = sorted(trial_dir.rglob("trajectory.json"))
    if not found:
        return None, None
    trajectory = json.loads(found[0].read_text())
    prompt = command = None
    for step in trajectory.get("steps", []):
        if prompt is None and step.get("source") == "user":
            prompt = str(step.get("message"))
        if command is None and step.get("source") == "agent":
            for call in step.get("tool_calls") or []:
                keys = (call.get("arguments") or {}).get("keystrokes")
                if keys is not None:
                    command = keys
                    break
            if command is None:
                command = ""  # the agent's reply carried no command
    return prompt, command


#: a container's hostname in the shell prompt (Docker names it by the container id)
HOSTNAME = re.compile(r"@[0-9a-f]{12}:")


def without_hostname(prompt: str) -> str:
    return HOSTNAME.sub("@<container>:", prompt)


def first_difference(a: str, b: str) -> str:
    for i, (x, y) in enumerate(zip(a.splitlines(), b.splitlines(), strict=False)):
        if x != y:
            return f"line {i + 1}: evalnoise {x!r} vs harbor {y!r}"
    return f"lengths {len(a)} vs {len(b)}"


@pytest.fixture(scope="module")
def served(requires_model_stack, tmp_path_factory):
    """A server of its own for this module: the context of :data:`N_CTX` tokens."""
    from evalnoise.models import LlamaServer

    log = tmp_path_factory.mktemp("terminus2-server") / "server.log"
    with LlamaServer(log_path=str(log), n_ctx=N_CTX) as server:
        yield server


def run_evalnoise(served, base: str, keep: Path) -> dict[str, dict]:
    from evalnoise.runner.environment import EnvironmentBackend

    backend = EnvironmentBackend(base=base)
    block = {"agent": "terminus-2", "model": "served", "kwargs": KWARGS}
    spec = agent_spec(
        {
            "name": "terminus2",
            "command": ["{harbor_python}", str(REPO / "agents" / "harbor_agent" / "bridge.py")],
            "env": {
                "HARBOR_AGENT": json.dumps(block),
                "AGENT_MODEL": served.model,
                "HARBOR_TRIAL_DIR": str(keep),
            },
            "runtime_env": ["AGENT_BASE_URL"],
            "network": "host",
            # as the pipeline runs a Harbor agent: each trial forked from the shard's bridge
            "fork_server": True,
        }
    )
    out = {}
    try:
        return _run_tasks(backend, spec, served, keep, out)
    finally:
        backend.cleanup("terminus2-equivalence")


def _run_tasks(backend, spec, served, keep: Path, out: dict) -> dict[str, dict]:
    for name in TASKS:
        (row,) = environment_task_rows([load_harbor_task(EXAMPLES / name)])
        result = backend.run_trial(
            TrialRequest(
                agent=spec,
                task=row,
                resource_profile=resource_profile(PROFILE),
                trial=0,
                attempt=1,
                seed=trial_seed(0, spec.name, row["task_id"], 0),
                shard_id="terminus2-equivalence",
                runtime={"AGENT_BASE_URL": served.base_url},
            )
        )
        prompt, command = first_prompt_and_command(
            keep / f"{row['task_id']}__0__1".replace("/", "_")
        )
        out[name] = {"row": result, "prompt": prompt, "command": command}
    return out


def run_harbor(served, base: str, work: Path) -> dict[str, dict]:
    copies = []
    for name in TASKS:
        copy = work / "tasks" / name
        shutil.copytree(EXAMPLES / name, copy)
        toml = copy / "task.toml"
        text = toml.read_text().replace('"no-network"', '"public"')
        toml.write_text(text.replace("allow_internet = false", "allow_internet = true"))
        copies.append(copy)
    overlay = compose_overlay(work / "offline.yaml", base)
    # Harbor's container gets evalnoise's pinned hostname (a shell prompt shows it)
    overlay.write_text(
        overlay.read_text().replace(
            "    network_mode: none\n", f"    network_mode: none\n    hostname: {TRIAL_HOSTNAME}\n"
        )
    )
    kwargs = {**KWARGS, "api_base": served.base_url}
    config = {
        "job_name": "terminus2",
        "jobs_dir": str(work / "jobs"),
        "n_attempts": 1,
        "n_concurrent_trials": 1,
        "agent_timeout_multiplier": TIME_FACTOR,
        "quiet": True,
        "agents": [
            {"name": "terminus-2", "model_name": f"openai/{served.model}", "kwargs": kwargs}
        ],
        "environment": {"type": "docker", "extra_docker_compose": [str(overlay)]},
        "tasks": [{"path": str(c)} for c in copies],
    }
    (work / "job.json").write_text(json.dumps(config))
    env = {"OPENAI_API_KEY": "evalnoise-served-model", "PATH": "/usr/bin:/bin"}
    proc = subprocess.run(
        [str(harbor_cli()), "run", "-c", str(work / "job.json"), "--yes", "--quiet"],
        capture_output=True,
        text=True,
        timeout=3000,
        cwd=work,
        env={**__import__("os").environ, **env},
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    outcomes = read_job(work / "jobs" / "terminus2")
    out = {}
    for name in TASKS:
        # a legacy-format task's name is its folder's, the others' evalnoise/<folder>
        (key,) = [k for k in outcomes if k.split("/")[-1] == name]
        (trial,) = outcomes[key]
        prompt, command = first_prompt_and_command(trial.trial_dir)
        out[name] = {"trial": trial, "prompt": prompt, "command": command}
    return out


def test_terminus2_through_evalnoise_and_harbor_run_behaves_the_same(served, docker_engine):
    missing = harbor_run_missing()
    require(missing is None, str(missing))
    from evalnoise.runner.base_image import build_base_image

    base = build_base_image(client=docker_engine)
    with tempfile.TemporaryDirectory(prefix="terminus2-eq-") as tmp:
        ours = run_evalnoise(served, base, Path(tmp) / "evalnoise")
        theirs = run_harbor(served, base, Path(tmp) / "harbor")
        report, problems = [], []
        for name in TASKS:
            a, b = ours[name], theirs[name]
            reward_a, reward_b = a["row"]["reward"], b["trial"].reward
            if a["prompt"] is None or b["prompt"] is None:
                same = "missing"
            elif a["prompt"] == b["prompt"]:
                same = "same"
            elif without_hostname(a["prompt"]) == without_hostname(b["prompt"]):
                same = "same but for the container's hostname in the shell prompt"
            else:
                same = "differs at " + first_difference(a["prompt"], b["prompt"])
            report.append(
                f"{name}: first prompt {same}; first command evalnoise {a['command']!r} harbor "
                f"{b['command']!r}; reward {reward_a} vs {reward_b} (evalnoise "
                f"{a['row']['status']} {a['row']['error']}; harbor {b['trial'].exception_type})"
            )
            if same == "missing" or same.startswith("differs"):
                problems.append(f"{name}: first prompt {same}")
            if a["command"] != b["command"]:
                problems.append(f"{name}: first commands differ")
            exception = b["trial"].exception_type
            if reward_b is None and exception and exception in (a["row"]["error"] or ""):
                # the same agent failure on both sides; evalnoise then ran the verifier and its
                # valid reward decides the trial (verified_after), where Harbor kept no reward
                if a["row"]["verified_after"] != "agent_error" and reward_a is not None:
                    problems.append(f"{name}: a reward after {exception} without the flag")
            elif reward_a != reward_b:
                problems.append(f"{name}: rewards differ")
        print("\n".join(report))
        assert not problems, "\n".join(report + problems)
