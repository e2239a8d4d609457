"""The suite's file order (tests/file_order.py): longest first, a file's tests together."""

from __future__ import annotations

import pytest
from file_order import GUESS_FAST_S, GUESS_SLOW_S, MEASURED_S, costs, longest_first


class Item:
    """What the order reads of a collected test: its node id and its markers."""

    def __init__(self, nodeid: str, *marks: str) -> None:
        self.nodeid = nodeid
        self.marks = set(marks)

    def get_closest_marker(self, name: str):
        return name if name in self.marks else None


def ids(items) -> list[str]:
    return [i.nodeid for i in items]


def test_the_costliest_file_starts_first_and_a_files_tests_stay_in_order():
    items = [
        Item("tests/a.py::one"),
        Item("tests/a.py::two"),
        Item("tests/b.py::one"),
        Item("tests/c.py::one"),
        Item("tests/c.py::two"),
    ]
    cost = {"tests/a.py": 1.0, "tests/b.py": 30.0, "tests/c.py": 1.0}
    assert ids(longest_first(items, cost)) == [
        "tests/b.py::one",
        "tests/a.py::one",  # a tie keeps the collection order
        "tests/a.py::two",
        "tests/c.py::one",
        "tests/c.py::two",
    ]


def test_a_files_cost_is_the_cache_then_the_measured_table_then_a_guess():
    measured = next(iter(MEASURED_S))
    items = [
        Item(f"{measured}::t"),
        Item("tests/cached.py::t"),
        Item("tests/new.py::fast"),
        Item("tests/new.py::pipeline", "slow"),
        Item("tests/new.py::engine", "docker"),
    ]
    got = costs(items, {"tests/cached.py": 12.5})
    assert got == {
        measured: MEASURED_S[measured],
        "tests/cached.py": 12.5,
        "tests/new.py": 2 * GUESS_SLOW_S + GUESS_FAST_S,
    }
    # a measurement in the cache wins over the table
    assert costs(items, {measured: 3.0})[measured] == 3.0


@pytest.mark.parametrize("n", [1, 7])
def test_the_order_is_a_permutation(n):
    items = [Item(f"tests/f{i % 3}.py::t{i}") for i in range(n)]
    out = longest_first(items, costs(items, {}))
    assert sorted(ids(out)) == sorted(ids(items))
