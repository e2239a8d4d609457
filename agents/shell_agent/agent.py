"""The shell agent: a model that works in an environment task's container, one command a turn.

An *external* agent of the exec protocol (docs/agent-contract.md, "Environment tasks"): it
runs on the host, beside the model server, and the container stays offline. Each turn the
model sees the task's instruction and what its commands printed so far, and writes either a
line ``COMMAND: <shell command>`` — sent to the runner as ``{"exec": ...}``, whose output
(exit code and the last lines) comes back as the next user message — or a line ``DONE``,
which ends the agent phase (once it has run a command: a DONE before any is answered with a
reminder). At most ``AGENT_MAX_STEPS`` model calls; the last one can only finish. A reply
without either line counts as a step and is answered with a reminder of the format. Step
*i* samples with seed ``EVALNOISE_SEED32 + i``. The model's usage (calls and tokens,
``agentlib``) goes with ``{"done": true, "usage": ...}``.

A small model solves little here; the point is a real multi-turn agent whose every trial is
a real episode in the task's container, with its cost recorded.

Settings: the ``AGENT_*`` variables of ``agentlib`` (backend, temperature, max tokens),
``AGENT_MAX_STEPS`` (default 6), ``AGENT_OUTPUT_CHARS`` (command output shown to the model,
its last characters; default 600), ``AGENT_COMMAND_TIMEOUT_S`` (per command; default 20).
"""

from __future__ import annotations

import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.join(os.path.dirname(HERE), "common")]

import agentlib  # noqa: E402

SYSTEM = """You are working in a Linux shell to complete a task. Each turn, write exactly one
line of the form
COMMAND: <one shell command>
and stop; you will see its exit code and output. When the task is done, write the line
DONE"""

EXAMPLE = [
    {"role": "user", "content": "Task: create a file hello.txt that contains the word hi."},
    {"role": "assistant", "content": "COMMAND: echo hi > hello.txt"},
    {"role": "user", "content": "exit code 0\n(no output)"},
    {"role": "assistant", "content": "COMMAND: cat hello.txt"},
    {"role": "user", "content": "exit code 0\nhi"},
    {"role": "assistant", "content": "DONE"},
]

_COMMAND = re.compile(r"^\W*(?:command|cmd|run)\s*:\s*(.+)$", re.IGNORECASE | re.MULTILINE)
_DONE = re.compile(r"^\W*done\W*$", re.IGNORECASE | re.MULTILINE)
_FENCE = re.compile(r"^`+|`+$")


def _send(message: dict) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def _receive() -> dict:
    line = sys.stdin.readline()
    if not line:
        raise SystemExit("agent: the runner closed the exec channel")
    return json.loads(line)


def _shown(result: dict, limit: int) -> str:
    """What the model sees of a command's result: its exit code and the output's tail."""
    output = str(result.get("output") or "").strip()
    if len(output) > limit:
        output = "..." + output[-limit:]
    head = f"exit code {result.get('exit_code')}"
    if result.get("timed_out"):
        head += " (timed out)"
    return f"{head}\n{output or '(no output)'}"


def main() -> int:
    task = agentlib.read_task()
    seed = agentlib.trial_seed(task)
    temperature = float(agentlib.setting("AGENT_TEMPERATURE", "0.8"))
    max_tokens = int(agentlib.setting("AGENT_MAX_TOKENS", "96"))
    max_steps = max(1, int(agentlib.setting("AGENT_MAX_STEPS", "6")))
    shown = int(agentlib.setting("AGENT_OUTPUT_CHARS", "600"))
    per_command = float(agentlib.setting("AGENT_COMMAND_TIMEOUT_S", "20"))
    model = agentlib.load_model()
    messages = [
        {"role": "system", "content": SYSTEM},
        *EXAMPLE,
        {"role": "user", "content": f"Task: {task['question'].strip()}"},
    ]
    commands = 0
    for step in range(max_steps):
        reply = model.chat(
            messages,
            temperature=temperature,
            max_tokens=max_tokens,
            seed=(seed + step) & 0x7FFFFFFF,
            stop=["\nCOMMAND:", "\nUser:"],
        )
        messages.append({"role": "assistant", "content": reply})
        command = _COMMAND.search(reply)
        done = _DONE.search(reply)
        if done and (command is None or done.start() < command.start()):
            if commands or step == max_steps - 1:
                break
            # a small model copies the example's ending: it has not looked at anything yet
            messages.append(
                {"role": "user", "content": "You have not run any command yet. COMMAND: ?"}
            )
            continue
        if command is None or step == max_steps - 1:
            if step < max_steps - 1:
                messages.append(
                    {"role": "user", "content": "Write one line COMMAND: <command>, or DONE."}
                )
            continue
        text = _FENCE.sub("", command.group(1).strip()).strip()
        _send({"exec": text, "timeout_s": per_command})
        result = _receive()
        commands += 1
        agentlib.log(f"step {step}: {text!r} → exit {result.get('exit_code')}")
        messages.append({"role": "user", "content": _shown(result, shown)})
    usage = agentlib.USAGE.to_dict() if agentlib.USAGE is not None else None
    _send({"done": True, "usage": usage})
    agentlib.log(f"{commands} command(s), {usage['model_calls'] if usage else 0} model call(s)")
    return 0


if __name__ == "__main__":
    sys.exit(agentlib.run(main))
