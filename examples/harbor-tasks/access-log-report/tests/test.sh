#!/bin/bash
# Verifier: one named reward per key of the report, and their mean as "reward".
mkdir -p /logs/verifier
python3 /tests/check.py
