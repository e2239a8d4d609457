#!/bin/bash
set -euo pipefail
echo started > /app/started.txt
# outlive [agent].timeout_sec (5 s): the harness must stop the agent, then verify
sleep 60
