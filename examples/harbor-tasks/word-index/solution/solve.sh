#!/bin/bash
# Builds the whole index word -> set of document ids in memory, then intersects.
python3 - <<'EOF'
from collections import defaultdict

index = defaultdict(set)
with open("/app/docs.tsv") as handle:
    for line in handle:
        doc, words = line.rstrip("\n").split("\t")
        for word in words.split():
            index[word].add(int(doc))
with open("/app/queries.txt") as queries, open("/app/answers.txt", "w") as out:
    for query in queries:
        hits = set.intersection(*(index.get(word, set()) for word in query.split()))
        out.write(" ".join(map(str, sorted(hits))) + "\n")
EOF
