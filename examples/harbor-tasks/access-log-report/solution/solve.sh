#!/bin/bash
python3 - <<'EOF'
import collections
import json

statuses, paths, total = collections.Counter(), collections.Counter(), 0
with open("/app/access.log") as log:
    for line in log:
        request = line.split('"')[1].split()
        status = line.split('"')[2].split()[0]
        total += 1
        paths[request[1]] += 1
        statuses[status] += 1
report = {"total": total, "by_status": dict(statuses), "top_path": paths.most_common(1)[0][0]}
with open("/app/report.json", "w") as out:
    json.dump(report, out, indent=2)
EOF
