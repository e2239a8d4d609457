#!/usr/bin/env python
"""The LLM judge on real replies with prompts evaluated one token at a time against in batches.

Reads the trial shards of a finished run (the agents' replies, ``ok`` trials with a
prediction) and judges every one in extract mode, as the default run's LLM judge does (one
sample at temperature 0, the answer schema following the reference's type), on two real
SmolLM2-135M servers started alike but for ``n_ubatch``: 1 (every token alone) and 512
(:class:`evalnoise.models.serve.HistoryFreeLlama`: prompts in batches, replies still
independent of what the server served before). The replies are split into rounds that go to
the two servers alternately (1, 512, 512, 1, ...), so drift on a shared machine hits both
alike. Measured per server: the CPU seconds of its process (``/proc/PID/stat``) and the wall
time of the calls; printed: their ratio, and how many extracted answers and verdicts agree.

    python benchmarks/bench_prompt_batch.py RUN_DIR [--rounds 4] [--out NAME]

Writes ``benchmarks/results/NAME.{json,md}``.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import pandas as pd

from evalnoise.models import ChatClient, LlamaServer, ServerConfig
from evalnoise.scorers import LLMJudge

OUT = Path(__file__).resolve().parent / "results"
BATCHES = (1, 512)


def replies(run: Path) -> pd.DataFrame:
    """``ok`` trials with a prediction, joined to their task's question and answer."""
    tasks = pd.read_parquet(run / "results" / "tasks.parquet")
    shards = sorted((run / "results" / "trials").rglob("c*.parquet"))
    trials = pd.concat([pd.read_parquet(p) for p in shards], ignore_index=True)
    trials = trials[(trials["status"] == "ok") & trials["prediction"].fillna("").str.strip().ne("")]
    frame = trials.merge(tasks[["task_id", "question", "answer"]], on="task_id")
    return frame.sort_values(["agent", "resource_profile", "task_id", "trial"], ignore_index=True)


def cpu_seconds(pid: int) -> float:
    """utime + stime of a process (fields 14 and 15 of ``/proc/PID/stat``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run", type=Path)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--out", default="prompt-batch-judge")
    args = parser.parse_args(argv)

    frame = replies(args.run)
    rounds = [frame.iloc[i :: args.rounds] for i in range(args.rounds)]
    servers = {b: LlamaServer(ServerConfig(n_ubatch=b)).start() for b in BATCHES}
    judges = {
        b: LLMJudge(ChatClient(s.base_url, s.model), mode="extract", max_tokens=16)
        for b, s in servers.items()
    }
    cpu = dict.fromkeys(BATCHES, 0.0)
    wall = dict.fromkeys(BATCHES, 0.0)
    results: dict[int, dict[int, tuple[bool | None, str]]] = {b: {} for b in BATCHES}
    try:
        for number, part in enumerate(rounds):
            order = BATCHES if number % 2 == 0 else BATCHES[::-1]
            for batch in order:
                pid = servers[batch].pid
                before, started = cpu_seconds(pid), time.monotonic()
                for index, row in part.iterrows():
                    verdict = judges[batch].judge(row["question"], row["prediction"], row["answer"])
                    results[batch][index] = (verdict.correct, verdict.explanation)
                wall[batch] += time.monotonic() - started
                cpu[batch] += cpu_seconds(pid) - before
    finally:
        for server in servers.values():
            server.stop()

    one, many = (results[b] for b in BATCHES)
    doc = {
        "run": str(args.run),
        "replies": len(frame),
        "agents": frame["agent"].value_counts().to_dict(),
        "rounds": args.rounds,
        "server_cpu_s": {str(b): round(cpu[b], 2) for b in BATCHES},
        "wall_s": {str(b): round(wall[b], 2) for b in BATCHES},
        "cpu_ratio_512_over_1": round(cpu[512] / cpu[1], 3),
        "wall_ratio_512_over_1": round(wall[512] / wall[1], 3),
        "same_extraction": sum(one[i][1] == many[i][1] for i in one),
        "same_verdict": sum(one[i][0] == many[i][0] for i in one),
        "calls": {str(b): judges[b].calls for b in BATCHES},
    }
    OUT.mkdir(exist_ok=True)
    (OUT / f"{args.out}.json").write_text(json.dumps(doc, indent=1) + "\n")
    lines = [
        "# LLM judge: prompts one token at a time against in batches",
        "",
        f"Run `{args.run}`: {doc['replies']} replies ({doc['agents']}), {args.rounds} "
        "alternating rounds, extract mode, one sample at T 0, SmolLM2-135M on one thread.",
        "",
        "| n_ubatch | server CPU s | wall s |",
        "|---:|---:|---:|",
        *(f"| {b} | {doc['server_cpu_s'][str(b)]} | {doc['wall_s'][str(b)]} |" for b in BATCHES),
        "",
        f"512 / 1: CPU {doc['cpu_ratio_512_over_1']} ×, wall {doc['wall_ratio_512_over_1']} ×. "
        f"Same extracted answer for {doc['same_extraction']} of {doc['replies']} replies, "
        f"same verdict for {doc['same_verdict']}.",
        "",
    ]
    (OUT / f"{args.out}.md").write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
