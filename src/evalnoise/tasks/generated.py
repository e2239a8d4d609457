"""The embedded default benchmark: arithmetic and word problems, generated from a seed.

Three levels, as GAIA has:

- level 1 — one operation on small numbers (``What is 47 + 18?``);
- level 2 — two or three operations (``What is (18 + 27) × 6?``);
- level 3 — multi-step word problems with larger numbers, where a calculator helps.

Task *i* of level *L* depends only on (seed, L, i) — its random generator is seeded with
sha256 of those three — so the benchmark is identical on every machine and Python version,
and asking for more tasks appends new ones without changing the first ones. Answers are
exact integers. Each task declares the resources it needs (``cpus``, ``memory_mb``) and a
time limit; level 3 declares more, as the multi-step agent keeps a longer conversation.

``generate_tasks(..., with_solutions=True)`` adds a ``solution`` column: a plain
arithmetic expression over numbers that appear in the question, for independent checking.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["LEVEL_RESOURCES", "GeneratedTask", "generate_task", "generate_tasks"]

#: Per-level resource spec and time limit. Like real benchmark specs they are estimates: the
#: agents that call a host-served model need ~12 MiB, but an agent that loads SmolLM2-135M
#: in its container with a 4096-token context needs ~142 MiB, more than levels 1–2 declare
#: — at a 1x hard limit those trials are OOM-killed, at 3x they are not.
LEVEL_RESOURCES: dict[int, dict[str, float | int]] = {
    1: {"cpus": 1.0, "memory_mb": 128, "time_limit_s": 60.0},
    2: {"cpus": 1.0, "memory_mb": 128, "time_limit_s": 90.0},
    3: {"cpus": 1.0, "memory_mb": 192, "time_limit_s": 180.0},
}


@dataclass(frozen=True)
class GeneratedTask:
    task_id: str
    level: int
    question: str
    answer: int
    solution: str


def _rng(seed: int, level: int, index: int) -> random.Random:
    digest = hashlib.sha256(f"evalnoise/generated/v1:{seed}:{level}:{index}".encode())
    return random.Random(int.from_bytes(digest.digest()[:8], "big"))


# ------------------------------------------------------------------------------ level 1


def _level1(r: random.Random) -> tuple[str, int, str]:
    op = r.choice("+-×÷")
    if op == "+":
        a, b = r.randint(2, 60), r.randint(2, 40)
        return f"What is {a} + {b}?", a + b, f"{a}+{b}"
    if op == "-":
        a = r.randint(20, 99)
        b = r.randint(2, a - 1)
        return f"What is {a} - {b}?", a - b, f"{a}-{b}"
    if op == "×":
        a, b = r.randint(2, 12), r.randint(2, 12)
        return f"What is {a} × {b}?", a * b, f"{a}*{b}"
    b, q = r.randint(2, 12), r.randint(2, 12)
    return f"What is {b * q} ÷ {b}?", q, f"{b * q}/{b}"


# ------------------------------------------------------------------------------ level 2


def _level2(r: random.Random) -> tuple[str, int, str]:
    shape = r.randrange(5)
    if shape == 0:
        a, b, c = r.randint(2, 30), r.randint(2, 30), r.randint(2, 9)
        return f"What is ({a} + {b}) × {c}?", (a + b) * c, f"({a}+{b})*{c}"
    if shape == 1:
        a, b = r.randint(3, 15), r.randint(3, 12)
        c = r.randint(2, a * b - 1)
        return f"What is {a} × {b} - {c}?", a * b - c, f"{a}*{b}-{c}"
    if shape == 2:
        c, q = r.randint(2, 9), r.randint(2, 20)
        b = r.randint(2, 50)
        a = c * q + b
        return f"What is ({a} - {b}) ÷ {c}?", q, f"({a}-{b})/{c}"
    if shape == 3:
        a, b, c, d = r.randint(2, 12), r.randint(2, 12), r.randint(2, 12), r.randint(2, 12)
        return f"What is {a} × {b} + {c} × {d}?", a * b + c * d, f"{a}*{b}+{c}*{d}"
    a, b, c = r.randint(10, 99), r.randint(10, 99), r.randint(10, 99)
    if a + b < c:
        a, c = c, a
    return f"What is {a} + {b} - {c}?", a + b - c, f"{a}+{b}-{c}"


# ------------------------------------------------------------------------------ level 3


def _warehouse(r: random.Random) -> tuple[str, int, str]:
    boxes, per = r.randint(120, 980), r.randint(12, 48)
    total = boxes * per
    s1 = r.randint(total // 10, total // 3)
    s2 = r.randint(total // 10, total // 3)
    q = (
        f"A warehouse holds {boxes} boxes with {per} items in each box. On Monday it ships "
        f"{s1} items and on Tuesday it ships {s2} items. How many items are left in the "
        "warehouse?"
    )
    return q, total - s1 - s2, f"{boxes}*{per}-{s1}-{s2}"


def _shopping(r: random.Random) -> tuple[str, int, str]:
    n1, p1 = r.randint(24, 180), r.randint(2, 9)
    n2, p2 = r.randint(30, 250), r.randint(2, 6)
    cost = n1 * p1 + n2 * p2
    bills = cost // 100 + r.randint(1, 4)
    q = (
        f"A school buys {n1} notebooks at {p1} dollars each and {n2} pens at {p2} dollars "
        f"each. It pays with {bills} bills of 100 dollars. How many dollars of change does "
        "it get?"
    )
    return q, bills * 100 - cost, f"{bills}*100-({n1}*{p1}+{n2}*{p2})"


def _train(r: random.Random) -> tuple[str, int, str]:
    v1, t1 = r.randint(45, 140), r.randint(2, 9)
    v2, t2 = r.randint(45, 140), r.randint(2, 9)
    q = (
        f"A train travels at {v1} km/h for {t1} hours, then at {v2} km/h for {t2} hours. "
        "How many kilometres does it travel in total?"
    )
    return q, v1 * t1 + v2 * t2, f"{v1}*{t1}+{v2}*{t2}"


def _savings(r: random.Random) -> tuple[str, int, str]:
    k = r.randint(3, 9)
    weekly, weeks = r.randint(15, 95), r.randint(8, 52)
    saved = weekly * weeks
    spend = r.randint(saved // 5, saved // 2)
    spend += (saved - spend) % k  # the rest splits evenly
    q = (
        f"Maria saves {weekly} dollars every week for {weeks} weeks. Then she spends {spend} "
        f"dollars on a bicycle and splits the rest equally among {k} jars. How many "
        "dollars go into each jar?"
    )
    return q, (saved - spend) // k, f"({weekly}*{weeks}-{spend})/{k}"


def _factory(r: random.Random) -> tuple[str, int, str]:
    rate, hours, days = 20 * r.randint(3, 40), r.randint(6, 16), r.randint(5, 30)
    pct = r.choice((5, 10, 15, 20, 25))
    total = rate * hours * days
    q = (
        f"A factory makes {rate} parts per hour and runs {hours} hours a day for {days} "
        f"days. {pct}% of the parts are defective. How many parts are not defective?"
    )
    return q, total * (100 - pct) // 100, f"{rate}*{hours}*{days}*(100-{pct})/100"


def _fence(r: random.Random) -> tuple[str, int, str]:
    length, width, price = r.randint(35, 480), r.randint(20, 300), r.randint(7, 45)
    length, width = max(length, width), min(length, width)
    q = (
        f"A rectangular field is {length} m long and {width} m wide. Fencing costs {price} "
        "dollars per metre. How many dollars does it cost to fence the whole perimeter?"
    )
    return q, 2 * (length + width) * price, f"2*({length}+{width})*{price}"


_WORD_PROBLEMS: tuple[Callable[[random.Random], tuple[str, int, str]], ...] = (
    _warehouse,
    _shopping,
    _train,
    _savings,
    _factory,
    _fence,
)


def _level3(r: random.Random) -> tuple[str, int, str]:
    return r.choice(_WORD_PROBLEMS)(r)


_LEVELS = {1: _level1, 2: _level2, 3: _level3}


def generate_task(seed: int, level: int, index: int) -> GeneratedTask:
    """Task ``index`` (0-based) of ``level`` for ``seed``."""
    if level not in _LEVELS:
        raise ValueError(f"level must be 1, 2 or 3, not {level}")
    question, answer, solution = _LEVELS[level](_rng(seed, level, index))
    return GeneratedTask(f"gen-l{level}-{index:03d}", level, question, answer, solution)


def generate_tasks(
    n_per_level: int = 10,
    seed: int = 0,
    *,
    levels: Iterable[int] = (1, 2, 3),
    with_solutions: bool = False,
) -> pd.DataFrame:
    """``n_per_level`` tasks of each level, as TASKS rows (``sampling_seed`` = ``seed``)."""
    # pandas and the schema (pyarrow) only here: the DAG build generates tasks without them
    import pandas as pd

    from evalnoise.schema import QUESTION_TASK_COLUMNS

    if n_per_level < 1:
        raise ValueError("n_per_level must be >= 1")
    rows = []
    for level in levels:
        for index in range(n_per_level):
            task = generate_task(seed, level, index)
            row = {
                "task_id": task.task_id,
                "question": task.question,
                "answer": str(task.answer),
                "level": str(level),
                **LEVEL_RESOURCES[level],
                "sampling_seed": seed,
            }
            if with_solutions:
                row["solution"] = task.solution
            rows.append(row)
    columns = [*QUESTION_TASK_COLUMNS] + (["solution"] if with_solutions else [])
    frame = pd.DataFrame.from_records(rows, columns=columns)
    frame["memory_mb"] = frame["memory_mb"].astype("Int64")
    frame["sampling_seed"] = frame["sampling_seed"].astype("Int64")
    return frame
