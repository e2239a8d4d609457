"""Tiny agent: computes `What is <expression>?` and answers right with a per-task rate.

The rate is a hash of (TINY_SKILL, task id) in [0, 1], or $TINY_RATE when set (1 = always
right, 0 = always wrong); whether this trial is right is drawn from the trial seed
($EVALNOISE_SEED). The expression is found anywhere in the question, so a prompt variant's
template may wrap it in text; with $TINY_PROMPT_WEIGHT = w, the rate is (1 - w) × that rate
+ w × a hash of (TINY_SKILL, the question's wording around the expression): the prompt's
wording moves every task's rate alike, a prompt effect as a G study sees it. Word problems
(no expression) get a guess. Optional $TINY_SLEEP_S seconds of work first (the end-to-end
test kills a run mid-way). $TINY_CRASH=segv makes it kill itself with SIGSEGV, as a native
library that crashes on this CPU would; $TINY_CRASH=segv-odd only on odd trial indices (the
canary's trial 0 passes, half the sweep crashes).
"""

import hashlib
import json
import os
import random
import re
import signal
import sys
import time

question = os.environ.get("EVALNOISE_QUESTION", "")
task_id = os.environ["EVALNOISE_TASK_ID"]
seed = int(os.environ["EVALNOISE_SEED"])
time.sleep(float(os.environ.get("TINY_SLEEP_S", "0")))
crash = os.environ.get("TINY_CRASH")
# segv-odd: crash on odd trial indices only, so trial 0 (the canary's) passes
if crash == "segv" or (crash == "segv-odd" and int(os.environ["EVALNOISE_TRIAL"]) % 2):
    print("tiny: about to crash (TINY_CRASH=segv)", file=sys.stderr, flush=True)
    os.kill(os.getpid(), signal.SIGSEGV)
skill = os.environ.get("TINY_SKILL", "0")
rate = int(hashlib.sha256(f"{skill}:{task_id}".encode()).hexdigest()[:8], 16) / 0xFFFFFFFF
if os.environ.get("TINY_RATE"):
    rate = float(os.environ["TINY_RATE"])
match = re.search(r"What is ([^?]+)\?", question)
weight = float(os.environ.get("TINY_PROMPT_WEIGHT", "0"))
if weight:
    wording = question.replace(match.group(0), "") if match else question
    prompt_rate = int(hashlib.sha256(f"{skill}:{wording}".encode()).hexdigest()[:8], 16)
    rate = (1 - weight) * rate + weight * prompt_rate / 0xFFFFFFFF
expression = match.group(1).replace("×", "*").replace("÷", "//") if match else ""
if expression and re.fullmatch(r"[0-9+*/() -]+", expression):
    truth = int(eval(expression, {"__builtins__": {}}))  # arithmetic on integers only
else:
    truth = 0
right = random.Random(seed).random() < rate
answer = truth if right else truth + 1 + random.Random(seed + 1).randrange(9)
with open(os.environ["EVALNOISE_OUTPUT"], "w") as handle:
    json.dump({"answer": str(answer)}, handle)
