#!/bin/bash
# Deliberately broken verifier: it checks the work and exits 0, but never writes
# /logs/verifier/reward.txt or reward.json. Harbor records RewardFileNotFoundError
# (a verifier failure, not a reward of 0).
python3 -c 'import pathlib; print("done.txt exists:", pathlib.Path("/app/done.txt").is_file())'
exit 0
