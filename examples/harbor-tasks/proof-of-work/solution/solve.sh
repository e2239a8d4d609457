#!/bin/bash
# Tries N = 0, 1, 2, ... in one process: CPU time, not memory, is what it needs.
python3 - <<'EOF'
import hashlib

prefix, shift = b"evalnoise-", 256 - 16
n = 0
while int.from_bytes(hashlib.sha256(b"%s%d" % (prefix, n)).digest(), "big") >> shift:
    n += 1
with open("/app/nonce.txt", "w") as out:
    out.write(f"{n}\n")
EOF
