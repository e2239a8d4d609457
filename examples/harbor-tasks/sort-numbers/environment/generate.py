import random
import sys

rng = random.Random(20260101)
with open(sys.argv[1], "w") as out:
    for _ in range(700000):
        out.write(f"{rng.randrange(-(10**9), 10**9)}\n")
