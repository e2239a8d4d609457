# One streaming pass over the documents with the queries in memory.
import sys

with open("/app/queries.txt") as handle:
    queries = [set(line.split()) for line in handle]
hits = [[] for _ in queries]
with open("/app/docs.tsv") as handle:
    for line in handle:
        doc, _, text = line.rstrip("\n").partition("\t")
        words = set(text.split())
        for i, query in enumerate(queries):
            if query <= words:
                hits[i].append(doc)
expected = [" ".join(h) for h in hits]
try:
    with open("/app/answers.txt") as handle:
        got = handle.read().split("\n")
except OSError as exc:
    print(exc)
    sys.exit(1)
if got and got[-1] == "":
    got.pop()
sys.exit(0 if got == expected else 1)
