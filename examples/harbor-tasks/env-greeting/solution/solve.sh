#!/bin/bash
echo "$GREETING" | awk '{for (i = NF; i > 1; i--) printf "%s ", $i; print $1}' > out.txt
