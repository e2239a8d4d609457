"""tau-bench results: a JSON list of ``{task_id, trial, reward, info, traj}``
(sierra-research/tau-bench ``run.py`` output and ``historical_trajectories/*.json``).

- ``score`` = ``reward`` (0.0 or 1.0 in tau-bench; any value in [0, 1] is accepted); a trial
  is correct when ``reward == 1`` (tau-bench's pass^k counts those).
- ``status`` = ``agent_error`` when ``info.error`` is present (tau-bench's ``run.py`` records
  an exception that escaped the agent's loop that way, with reward 0; it does not say whose
  fault it was, so no infrastructure outcome is claimed), else ``ok``.
- the agent is the ``--agent`` option, else the file name without ``.json``
  (``gpt-4o-airline.json`` → ``gpt-4o-airline``): the file does not name its agent.
"""

from __future__ import annotations

from pathlib import Path

from evalnoise.importers._trial_records import (
    Trial,
    Where,
    check_score,
    expand_paths,
    load_json,
    path_key,
    require,
)

FORMAT = "tau-bench"
OPTIONS = ("agent",)
PATTERNS = ("*.json",)

RULES = {
    "rule": (
        "within (agent, task_id), trials are numbered from 0 in the order of (the file's "
        "path in natural sort order, then the record's `trial` field); for one complete "
        "file this is tau-bench's own 0-based `trial`"
    ),
    "agent_rule": "the --agent option if given, else the file name without .json",
    "score_rule": "score = reward; correct means reward == 1 (as tau-bench's pass^k)",
    "status_rule": "info.error present → agent_error (error text kept), else ok",
}


def read(paths: list[str | Path], *, agent: str | None = None) -> tuple[list[Trial], dict]:
    files = expand_paths(paths, PATTERNS, "tau-bench result .json files")
    trials: list[Trial] = []
    for path in files:
        data = load_json(path)
        if not isinstance(data, list):
            raise Where(str(path)).error(
                f"expected a JSON list of results, got {type(data).__name__}"
            )
        name = agent if agent is not None else path.name.removesuffix(".json")
        file_key = path_key(path.resolve())
        for k, rec in enumerate(data):
            where = Where(str(path), k + 1, f"record [{k}]")
            task = require(rec, "task_id", where, (int, str), "a task id (integer or string)")
            trial = require(rec, "trial", where, int, "an integer trial number")
            reward = require(rec, "reward", where, (int, float), "a number in [0, 1]")
            score = check_score(reward, where, "reward")
            info = rec.get("info")
            if info is not None and not isinstance(info, dict):
                raise where.error(f"expected an object, got {type(info).__name__}", "info")
            err = (info or {}).get("error")
            trials.append(
                Trial(
                    agent=name,
                    task_id=str(task),
                    order=(file_key, trial),
                    where=where,
                    status="agent_error" if err is not None else "ok",
                    score=score,
                    error=None if err is None else str(err),
                )
            )
    return trials, {
        "rules": RULES,
        "counts": {"files": len(files)},
        "sources": [str(f) for f in files],
    }
