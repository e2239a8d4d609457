#!/bin/bash
# Named rewards in /logs/verifier/reward.json: `reward` (the line is exactly right) and
# `file_exists` (partial credit for creating the file at all). Needs only python3.
python3 - <<'PY'
import json
import pathlib

path = pathlib.Path("/app/greeting.txt")
exists = path.is_file()
right = exists and path.read_text() == "hello, harbor\n"
rewards = {"reward": float(right), "file_exists": float(exists)}
pathlib.Path("/logs/verifier/reward.json").write_text(json.dumps(rewards))
print(rewards)
PY
