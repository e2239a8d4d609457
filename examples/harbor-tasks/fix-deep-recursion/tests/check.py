import copy
import sys

sys.path.insert(0, "/app")
from flatten import flatten

deep = [0]
for i in range(1, 20000):
    deep = [i, deep, -i]
cases = [([], []), ([1, [2, [3]], 4], [1, 2, 3, 4]), ([[[]], [5, [6, [[7]]]]], [5, 6, 7])]
for given, expected in cases:
    before = copy.deepcopy(given)
    if flatten(given) != expected or given != before:
        print("wrong on", given)
        sys.exit(1)
result = flatten(deep)
expected_deep = list(range(19999, 0, -1)) + [0] + [-i for i in range(1, 20000)]
sys.exit(0 if result == expected_deep else 1)
