#!/bin/bash
cat > /app/csvsum.py <<'EOF'
import csv
import sys


def main(path, column):
    with open(path, newline="") as handle:
        total = sum(float(row[column]) for row in csv.DictReader(handle) if row[column])
    print(f"{total:g}")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
EOF
