"""Running and scoring one shard, with the model server it needs started and stopped.

:func:`run_trials_shard` selects the shard's task rows and runs
:func:`evalnoise.runner.run_shard`. If the agent uses the managed model server, the server
belongs to the job: it is started when the shard's first trial actually starts (a shard
whose trials are all in its journal already — a rerun, a resumed or restored run — starts
none) and stopped, with its whole process group, when the shard ends, whatever happens.
:func:`score_shard` scores a trial shard with a deterministic scorer or the LLM judge; a
judge without a URL leases a managed server from
:data:`evalnoise.pipeline.model_servers.JUDGE_SERVERS`, started at the first verdict not in
the judge's cache and kept, idle, for the next judge job of the process.

The server's URL reaches the agent at run time only (``AGENT_BASE_URL``; see
:data:`evalnoise.pipeline.settings.RUNTIME_URL_VAR`): the port differs every time, and a
value in the agent's spec would make a resumed shard look like a different configuration.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from evalnoise.atomic import atomic_path
from evalnoise.pipeline import reruns
from evalnoise.pipeline.model_servers import JUDGE_SERVERS, LazyServer
from evalnoise.pipeline.settings import RUNTIME_URL_VAR
from evalnoise.pipeline.shard_job import ShardFiles, ShardJob

__all__ = [
    "LazyServer",
    "ShardRun",
    "run_trials_shard",
    "score_shard",
    "select_rows",
]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ShardRun:
    """What :func:`run_trials_shard` did: the runner's result and the server's starts."""

    result: Any
    server_starts: int = 0
    server_url: str | None = None


class _ServedBackend:
    """A trial backend that makes sure the model server runs before each trial starts."""

    def __init__(self, inner: Any, server: LazyServer) -> None:
        self.inner = inner
        self.server = server
        self.name = inner.name

    def run_trial(self, request: Any) -> dict[str, Any]:
        self.server.ensure()
        return self.inner.run_trial(request)

    def cleanup(self, shard_id: str) -> int:
        return self.inner.cleanup(shard_id)

    def abort(self, shard_id: str) -> None:
        self.inner.abort(shard_id)

    def check(self) -> None:
        check = getattr(self.inner, "check", None)
        if check is not None:
            check()


def select_rows(tasks: pd.DataFrame, first: int, last: int) -> pd.DataFrame:
    """Rows ``first … last`` (inclusive, 0-based, in file order) of the tasks table."""
    if first < 0 or last < first:
        raise ValueError(f"bad task row range {first}-{last}")
    if last >= len(tasks):
        raise ValueError(
            f"task rows {first}-{last} asked for, but the tasks table has {len(tasks)} rows"
        )
    return tasks.iloc[first : last + 1].reset_index(drop=True)


def run_trials_shard(
    job: ShardJob, files: ShardFiles, *, environ: Mapping[str, str] | None = None
) -> ShardRun:
    """Run (or finish) one shard, ``job``, keeping its journal and output in ``files``;
    returns the runner's :class:`ShardResult` and how often the model server was started
    (0 when every trial was already in the journal). Secret values come from ``environ``
    (default ``os.environ``).

    ``files.image_info`` is the JSON written by
    :func:`evalnoise.pipeline.image_stage.ensure_image`; its ``image`` completes the agent
    spec. Environment tasks (the tasks table's ``kind``) run on
    :class:`evalnoise.runner.environment.EnvironmentBackend`, their images built on the
    record's ``base`` image, ``job.reward_key`` naming the reward that scores, ``job.network``
    what a public-network task gets (:mod:`evalnoise.runner.trial_network`).

    The shard id that labels its containers derives from the journal path, which stays the
    same when a block or chunk grows (see :mod:`evalnoise.pipeline.shard_plan`), so leftovers of a
    killed run are always found and removed.
    """
    from evalnoise.runner.shard import default_shard_id, make_backend, run_shard

    tasks = select_rows(pd.read_parquet(job.tasks_path), *job.rows)
    spec = dict(job.agent)
    record = {}
    if files.image_info is not None:
        record = json.loads(Path(files.image_info).read_text(encoding="utf-8"))
        spec["image"] = record["image"]
    env = dict(os.environ if environ is None else environ)
    if "kind" in tasks and tasks["kind"].eq("environment").any():
        from evalnoise.runner.environment import EnvironmentBackend

        if job.backend != "docker":
            raise ValueError(f"environment tasks run on the docker backend, not {job.backend!r}")
        from evalnoise.runner.trial_network import NetworkChoice

        network = NetworkChoice(**job.network) if job.network else NetworkChoice()
        runner: Any = EnvironmentBackend(
            base=record.get("base"),
            reward_key=job.reward_key,
            network=network,
            tampered_environment=job.tampered_environment,
        )
    else:
        runner = make_backend(job.backend)
    lazy = None
    if job.server is not None:
        lazy = LazyServer(job.server, files.server_log)
        env[RUNTIME_URL_VAR] = lazy.base_url
        runner = _ServedBackend(runner, lazy)
    try:
        result = run_shard(
            tasks=tasks,
            agent=spec,
            resource_profile_spec=dict(job.resource_profile),
            trials=list(job.trials),
            run_seed=job.run_seed,
            policy=dict(job.infra_policy),
            backend=runner,
            journal_path=files.journal,
            output_path=files.output,
            concurrency=job.concurrency,
            shard_id=default_shard_id(files.journal),
            progress=False,
            environ=env,
            variant=job.variant,
            actions_path=files.actions,
        )
    finally:
        if lazy is not None:
            lazy.stop()
    unverified = _last_statuses(files.output).count("verifier_error")
    if unverified:
        count = reruns.add_verifier_rerun(files.output)
        log.warning(
            "%d trials have no verdict from their verifier (verifier_error): they have no "
            "score, are flagged in every output, and a plain rerun runs them again. Rerun %d.",
            unverified,
            count,
        )
    log.info(
        "%s: %d rows for %d trials (%d attempts run now, %d resumed) %s in %.1fs%s",
        files.output,
        result.rows,
        result.trials,
        result.ran,
        result.resumed,
        json.dumps(result.statuses),
        result.seconds,
        "" if lazy is None else f"; model server started {lazy.starts} time(s)",
    )
    return ShardRun(result, lazy.starts if lazy else 0, lazy.base_url if lazy else None)


def _last_statuses(shard: str | os.PathLike[str]) -> list[str]:
    """The status of every trial's last attempt in a trial shard."""
    frame = pq.read_table(shard, columns=["task_id", "trial", "attempt", "status"]).to_pandas()
    frame = frame.sort_values(["task_id", "trial", "attempt"], kind="mergesort")
    return frame.drop_duplicates(["task_id", "trial"], keep="last")["status"].tolist()


def _judge(
    judge: Mapping[str, Any],
    server: LazyServer | None,
    cache_path: str | os.PathLike[str] | None,
    numeric: Mapping[str, Any] | None = None,
) -> Any:
    """The judge of one spec (:func:`evalnoise.pipeline.judges.judge_specs`; a
    ``scorer.judge`` section means its first judge): a
    :class:`evalnoise.scorers.rule_judge.RuleJudge` for a ``rule``, else an
    :class:`evalnoise.scorers.LLMJudge` of the judge's ``base_url`` or of the managed
    ``server``, which starts when the first verdict not in the cache is asked for. Numbers
    are compared with the numeric scorer's options ``numeric``. The managed server's process
    check lets the client fail every remaining call at once when the server died
    (:class:`evalnoise.models.ChatClient`).
    """
    from evalnoise.models import ChatClient
    from evalnoise.pipeline.judges import primary_judge
    from evalnoise.scorers import DEFAULT_TEMPLATE, LLMJudge
    from evalnoise.scorers.rule_judge import RuleJudge

    judge = primary_judge(judge)
    options = {k: v for k, v in dict(numeric or {}).items() if k in ("rel_tol", "abs_tol")}
    if judge.get("rule"):
        return RuleJudge(judge["rule"], numeric_options=options)
    mode = judge.get("mode", "verdict")
    template = DEFAULT_TEMPLATE
    if judge["template"]:
        template = Path(judge["template"]).read_text(encoding="utf-8")
    managed = server if not judge["base_url"] else None
    client = ChatClient(
        base_url=judge["base_url"] or (server.base_url if server else None),
        model=judge["model"] or (server.model if server else None),
        api_key_env=judge["api_key_env"],
        max_tokens=judge["max_tokens"],
        alive=managed.alive if managed else None,
        connect=managed.ensure if managed else None,
    )
    return LLMJudge(
        client,
        template=template,
        cache=cache_path,
        samples=judge["samples"],
        sample_temperature=judge["temperature"],
        seed=judge["seed"],
        max_tokens=judge["max_tokens"],
        mode=mode,
        structured=judge.get("structured", "auto"),
        numeric_options=options,
    )


def score_shard(
    *,
    trials_path: str | os.PathLike[str],
    tasks_path: str | os.PathLike[str],
    scorer: Mapping[str, Any],
    output: str | os.PathLike[str],
    server: Mapping[str, Any] | None = None,
    server_log: str | os.PathLike[str] | None = None,
    judge_cache: str | os.PathLike[str] | None = None,
) -> pa.Table:
    """Score a trial shard with ``scorer`` (the config's scorer section) and write the
    SCORES table atomically. The judge's verdicts are cached in ``judge_cache``.

    Trials the judge could not score (``judge_error``) are logged with their count and
    raise the shard's :func:`evalnoise.pipeline.reruns.judge_reruns`, so a plain
    rerun retries exactly those trials."""
    from evalnoise.scorers import score_trials

    trials = pq.read_table(trials_path)
    tasks = pd.read_parquet(tasks_path)
    name = scorer["name"]
    if name == "judge":
        from evalnoise.pipeline.judges import primary_judge

        spec = primary_judge(scorer["judge"])
        # a rule judge needs no model server; a judge with a URL, none of ours
        managed = None if spec.get("rule") or spec.get("base_url") else server
        lease = JUDGE_SERVERS.lease(managed, server_log) if managed else contextlib.nullcontext()
        with lease as running:
            judge = _judge(spec, running, judge_cache, scorer.get("numeric"))
            try:
                table = score_trials(trials, tasks, "judge", judge=judge)
            finally:
                judge.close()
            log.info("judge %s: %d calls reached the model", spec.get("name", ""), judge.calls)
    else:
        options = dict(scorer.get(name) or {})
        table = score_trials(trials, tasks, name, options=options)
    with atomic_path(output) as tmp:
        pq.write_table(table, tmp)
    failed = table.column("judge_status").to_pylist().count("judge_error")
    if failed:
        count = reruns.add_judge_rerun(output)
        log.warning(
            "%d of %d trials unscored (judge_error): they count nowhere and are flagged in "
            "every output; a plain rerun judges exactly those again (the cache keeps the "
            "rest). Unjudged rerun %d of this shard.",
            failed,
            table.num_rows,
            count,
        )
    return table
