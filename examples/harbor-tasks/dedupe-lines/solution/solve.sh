#!/bin/bash
# Remembers every line seen so far in a set.
python3 - <<'EOF'
seen = set()
with open("/app/lines.txt") as src, open("/app/unique.txt", "w") as out:
    for line in src:
        if line not in seen:
            seen.add(line)
            out.write(line)
EOF
