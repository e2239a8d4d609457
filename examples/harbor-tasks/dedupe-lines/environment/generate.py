# Line k (a hash of k) first occurs before line k + 1; repeats are of earlier lines.
import hashlib
import random
import sys

path, unique = sys.argv[1], int(sys.argv[2])
rng = random.Random(99)


def token(k):
    return hashlib.sha1(str(k).encode()).hexdigest()[:24]


with open(path, "w") as out:
    for k in range(unique):
        out.write(token(k) + "\n")
        if k and rng.random() < 0.5:
            out.write(token(rng.randrange(k)) + "\n")
