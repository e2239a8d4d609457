#!/bin/bash
# Verifier: check.py exits 0 when the task is done; the reward is 1 or 0.
mkdir -p /logs/verifier
if python3 /tests/check.py; then
  echo 1 > /logs/verifier/reward.txt
else
  echo 0 > /logs/verifier/reward.txt
fi
