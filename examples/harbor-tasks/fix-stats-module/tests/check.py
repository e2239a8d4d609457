import sys

sys.path.insert(0, "/app")
from stats import mean, median

cases = [
    (mean, [5], 5),
    (mean, [1, 2, 3, 4], 2.5),
    (mean, [-2, 2, 10], 10 / 3),
    (median, [7], 7),
    (median, [3, 1, 2], 2),
    (median, [4, 1, 3, 2], 2.5),
    (median, [10, -1, 7, 7, 0, 100], 7),
]
for function, values, expected in cases:
    got = function(list(values))
    if abs(got - expected) > 1e-9:
        print(f"{function.__name__}({values}) = {got}, expected {expected}")
        sys.exit(1)
print("all checks pass")
