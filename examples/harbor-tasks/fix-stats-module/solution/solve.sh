#!/bin/bash
cat > /app/stats.py <<'EOF'
"""Small statistics helpers."""


def mean(values):
    """Arithmetic mean of a non-empty list."""
    return sum(values) / len(values)


def median(values):
    """Median of a non-empty list."""
    ordered = sorted(values)
    middle = len(ordered) // 2
    if len(ordered) % 2:
        return ordered[middle]
    return (ordered[middle - 1] + ordered[middle]) / 2
EOF
