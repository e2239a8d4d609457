#!/bin/bash
# Keeps every distinct pair in a set.
python3 - <<'EOF'
pairs = set()
with open("/app/pairs.txt") as handle:
    for line in handle:
        pairs.add(tuple(line.split()))
with open("/app/answer.txt", "w") as out:
    out.write(f"{len(pairs)}\n")
EOF
