import sys

UNIQUE = 360000  # by construction of the generator (environment/generate.py)
try:
    with open("/app/answer.txt") as handle:
        answer = handle.read()
except OSError as exc:
    print(exc)
    sys.exit(1)
sys.exit(0 if answer.strip() == str(UNIQUE) else 1)
