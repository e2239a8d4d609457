"""A scripted external agent for environment tasks (tests only): it speaks the exec protocol
(docs/agent-contract.md, "Environment tasks") without any model.

Its steps come from the JSON list in ``EXEC_SCRIPT``; each step is one of

- ``{"exec": "<command>", "timeout_s": n}`` — send it, read the runner's answer;
- ``{"write_instruction": "<path>"}`` — write the instruction it was given (from
  ``EVALNOISE_QUESTION``, else the task file) to that path in the container, by an exec;
- ``{"raw": "<text>"}`` — write a raw line (to break the protocol on purpose);
- ``{"sleep": s}`` — think for ``s`` seconds;
- ``{"exit": code}`` — exit at once, without ``done``;
- ``{"done": {usage}}`` — send ``done`` with that usage and exit 0.

After the last step it sends ``{"done": true, "usage": {"model_calls": <execs sent>}}``. Every
answer it receives is echoed to stderr as ``ANSWER <json>`` so a test can read them from the
trial row's ``stderr_tail``.
"""

import json
import os
import shlex
import sys
import time


def send(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def receive():
    line = sys.stdin.readline()
    if not line:
        sys.stderr.write("EOF from the runner\n")
        sys.exit(3)
    sys.stderr.write(f"ANSWER {line}")
    sys.stderr.flush()
    return json.loads(line)


def instruction():
    text = os.environ.get("EVALNOISE_QUESTION")
    if text is None:
        with open(os.environ["EVALNOISE_TASK_FILE"], encoding="utf-8") as handle:
            text = json.load(handle)["question"]
    return text


def main():
    sent = 0
    for step in json.loads(os.environ.get("EXEC_SCRIPT", "[]")):
        if "exec" in step:
            send({k: step[k] for k in ("exec", "timeout_s") if k in step})
            sent += 1
            receive()
        elif "write_instruction" in step:
            command = f"printf %s {shlex.quote(instruction())} > {step['write_instruction']}"
            send({"exec": command})
            sent += 1
            receive()
        elif "raw" in step:
            sys.stdout.write(step["raw"] + "\n")
            sys.stdout.flush()
        elif "sleep" in step:
            time.sleep(step["sleep"])
        elif "exit" in step:
            sys.exit(step["exit"])
        elif "done" in step:
            send({"done": True, "usage": step["done"]})
            return
    send({"done": True, "usage": {"model_calls": sent}})


if __name__ == "__main__":
    main()
