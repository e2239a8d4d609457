import collections
import json
import re

line_re = re.compile(r'^\S+ - - \[[^]]+\] "(\S+) (\S+) [^"]*" (\d{3}) \d+$')
statuses = collections.Counter()
paths = collections.Counter()
total = 0
with open("/app/access.log") as log:
    for line in log:
        match = line_re.match(line.strip())
        total += 1
        paths[match.group(2)] += 1
        statuses[match.group(3)] += 1
checks = {"total": 0.0, "by_status": 0.0, "top_path": 0.0}
try:
    with open("/app/report.json") as handle:
        report = json.load(handle)
    checks["total"] = float(report.get("total") == total)
    checks["by_status"] = float(report.get("by_status") == dict(statuses))
    checks["top_path"] = float(report.get("top_path") == paths.most_common(1)[0][0])
except (OSError, ValueError, AttributeError) as exc:
    print("no usable report:", exc)
rewards = dict(checks, reward=sum(checks.values()) / len(checks))
print(rewards)
with open("/logs/verifier/reward.json", "w") as out:
    json.dump(rewards, out)
