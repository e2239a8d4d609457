# The expected output is line 0, line 1, ... of the generator: checked while streaming.
import hashlib
import sys

UNIQUE = 400000
k = -1
try:
    with open("/app/unique.txt") as handle:
        for k, line in enumerate(handle):
            if k >= UNIQUE or line != hashlib.sha1(str(k).encode()).hexdigest()[:24] + "\n":
                print("wrong line", k + 1)
                sys.exit(1)
except OSError as exc:
    print(exc)
    sys.exit(1)
sys.exit(0 if k + 1 == UNIQUE else 1)
