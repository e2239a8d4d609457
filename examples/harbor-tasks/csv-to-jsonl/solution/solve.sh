#!/bin/bash
python3 - <<'EOF'
import csv
import json

with open("/app/people.csv", newline="") as src, open("/app/people.jsonl", "w") as out:
    for row in csv.DictReader(src):
        tags = [t for t in row["tags"].split(";") if t]
        out.write(json.dumps({"name": row["name"], "age": int(row["age"]), "tags": tags}) + "\n")
EOF
