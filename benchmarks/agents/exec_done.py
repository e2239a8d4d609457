"""An exec-protocol external agent that does nothing: it says done at once (no model, no
command). The runner's own cost of an external agent, for benchmarks/bench_agent_adapters.py."""

import json
import sys

sys.stdout.write(json.dumps({"done": True}) + "\n")
sys.stdout.flush()
