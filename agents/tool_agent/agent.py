"""The tool agent: a short loop in which the model may use a calculator, then answers.

Protocol (plain text, so any chat model can follow it): a reply line ``CALC: <expression>``
asks the calculator (``agentlib.calculate``: a safe evaluator of arithmetic Python
expressions); the agent answers ``RESULT: <value>`` (or ``ERROR: <why>``) and the model
continues. A line ``ANSWER: <answer>`` ends the trial with that answer; a reply with neither
line is itself the answer. At most ``AGENT_MAX_STEPS`` model calls: the last one is asked
for the final answer. Step *i* samples with seed ``EVALNOISE_SEED32 + i``.

The answer record's ``trajectory`` (docs/agent-contract.md) lists the tool calls in order,
each ``{"tool": "calc", "args": {"expression": ...}}`` with the expression's whitespace
removed (``17 * 23`` and ``17*23`` are one call): what the runner's trajectory statistics
compare between trials.

Settings: the ``AGENT_*`` variables of ``agentlib`` (backend, temperature, max tokens,
``AGENT_MAX_STEPS``).
"""

from __future__ import annotations

import os
import re
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.join(os.path.dirname(HERE), "common")]

import agentlib  # noqa: E402

SYSTEM = """You solve arithmetic and word problems step by step. You have a calculator.
To use it, write a line
CALC: <arithmetic expression>
and stop; you will get the result. When you know the final answer, write a line
ANSWER: <number>"""

EXAMPLE = [
    {"role": "user", "content": "What is 17 × 23 + 5?"},
    {"role": "assistant", "content": "CALC: 17 * 23 + 5"},
    {"role": "user", "content": "RESULT: 396"},
    {"role": "assistant", "content": "ANSWER: 396"},
]

_CALC = re.compile(r"^\W*(?:calc|calculate|calculator)\s*:\s*(.+)$", re.IGNORECASE | re.MULTILINE)
_ANSWER = re.compile(r"^\W*(?:final\s+)?answer\s*:\s*(.+)$", re.IGNORECASE | re.MULTILINE)


def _expression(text: str) -> str:
    text = text.strip().strip("`").strip()
    return text.split("=")[0].strip() if "=" in text else text


def main() -> int:
    task = agentlib.read_task()
    seed = agentlib.trial_seed(task)
    temperature = float(agentlib.setting("AGENT_TEMPERATURE", "0.8"))
    max_tokens = int(agentlib.setting("AGENT_MAX_TOKENS", "256"))
    max_steps = max(1, int(agentlib.setting("AGENT_MAX_STEPS", "4")))
    started = time.monotonic()
    model = agentlib.load_model()
    messages = [
        {"role": "system", "content": SYSTEM},
        *EXAMPLE,
        {"role": "user", "content": task["question"]},
    ]
    answer, reply, tool_calls = None, "", 0
    trajectory: list[dict[str, object]] = []
    for step in range(max_steps):
        if step == max_steps - 1 and step > 0:
            messages.append(
                {"role": "user", "content": "Give your final answer now, as ANSWER: <number>"}
            )
        reply = model.chat(
            messages,
            temperature=temperature,
            max_tokens=max_tokens,
            seed=(seed + step) & 0x7FFFFFFF,
        )
        found = _ANSWER.search(reply)
        calc = _CALC.search(reply)
        if found and (calc is None or found.start() < calc.start()):
            answer = found.group(1).strip()
            break
        if calc is None or step == max_steps - 1:
            break
        tool_calls += 1
        expression = _expression(calc.group(1))
        trajectory.append({"tool": "calc", "args": {"expression": "".join(expression.split())}})
        try:
            result = f"RESULT: {agentlib.calculate(expression)}"
        except agentlib.CalculatorError as exc:
            result = f"ERROR: {exc}"
        agentlib.log(f"step {step}: CALC {expression!r} -> {result}")
        # keep the model's reply up to its tool call, then give the result
        messages.append({"role": "assistant", "content": reply[: calc.end()]})
        messages.append({"role": "user", "content": result})
    if answer is None:
        answer = reply.strip()
    agentlib.log(
        f"{model.name} seed={seed} T={temperature} steps={step + 1} "
        f"tool_calls={tool_calls} {time.monotonic() - started:.2f}s"
    )
    agentlib.write_answer(answer, steps=step + 1, tool_calls=tool_calls, trajectory=trajectory)
    return 0


if __name__ == "__main__":
    sys.exit(agentlib.run(main))
