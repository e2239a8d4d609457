#!/bin/bash
# Loads every order as a row dict, groups them in memory, then totals each group.
python3 - <<'EOF'
import csv
from collections import defaultdict
from decimal import Decimal

with open("/app/orders.csv", newline="") as handle:
    orders = list(csv.DictReader(handle))
with open("/app/customers.csv", newline="") as handle:
    names = {row["customer_id"]: row["name"] for row in csv.DictReader(handle)}
groups = defaultdict(list)
for order in orders:
    groups[order["customer_id"]].append(order)
with open("/app/totals.csv", "w") as out:
    out.write("customer_id,name,total\n")
    for customer in sorted(groups, key=int):
        total = sum(Decimal(order["amount"]) for order in groups[customer])
        out.write(f"{customer},{names[customer]},{total:.2f}\n")
EOF
