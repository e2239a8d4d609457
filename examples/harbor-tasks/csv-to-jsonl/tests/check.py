import json
import sys

expected = [
    {"name": "Ada", "age": 36, "tags": ["math", "engines"]},
    {"name": "Hopper, Grace", "age": 85, "tags": ["navy", "cobol", "compilers"]},
    {"name": "Linus", "age": 28, "tags": []},
    {"name": "Margaret", "age": 33, "tags": ["apollo"]},
]
try:
    with open("/app/people.jsonl") as handle:
        rows = [json.loads(line) for line in handle if line.strip()]
except (OSError, ValueError) as exc:
    print(exc)
    sys.exit(1)
ok = rows == expected and all(type(r["age"]) is int for r in rows)
sys.exit(0 if ok else 1)
