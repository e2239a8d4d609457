#!/bin/bash
cat > /app/flatten.py <<'EOF'
def flatten(nested):
    """The integers of a nested list, in order (iterative: any depth)."""
    out = []
    stack = [iter(nested)]
    while stack:
        for item in stack[-1]:
            if isinstance(item, list):
                stack.append(iter(item))
                break
            out.append(item)
        else:
            stack.pop()
    return out
EOF
