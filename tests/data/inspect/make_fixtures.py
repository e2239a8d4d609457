"""Write the Inspect AI log fixtures beside this file with a real inspect_ai (see README.md).

Run with a throwaway venv that has inspect_ai 0.3.285, never from the test suite::

    python3.11 -m venv /tmp/inspect-venv
    /tmp/inspect-venv/bin/pip install inspect_ai==0.3.285
    /tmp/inspect-venv/bin/python tests/data/inspect/make_fixtures.py

The model is Inspect's built-in ``mockllm/model`` (no network), given a ``custom_outputs``
callable that plays a model: with a fixed ``seed`` in the generation config it answers each
question the same way every time (a seeded, deterministic model), without one it answers
from a pseudo-random stream (a sampling model). The scorers are Inspect's own ``match()``
and ``includes()``. One solver step raises for one (sample, epoch) and another stops one
(sample, epoch) with a limit, so the logs hold a real ``error`` and a real ``limit``.
Timestamps, uuids and ids differ on every run; the shapes and scores do not.
"""

from __future__ import annotations

import random
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from inspect_ai import Task, eval, eval_set, task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.log import read_eval_log, write_eval_log
from inspect_ai.model import GenerateConfig, ModelOutput, ModelUsage, get_model
from inspect_ai.scorer import includes, match
from inspect_ai.solver import Generate, TaskState, generate, solver
from inspect_ai.util import LimitExceededError

HERE = Path(__file__).resolve().parent
#: the answers the seeded "model" gets right (by question); the others it gets wrong
SEEDED_RIGHT = {"What is 1 + 1?": True, "What is 2 + 2?": False, "What is 3 + 3?": True}


def arith_samples(n: int) -> list[Sample]:
    return [Sample(id=i, input=f"What is {i} + {i}?", target=str(2 * i)) for i in range(1, n + 1)]


@solver
def trouble(fail: tuple[int, int] | None, limit: tuple[int, int] | None):
    """Raise for the (sample id, epoch) ``fail``; stop ``limit`` with a message limit."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        here = (state.sample_id, state.epoch)
        if fail is not None and here == tuple(fail):
            raise RuntimeError("tool sandbox unreachable (fixture)")
        if limit is not None and here == tuple(limit):
            raise LimitExceededError("message", value=5, limit=4, message="message limit (4)")
        return state

    return solve


@task
def arith(n: int = 3, fail: list[int] | None = None, limit: list[int] | None = None) -> Task:
    return Task(
        dataset=MemoryDataset(arith_samples(n), name="arith"),
        solver=[
            trouble(tuple(fail) if fail else None, tuple(limit) if limit else None),
            generate(),
        ],
        scorer=[match(), includes()],
    )


@task
def double(n: int = 2) -> Task:
    """One scorer only: a log set that imports and analyses with no flags."""
    return Task(
        dataset=MemoryDataset(arith_samples(n), name="double"),
        solver=[generate()],
        scorer=match(),
    )


@task
def triple(n: int = 2) -> Task:
    samples = [
        Sample(id=f"t{i}", input=f"What is 3 x {i}?", target=str(3 * i)) for i in range(1, n + 1)
    ]
    return Task(dataset=MemoryDataset(samples, name="triple"), solver=[generate()], scorer=match())


def mock_model():
    """``mockllm/model`` answering like a model: seeded → the same answer every time."""
    stream = random.Random(20260101)

    def answer(messages, tools, tool_choice, config: GenerateConfig) -> ModelOutput:
        question = messages[-1].text
        a, op, b = question.removeprefix("What is ").removesuffix("?").split(" ")
        right = int(a) + int(b) if op == "+" else int(a) * int(b)
        if config.seed is not None:
            ok = SEEDED_RIGHT.get(question, True)
        else:
            ok = stream.random() < 0.6
        output = ModelOutput.from_content("mockllm/model", str(right if ok else right + 1))
        # usage given, so mockllm does not count tokens with tiktoken (which downloads)
        output.usage = ModelUsage(input_tokens=8, output_tokens=1, total_tokens=9)
        return output

    return get_model("mockllm/model", custom_outputs=answer, memoize=False)


def trim(path: Path) -> None:
    """Drop each sample's ``events`` (the transcript: most of the bytes, unused by evalnoise)
    and rewrite the log in place with inspect_ai's own writer, in its own format."""
    log = read_eval_log(str(path))
    log.samples = [s.model_copy(update={"events": []}) for s in log.samples or []]
    write_eval_log(log, str(path))


def run(out: Path, **kwargs) -> Path:
    """One ``eval()`` into an empty folder; the log file it wrote."""
    with tempfile.TemporaryDirectory() as tmp:
        logs = eval(log_dir=tmp, model=mock_model(), max_samples=1, display="none", **kwargs)
        assert len(logs) == 1, logs
        written = Path(logs[0].location)
        target = out / written.name
        shutil.move(written, target)
    trim(target)
    return target


def main() -> None:
    for old in HERE.iterdir():
        if old.name not in {"make_fixtures.py", "README.md"}:
            shutil.rmtree(old) if old.is_dir() else old.unlink()
    # run A: a sampling model (temperature 0.7, no seed), 3 samples x 3 epochs, .eval
    # (zstandard members); sample 2 epoch 2 raises, sample 3 epoch 1 hits a message limit
    run_a = run(
        HERE,
        tasks=arith(fail=[2, 2], limit=[3, 1]),
        epochs=3,
        temperature=0.7,
        fail_on_error=False,
        log_format="eval",
    )
    # the same run converted to .json by `inspect log convert` (two formats of one run)
    converted = HERE / "converted"
    converted.mkdir()
    subprocess.run(
        [
            str(Path(sys.executable).with_name("inspect")),
            "log",
            "convert",
            str(run_a),
            "--to",
            "json",
            "--output-dir",
            str(converted),
        ],
        check=True,
    )
    # run B: the same model with a fixed seed (42) at temperature 0, written as .json:
    # it answers each question the same way every epoch
    run(HERE, tasks=arith(), epochs=3, temperature=0.0, seed=42, log_format="json")
    # an eval set: two one-scorer tasks, 2 epochs, in its own folder with Inspect's index
    # files (eval-set.json, logs.json)
    eval_set(
        [double(), triple()],
        log_dir=str(HERE / "eval-set"),
        model=mock_model(),
        epochs=2,
        max_samples=1,
        display="none",
        log_format="eval",
    )
    for log in (HERE / "eval-set").glob("*.eval"):
        trim(log)


if __name__ == "__main__":
    main()
