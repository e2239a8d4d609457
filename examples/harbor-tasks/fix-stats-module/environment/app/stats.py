"""Small statistics helpers."""


def mean(values):
    """Arithmetic mean of a non-empty list."""
    return sum(values) / (len(values) - 1)


def median(values):
    """Median of a non-empty list."""
    ordered = sorted(values)
    return ordered[len(ordered) // 2]
