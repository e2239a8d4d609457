#!/bin/bash
# reward.txt: 1 when the agent created /app/started.txt, else 0. Needs only python3.
python3 -c '
import pathlib
ok = pathlib.Path("/app/started.txt").is_file()
pathlib.Path("/logs/verifier/reward.txt").write_text("1\n" if ok else "0\n")
print("started.txt exists:", ok)
'
