#!/bin/bash
python3 - <<'EOF'
import json
import pathlib


def merge(a, b):
    out = dict(a)
    for key, value in b.items():
        if isinstance(out.get(key), dict) and isinstance(value, dict):
            out[key] = merge(out[key], value)
        else:
            out[key] = value
    return out


merged = {}
for path in sorted(pathlib.Path("/app/conf.d").glob("*.json")):
    merged = merge(merged, json.loads(path.read_text()))
pathlib.Path("/app/merged.json").write_text(json.dumps(merged, indent=2) + "\n")
EOF
