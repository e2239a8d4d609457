"""Judges replayed on real replies: κ, false accept / reject, parse rate, seconds per call.

Reads the trial shards of a real run (the agents' replies) and the tasks, scores every ``ok``
trial with the reference scorer (``numeric``, the last number, as the default run does) and
has each judge judge it, with a real SmolLM2-135M server (llama-cpp-python, one thread):

- ``typed``: the extract-mode LLM judge as it is now, the answer schema following the
  reference's type (a number: ``^-?[0-9]{1,6}$``), k samples at T 0.7 (k = 1: T 0);
- ``free32``: the extract-mode judge as it was, a free string of up to 32 characters;
- ``last_number``: the rule judge (no model) — the reference's own rule, so κ 1 by
  construction on these data (printed as a check, not as a measurement of a judge).

Each vote is set against its trial's reference verdict (:func:`evalnoise.stats.judge_agreement`,
clustered by task). Run from the checkout::

    python benchmarks/judge_replay.py RUN_DIR [--samples 2] [--max-tokens 16] [--out NAME]

``RUN_DIR`` holds ``results/tasks.parquet`` and ``results/trials/``. Writes
``benchmarks/results/NAME.{json,md}``.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import pandas as pd

from evalnoise.models import ChatClient, LlamaServer, ServerConfig
from evalnoise.models.client import ChatError
from evalnoise.scorers import LLMJudge
from evalnoise.scorers.deterministic import numeric
from evalnoise.scorers.rule_judge import RuleJudge
from evalnoise.stats import judge_agreement

#: the extract judge's schema before the answer followed the reference's type
FREE32 = {
    "type": "object",
    "properties": {"answer": {"type": "string", "maxLength": 32}},
    "required": ["answer"],
}
FREE_TEMPLATE = (
    "Extract the final answer from the response below. Reply with the answer only.\n"
    "\nResponse: {predicted_answer}\n"
)


def _replies(run: Path) -> pd.DataFrame:
    tasks = pd.read_parquet(run / "results" / "tasks.parquet")
    shards = sorted((run / "results" / "trials").rglob("c*.parquet"))
    trials = pd.concat([pd.read_parquet(p) for p in shards], ignore_index=True)
    trials = trials.sort_values(["agent", "task_id", "trial", "attempt"])
    trials = trials.drop_duplicates(["agent", "resource_profile", "task_id", "trial"], keep="last")
    trials = trials[(trials["status"] == "ok") & trials["prediction"].fillna("").str.strip().ne("")]
    frame = trials.merge(tasks[["task_id", "question", "answer", "level"]], on="task_id")
    frame["reference"] = [
        numeric(p, a).correct for p, a in zip(frame["prediction"], frame["answer"], strict=True)
    ]
    return frame.reset_index(drop=True)


class _Free32:
    """The extract judge as it was: a free-string answer, compared by the numeric scorer."""

    def __init__(self, client: ChatClient, samples: int, max_tokens: int) -> None:
        self.client, self.samples, self.max_tokens = client, samples, max_tokens
        self.calls = 0

    def judge(self, question, prediction, target, status="ok"):
        votes, tokens = [], []
        plan = [(0.0, 0)] if self.samples == 1 else [(0.7, i) for i in range(self.samples)]
        for temperature, seed in plan:
            self.calls += 1
            try:
                reply = self.client.chat(
                    [
                        {
                            "role": "user",
                            "content": FREE_TEMPLATE.format(predicted_answer=prediction),
                        }
                    ],
                    temperature=temperature,
                    seed=seed,
                    max_tokens=self.max_tokens,
                    response_format={"type": "json_object", "schema": FREE32},
                )
            except ChatError:
                votes.append(None)
                continue
            tokens.append(reply.completion_tokens)
            try:
                answer = json.loads(reply.text, strict=False)["answer"]
                votes.append(bool(numeric(str(answer), target)))
            except (ValueError, KeyError, TypeError):
                votes.append(None)
        return votes, tokens


def _run_judge(name, judge, frame):
    votes, tokens, started = [], [], time.perf_counter()
    for row in frame.itertuples():
        if name == "free32":
            v, t = judge.judge(row.question, row.prediction, row.answer)
        else:
            r = judge.judge(row.question, row.prediction, row.answer)
            v = list(r.votes) if r.votes else [None]
            t = [r.completion_tokens] if r.calls else []
        votes.append(v)
        tokens.extend(x for x in t if x is not None)
    seconds = time.perf_counter() - started
    return votes, tokens, seconds


def _summary(name, frame, votes, tokens, seconds, calls):
    counts = np.array([len(v) for v in votes])
    flat = np.array([np.nan if x is None else float(x) for v in votes for x in v])
    ref = np.repeat(frame["reference"].astype(float).to_numpy(), counts)
    tasks = np.repeat((frame["agent"] + "/" + frame["task_id"]).to_numpy(), counts)
    a = judge_agreement(flat, ref, tasks=tasks, n_resamples=1000)
    per_agent = {}
    for agent in sorted(frame["agent"].unique()):
        keep = np.repeat((frame["agent"] == agent).to_numpy(), counts)
        b = judge_agreement(flat[keep], ref[keep], tasks=tasks[keep], n_resamples=500)
        per_agent[agent] = {
            "n": b.n,
            "kappa": b.kappa,
            "false_accept_rate": b.false_accept_rate,
            "false_reject_rate": b.false_reject_rate,
        }
    return {
        "judge": name,
        "replies": len(frame),
        "votes": int(counts.sum()),
        "parse_rate": float(np.isfinite(flat).mean()),
        "kappa": a.kappa,
        "kappa_ci": [a.kappa_cluster_ci_low, a.kappa_cluster_ci_high],
        "agreement": a.agreement,
        "false_accept_rate": a.false_accept_rate,
        "false_reject_rate": a.false_reject_rate,
        "n_false_accept": a.n_false_accept,
        "n_false_reject": a.n_false_reject,
        "calls": calls,
        "seconds": seconds,
        "seconds_per_call": seconds / calls if calls else 0.0,
        "mean_completion_tokens": float(np.mean(tokens)) if tokens else 0.0,
        "per_agent": per_agent,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run", type=Path)
    parser.add_argument("--samples", type=int, default=2)
    parser.add_argument("--max-tokens", type=int, default=16)
    parser.add_argument("--free-max-tokens", type=int, default=64)
    parser.add_argument("--judges", default="typed,free32,last_number")
    parser.add_argument("--out", default="judges")
    args = parser.parse_args()
    frame = _replies(args.run)
    print(f"{len(frame)} replies; reference TRUE {int(frame['reference'].sum())}")
    results = []
    with LlamaServer(ServerConfig(n_threads=1)) as server:
        for name in args.judges.split(","):
            client = ChatClient(server.base_url, server.model, timeout=120)
            if name == "typed":
                judge = LLMJudge(
                    client,
                    mode="extract",
                    samples=args.samples,
                    max_tokens=args.max_tokens,
                    structured="json_object_schema",
                )
            elif name == "free32":
                judge = _Free32(client, args.samples, args.free_max_tokens)
            else:
                judge = RuleJudge("last_number")
            votes, tokens, seconds = _run_judge(name, judge, frame)
            results.append(_summary(name, frame, votes, tokens, seconds, judge.calls))
            r = results[-1]
            print(
                f"{name}: κ {r['kappa']:.3f} [{r['kappa_ci'][0]:.2f}, {r['kappa_ci'][1]:.2f}] "
                f"FA {r['false_accept_rate']:.3f} FR {r['false_reject_rate']:.3f} parse "
                f"{r['parse_rate']:.3f}; {r['calls']} calls {r['seconds']:.1f} s "
                f"({r['seconds_per_call']:.2f} s/call, {r['mean_completion_tokens']:.1f} tokens)"
            )
    out = Path(__file__).parent / "results"
    meta = {"samples": args.samples, "max_tokens": args.max_tokens, "replies": len(frame)}
    (out / f"{args.out}.json").write_text(
        json.dumps({"settings": meta, "judges": results}, indent=2, default=float) + "\n"
    )
    lines = [
        f"# Judges on {len(frame)} real replies ({', '.join(sorted(frame['agent'].unique()))})",
        "",
        f"Reference: the numeric scorer (last number); {int(frame['reference'].sum())} TRUE. "
        f"LLM judges: SmolLM2-135M, {args.samples} sample(s) per reply, one thread.",
        "",
        "| judge | κ [task-bootstrap 95% CI] | false accept | false reject | parse | s/call |",
        "|---|---|---|---|---|---|",
    ]
    for r in results:
        lines.append(
            f"| {r['judge']} | {r['kappa']:.2f} [{r['kappa_ci'][0]:.2f}, {r['kappa_ci'][1]:.2f}] "
            f"| {r['false_accept_rate']:.1%} ({r['n_false_accept']}) "
            f"| {r['false_reject_rate']:.1%} ({r['n_false_reject']}) | {r['parse_rate']:.1%} "
            f"| {r['seconds_per_call']:.2f} |"
        )
    (out / f"{args.out}.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
