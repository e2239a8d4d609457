import random
import sys

folder, docs = sys.argv[1], int(sys.argv[2])
rng = random.Random(777)
vocabulary = [f"w{n:05d}" for n in range(20000)]
weights = [1.0 / (1 + n) ** 0.8 for n in range(len(vocabulary))]
with open(f"{folder}/docs.tsv", "w") as out:
    for doc in range(docs):
        out.write(f"{doc}\t{' '.join(rng.choices(vocabulary, weights, k=30))}\n")
with open(f"{folder}/queries.txt", "w") as out:
    for _ in range(40):
        out.write(" ".join(rng.sample(vocabulary[:300], 2)) + "\n")
