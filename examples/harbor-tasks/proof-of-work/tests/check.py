import hashlib
import sys

try:
    with open("/app/nonce.txt") as handle:
        nonce = int(handle.read().strip())
except (OSError, ValueError) as exc:
    print(exc)
    sys.exit(1)
digest = hashlib.sha256(b"evalnoise-%d" % nonce).digest()
ok = nonce >= 0 and int.from_bytes(digest, "big") >> (256 - 16) == 0
sys.exit(0 if ok else 1)
