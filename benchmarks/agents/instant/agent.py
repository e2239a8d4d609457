"""Instant agent: answers an arithmetic question at once, with no model (benchmarks only).

Follows docs/agent-contract.md: reads the question from ``EVALNOISE_QUESTION`` (or the task
file when the question was too long for the environment), evaluates ``What is <expression>?``
on integers, and writes ``{"answer": ...}`` to ``EVALNOISE_OUTPUT``. A word problem gets 0.
It imports only ``json``, ``os`` and ``re`` so a trial costs little more than the interpreter's
start: what the pipeline benchmark measures is everything *around* the agent.
"""

import json
import os
import re

question = os.environ.get("EVALNOISE_QUESTION")
if question is None:
    with open(os.environ["EVALNOISE_TASK_FILE"], encoding="utf-8") as handle:
        question = json.load(handle)["question"]
match = re.match(r"What is (.+)\?$", question)
expression = match.group(1).replace("×", "*").replace("÷", "//") if match else ""
answer = 0
if expression and re.fullmatch(r"[0-9+*/() -]+", expression):
    answer = int(eval(expression, {"__builtins__": {}}))  # integers and + - * // ( ) only
with open(os.environ["EVALNOISE_OUTPUT"], "w", encoding="utf-8") as handle:
    json.dump({"answer": str(answer)}, handle)
