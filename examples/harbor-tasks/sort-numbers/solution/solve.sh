#!/bin/bash
# Reads every number into memory and sorts it there.
python3 -c '
numbers = sorted(int(line) for line in open("/app/numbers.txt"))
with open("/app/sorted.txt", "w") as out:
    out.write("\n".join(map(str, numbers)) + "\n")
'
