"""A shard's prompt / sampling variant: the agent's question, the seeds, the journal, the rows.

Real subprocesses (the local backend) running an agent that echoes the question it got, both
from ``EVALNOISE_QUESTION`` and from the task file, and one of its settings.
"""

from __future__ import annotations

import hashlib
import json
import sys

import pyarrow.parquet as pq
import pytest
from runner_helpers import task_row, tasks_frame

from evalnoise.runner import run_shard, trial_seed
from evalnoise.runner.seeds import order_key, order_seed, trial_order
from evalnoise.runner.shard import read_journal
from evalnoise.runner.variant import TrialVariant, trial_variant

ECHO = (
    "import json, os\n"
    "task = json.load(open(os.environ['EVALNOISE_TASK_FILE']))\n"
    "answer = '|'.join([os.environ['EVALNOISE_QUESTION'], task['question'],"
    " os.environ.get('SETTING', '-')])\n"
    "json.dump({'answer': answer}, open(os.environ['EVALNOISE_OUTPUT'], 'w'))\n"
)


def echo_agent(**env) -> dict:
    return {"name": "echo", "command": [sys.executable, "-c", ECHO], "env": env}


TASKS = tasks_frame([task_row(f"t{i}", f"What is {i} + {i}?", memory_mb=256) for i in range(2)])
VARIANT = {
    "key": "0123456789ab",
    "template": "Reply with a number. {question} (answer in {braces}: {question})",
    "prompt_variant": "p1",
    "sampling": "SETTING=0.2",
}


def shard(tmp_path, name="s", *, variant=None, agent=None, trials=(0, 1)):
    return run_shard(
        TASKS,
        agent or echo_agent(SETTING="0.2"),
        "1x",
        list(trials),
        7,
        "as_incorrect",
        "local",
        tmp_path / f"{name}.jsonl",
        tmp_path / f"{name}.parquet",
        progress=False,
        variant=variant,
    )


def _old_hash63(record: dict) -> int:
    """The seed rule before variants existed, written out again (evalnoise.runner.seeds)."""
    text = json.dumps(record, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big") & (2**63 - 1)


def test_seeds_without_a_variant_are_todays_and_each_variant_has_its_own():
    for agent, task, trial in [("chat", "gen-l1-000", 0), ("tool_agent", "t-9", 7)]:
        old = {"agent": agent, "run_seed": 3, "task_id": task, "trial": trial}
        assert trial_seed(3, agent, task, trial) == _old_hash63(old)
        assert trial_seed(3, agent, task, trial, "") == _old_hash63(old)
        keyed = trial_seed(3, agent, task, trial, "0123456789ab")
        assert keyed == _old_hash63({**old, "variant": "0123456789ab"})
        assert keyed != trial_seed(3, agent, task, trial, "ba9876543210")
    seed = order_seed(3)
    old = {"agent": "a", "order_seed": seed, "resource_profile": "1x", "task_id": "t", "trial": 1}
    assert order_key(seed, "a", "1x", "t", 1) == _old_hash63(old)
    assert order_key(seed, "a", "1x", "t", 1, "k") == _old_hash63({**old, "variant": "k"})
    pairs = [(f"t{i}", j) for i in range(6) for j in range(4)]
    assert trial_order(seed, "a", "1x", pairs) == trial_order(seed, "a", "1x", pairs, "")
    assert trial_order(seed, "a", "1x", pairs) != trial_order(seed, "a", "1x", pairs, "k")
    with pytest.raises(TypeError):
        trial_seed(3, "a", "t", 0, 5)


def test_trial_variant_renders_only_the_placeholder():
    variant = trial_variant(VARIANT)
    assert variant.render("Q?") == "Reply with a number. Q? (answer in {braces}: Q?)"
    assert TrialVariant().render("Q?") == "Q?" and TrialVariant().header() == {}
    assert trial_variant(None) is None and trial_variant(variant) is variant
    with pytest.raises(ValueError, match="has no"):
        TrialVariant(key="k", template="no placeholder")
    with pytest.raises(ValueError, match="unknown keys"):
        trial_variant({**VARIANT, "name": "x"})


def test_the_agent_gets_the_rendered_question_and_rows_carry_the_variant(tmp_path):
    result = shard(tmp_path, "v", variant=VARIANT)
    assert result.ran == 4
    rows = pq.read_table(tmp_path / "v.parquet").to_pylist()
    for row in rows:
        question = f"What is {row['task_id'][1]} + {row['task_id'][1]}?"
        rendered = VARIANT["template"].replace("{question}", question)
        # the same rendering in the environment and in the task file; the setting as given
        assert row["prediction"] == f"{rendered}|{rendered}|0.2"
        assert (row["prompt_variant"], row["sampling"]) == ("p1", "SETTING=0.2")
        assert row["seed"] == trial_seed(7, "echo", row["task_id"], row["trial"], VARIANT["key"])
    header, journal = read_journal(tmp_path / "v.jsonl")
    assert header["variant"] == {"key": VARIANT["key"], "template": VARIANT["template"]}
    assert {r["prompt_variant"] for r in journal} == {"p1"}

    # the same tasks without a variant: today's header and seeds, the task's own question,
    # and the same task fingerprints (the template is the variant's, not the task's)
    shard(tmp_path, "plain")
    header0, journal0 = read_journal(tmp_path / "plain.jsonl")
    assert set(header0) == {"journal", "agent", "resource_profile", "run_seed", "backend"}
    assert {k: v for k, v in header.items() if k != "variant"} == header0
    plain = pq.read_table(tmp_path / "plain.parquet").to_pylist()
    for row in plain:
        assert row["prediction"].startswith("What is ")
        assert row["prompt_variant"] is None and row["sampling"] is None
        assert row["seed"] == trial_seed(7, "echo", row["task_id"], row["trial"])
        assert journal0[0]["prompt_variant"] is None and journal0[0]["sampling"] is None
    fingerprints = {(r["task_id"], r["_task_fingerprint"]) for r in journal}
    assert fingerprints == {(r["task_id"], r["_task_fingerprint"]) for r in journal0}


def test_the_neutral_variant_is_a_run_without_variants_with_labels(tmp_path):
    shard(tmp_path, "n")
    neutral = {"key": "", "template": None, "prompt_variant": "p0", "sampling": None}
    result = shard(tmp_path, "n", variant=neutral)
    assert (result.ran, result.resumed) == (0, 4)  # the journal is the same shard's
    rows = pq.read_table(tmp_path / "n.parquet").to_pylist()
    assert {r["prompt_variant"] for r in rows} == {"p0"}


def test_a_renamed_level_resumes_and_relabels(tmp_path):
    shard(tmp_path, "r", variant=VARIANT)
    renamed = {**VARIANT, "prompt_variant": "terse"}
    result = shard(tmp_path, "r", variant=renamed, trials=(0, 1, 2))
    assert (result.ran, result.resumed) == (2, 4)
    rows = pq.read_table(tmp_path / "r.parquet").to_pylist()
    assert {r["prompt_variant"] for r in rows} == {"terse"}
    # another template is another variant: its journal starts afresh
    other = {**VARIANT, "key": "ba9876543210", "template": "Hm. {question}"}
    result = shard(tmp_path, "r", variant=other)
    assert (result.ran, result.resumed) == (4, 0)
    assert list(tmp_path.glob("r.jsonl.superseded-*"))


@pytest.mark.docker
def test_an_environment_task_gets_its_instruction_rendered(env_backend, tmp_path):
    """An external agent of an environment task (the exec protocol) writes the instruction it
    was given into the task's container; the verifier rewards the rendered one only."""
    import pandas as pd
    from env_helpers import make_env_task, scripted_agent

    from evalnoise.tasks.harbor_folders import environment_task_rows, load_harbor_tasks

    root = tmp_path / "tasks"
    root.mkdir()
    expected = "Please {do} this: Instruction of echo."  # $(cat) drops the final newline
    make_env_task(
        root,
        "echo",
        test_sh=f"""\
        if [ "$(cat /app/instruction.txt)" = "{expected}" ]; then echo 1; else echo 0; fi \\
          > /logs/verifier/reward.txt
        """,
    )
    tasks = pd.DataFrame(environment_task_rows(load_harbor_tasks(root, public_network="offline")))
    agent = scripted_agent([{"write_instruction": "/app/instruction.txt"}, {"done": {}}])
    variant = {
        "key": "00000000abcd",
        "template": "Please {do} this: {question}",
        "prompt_variant": "polite",
        "sampling": None,
    }
    for name, given, reward in (("plain", None, 0.0), ("polite", variant, 1.0)):
        run_shard(
            tasks,
            agent,
            "3x",
            [0],
            0,
            "as_incorrect",
            env_backend,
            tmp_path / f"{name}.jsonl",
            tmp_path / f"{name}.parquet",
            progress=False,
            variant=given,
        )
        (row,) = pq.read_table(tmp_path / f"{name}.parquet").to_pylist()
        assert (row["status"], row["reward"]) == ("ok", reward), row["error"]
        assert row["prompt_variant"] == (given or {}).get("prompt_variant")
        key = (given or {}).get("key", "")
        assert row["seed"] == trial_seed(0, "scripted", row["task_id"], 0, key)
