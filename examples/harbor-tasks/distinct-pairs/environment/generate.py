# Pair k is (7919 k mod 1000003, k^2 + 13 mod 999983): distinct for k < 1000003, so the
# file holds exactly UNIQUE distinct pairs, each one to three times, shuffled.
import random
import sys

path, unique = sys.argv[1], int(sys.argv[2])
rng = random.Random(5)
lines = []
for k in range(unique):
    lines.extend([f"{k * 7919 % 1000003} {(k * k + 13) % 999983}\n"] * rng.randint(1, 3))
rng.shuffle(lines)
with open(path, "w") as out:
    out.writelines(lines)
