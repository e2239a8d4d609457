"""Harbor job folders (``harbor run`` / ``harbor job start``; the Terminal-Bench 2.0 harness).

Layout, as Harbor 0.25 writes it (``harbor/job.py``, ``harbor/models/trial/paths.py``): a job
folder ``JOB/`` holds ``config.json`` (the JobConfig), ``result.json`` (a JobResult:
``n_total_trials``, ``stats``, optionally ``trial_results``) and one folder per trial,
``JOB/<task name[:32]>__<7 random chars>/``, with ``config.json`` (the TrialConfig, written
when the trial starts) and ``result.json`` (a TrialResult, ``harbor/models/trial/result.py``,
written once the trial has ended). A retried trial's folder is deleted before the retry, so
every ``result.json`` is the final attempt of one trial. A TrialResult has ``id``,
``task_name``, ``trial_name``, ``source``, ``agent_info {name, version, model_info {name,
provider}}``, ``agent_result {n_input_tokens (including cached), n_cache_tokens,
n_output_tokens, cost_usd}``, ``verifier_result {rewards: {name: number}}``,
``exception_info {exception_type, exception_message, occurred_at}``, ``started_at``,
``finished_at``, the phase timings ``environment_setup``, ``agent_setup``,
``agent_execution``, ``verifier`` (each ``{started_at, finished_at}``) and, for multi-step
tasks, ``step_results`` (each with its own ``agent_result``, ``verifier_result``,
``exception_info`` and timings).

What is read (:func:`evalnoise.importers.harbor_job_files.find_results`): a trial's
``result.json`` given as a file; a trial folder; a job folder (its trial folders; a trial
folder without ``result.json`` is a trial that never finished: counted as
``unfinished_trials``, not imported); any folder holding job folders. Only when a job folder
has no finished trial folder are the ``trial_results`` embedded in its ``result.json`` read
instead. A job that holds fewer trials than it declared (``n_total_trials``: a job killed
before all its trials were written) is *incomplete*, and a folder of the tree that holds no
Harbor trial or job is *not a trial*: each is said in one line of the import's ``warnings``
(printed by ``evalnoise import`` and ``evalnoise analyze``), never skipped silently.

Mapping, per trial:

- ``task_id`` = ``task_name``; the agent is ``agent_info.name``, plus ``__<model_info.name>``
  when a model is named (Harbor's own key, ``JobStats.format_agent_evals_key``), or ``--agent``.
- ``score`` = the reward named by the ``reward`` option (default: ``reward`` when every trial
  with rewards has it, else the only name they use) from ``verifier_result.rewards``; it must
  be in [0, 1]. No rewards → no score (null), never 0. All rewards are kept as JSON text in
  the ``rewards`` column.
- a trial whose agent failed (status ``timeout`` or ``agent_error``, below) but whose
  verifier then left its rewards is decided by them, as Harbor's mean decides it: status
  ``ok``, the agent's failure kept in ``verified_after`` (:mod:`evalnoise.verified_after`).
- ``status`` from ``exception_info.exception_type`` (for multi-step trials, the first
  exception recorded, the trial's then the steps', as Harbor's ``failure_cause`` does):
  :data:`STATUS_OF_EXCEPTION`, one table drawn from Harbor's own taxonomy
  (``harbor/models/trial/error_policy.py``, ``harbor/trial/errors.py``). An exception type
  not in the table gets the status of the phase it happened in (:data:`STATUS_OF_PHASE`:
  the last phase that had started by ``exception_info.occurred_at``, see :func:`_phase_of`)
  and is counted under ``unclassified_exception_types``. The exception type is kept in
  ``error``, its message in ``exception_message``, the phase in ``error_phase``.
- ``prompt_tokens`` = ``n_input_tokens`` (Harbor counts cached tokens in it),
  ``completion_tokens`` = ``n_output_tokens``; ``cache_tokens`` and ``cost_usd`` extra
  columns (for multi-step trials, summed over the steps as Harbor does).
- ``started_at``/``ended_at``/``duration_s`` from ``started_at``/``finished_at``; each phase's
  seconds in ``environment_setup_s``, ``agent_setup_s``, ``agent_execution_s``,
  ``verifier_s``. A timestamp without a zone (Harbor 0.1.2 wrote local times so) is read as
  UTC; an exception's ``occurred_at`` without a zone beside phase times with one (Harbor
  0.6–0.25 wrote it as local time) is placed by :func:`_local_offset`.

Verifier failures get :data:`VERIFIER_ERROR`, the trial table's ``verifier_error``: no score,
never a 0, counted and flagged like an unscored trial.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pyarrow as pa

from evalnoise.harbor_exceptions import GROUPS as _GROUPS
from evalnoise.harbor_exceptions import STATUS_OF_EXCEPTION, VERIFIER_ERROR
from evalnoise.importers._trial_records import (
    Trial,
    Where,
    check_score,
    parse_timestamp,
    path_key,
)
from evalnoise.importers.harbor_job_files import FoundResults, find_results
from evalnoise.schema import VERIFIED_AFTER

FORMAT = "harbor"
OPTIONS = ("agent", "reward")

#: The trial's phases, in order (TrialResult fields holding ``{started_at, finished_at}``).
PHASES = ("environment_setup", "agent_setup", "agent_execution", "verifier")

#: Status of an exception type the table does not know, by the phase it happened in
#: (``None``: before any phase started, e.g. while Harbor loaded the task). Anything else
#: raised once the agent's phase has started is the agent's (as Terminal-Bench's
#: ``unknown_agent_error``), unless the verifier had started.
STATUS_OF_PHASE: dict[str | None, str] = {
    "environment_setup": "infra_error",
    "agent_setup": "infra_error",
    "agent_execution": "agent_error",
    "verifier": VERIFIER_ERROR,
    None: "infra_error",
}
_PHASE_NAMES = {None: "before any phase"}

DEFAULT_REWARD = "reward"
_MESSAGE_CHARS = 2000

EXTRA_TYPES = {
    "trial_name": pa.string(),
    "job": pa.string(),
    "source": pa.string(),
    "model": pa.string(),
    "agent_version": pa.string(),
    "rewards": pa.string(),
    "exception_message": pa.string(),
    "error_phase": pa.string(),
    "cache_tokens": pa.int64(),
    "cost_usd": pa.float64(),
    **{f"{phase}_s": pa.float64() for phase in PHASES},
}


def _status_rule() -> str:
    parts = [f"{', '.join(names)} → {status} ({why})" for status, why, names in _GROUPS]
    phases = ", ".join(f"{_PHASE_NAMES.get(p, p)} → {s}" for p, s in STATUS_OF_PHASE.items())
    return (
        "no exception_info → ok; else exception_info.exception_type (multi-step: the first "
        "recorded, trial then steps): "
        + "; ".join(parts)
        + "; any other type by the phase the trial was in (the last phase that had started "
        f"by exception_info.occurred_at): {phases}. The type is kept in `error`, the phase "
        "in `error_phase`. A timeout or agent_error whose verifier then left its rewards → "
        "ok, decided by them as Harbor's mean decides it, the failure kept in `verified_after`"
    )


RULES = {
    "rule": (
        "within (agent, task_id), trials are numbered from 0 in the order of their "
        "started_at (trials without one last), ties broken by the result file's path in "
        "natural sort order — digit runs compared as numbers — then the record's place in "
        "a job result's trial_results"
    ),
    "agent_rule": (
        "the --agent option if given; else agent_info.name, plus '__' and "
        "agent_info.model_info.name when a model is named (Harbor's own key for an agent "
        "and model, JobStats.format_agent_evals_key)"
    ),
    "score_rule": (
        "score = verifier_result.rewards[KEY], KEY the --reward option, else 'reward' "
        "when every trial with rewards names it, else the one name all of them use; "
        "no rewards → null (never 0); all rewards kept as JSON in `rewards`"
    ),
    "status_rule": _status_rule(),
    "task_rule": "task_id = task_name",
}


# --- reading one trial --------------------------------------------------------------------


def _obj(record: dict, key: str, where: Where, field: str) -> dict | None:
    value = record.get(key)
    if value is None:
        return None
    if not isinstance(value, dict):
        raise where.error(f"expected an object or null, got {value!r}", field)
    return value


def _text(record: dict, key: str, where: Where, field: str, *, required: bool) -> str | None:
    if key not in record or record[key] is None:
        if required:
            raise where.error("field is missing", field)
        return None
    value = record[key]
    if not isinstance(value, str) or (required and not value.strip()):
        raise where.error(f"expected a non-empty string, got {value!r}", field)
    return value


def _count(record: dict | None, key: str, where: Where, field: str) -> int | None:
    value = None if record is None else record.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise where.error(f"expected a non-negative integer or null, got {value!r}", field)
    return value


def _money(record: dict | None, key: str, where: Where, field: str) -> float | None:
    value = None if record is None else record.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise where.error(f"expected a number or null, got {value!r}", field)
    return float(value)


def _timing(
    record: dict, phase: str, where: Where, prefix: str
) -> tuple[datetime | None, datetime | None]:
    timing = _obj(record, phase, where, prefix + phase)
    if timing is None:
        return None, None
    start = parse_timestamp(timing.get("started_at"), where, f"{prefix}{phase}.started_at")
    end = parse_timestamp(timing.get("finished_at"), where, f"{prefix}{phase}.finished_at")
    return start, end


def _seconds(start: datetime | None, end: datetime | None) -> float | None:
    return (end - start).total_seconds() if start is not None and end is not None else None


def _rewards(record: dict, where: Where, prefix: str) -> dict[str, float] | None:
    verifier = _obj(record, "verifier_result", where, prefix + "verifier_result")
    if verifier is None:
        return None
    field = prefix + "verifier_result.rewards"
    rewards = verifier.get("rewards")
    if rewards is None:
        return None
    if not isinstance(rewards, dict):
        raise where.error(f"expected an object of named numbers or null, got {rewards!r}", field)
    out: dict[str, float] = {}
    for name, value in rewards.items():
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise where.error(f"reward {name!r} is not a number: {value!r}", field)
        if not math.isfinite(value):
            raise where.error(f"reward {name!r} is not finite: {value!r}", field)
        out[str(name)] = float(value)
    return out or None


def _exceptions(record: dict, where: Where) -> list[tuple[dict, dict, str]]:
    """Recorded exceptions, the trial's then each step's, as (info, its record, field prefix)."""
    out = []
    info = _obj(record, "exception_info", where, "exception_info")
    if info is not None:
        out.append((info, record, ""))
    steps = record.get("step_results")
    if steps is not None and not isinstance(steps, list):
        raise where.error(f"expected a list or null, got {steps!r}", "step_results")
    for i, step in enumerate(steps or []):
        prefix = f"step_results[{i}]."
        if not isinstance(step, dict):
            raise where.error(f"expected an object, got {step!r}", prefix.rstrip("."))
        info = _obj(step, "exception_info", where, prefix + "exception_info")
        if info is not None:
            out.append((info, step, prefix))
    return out


def _has_zone(value: Any) -> bool:
    """Whether a timestamp string carries its UTC offset (``Z`` or ``±hh:mm``)."""
    text = value.strip() if isinstance(value, str) else ""
    return text.endswith("Z") or (len(text) > 19 and ("+" in text[19:] or "-" in text[19:]))


def _phase_of(info: dict, holder: dict, where: Where, prefix: str) -> str | None:
    """The phase the trial was in when the exception was recorded.

    The last phase (in :data:`PHASES` order) that had started by ``occurred_at``: Harbor stops
    a phase's clock in a ``finally`` and records the exception just after
    (``benchmarks/results/comment-measurements.md``), so the phase that raised has always
    finished by then. Harbor 0.6 to 0.25 wrote
    ``occurred_at`` in local time without a zone (``ExceptionInfo.from_exception``:
    ``datetime.now()``) beside phase times in UTC (``datetime.now(timezone.utc)``); such a
    stamp is first moved to UTC by the local clock's offset (:func:`_local_offset`). When
    that offset cannot be found, the phase is the last one that started at all (an exception
    the table does not know ends the trial in the phase that raised it). None: no phase had
    started.
    """
    raw = info.get("occurred_at")
    occurred = parse_timestamp(raw, where, prefix + "exception_info.occurred_at")
    starts: list[tuple[str, datetime, Any]] = []
    ends: list[datetime] = []
    for phase in PHASES:
        timing = _obj(holder, phase, where, prefix + phase) or {}
        start, end = _timing(holder, phase, where, prefix)
        if start is not None:
            starts.append((phase, start, timing.get("started_at")))
        if end is not None and _has_zone(timing.get("finished_at")):
            ends.append(end)
    if not starts:
        return None
    comparable = occurred is not None and all(
        _has_zone(text) == _has_zone(raw) for _, _, text in starts
    )
    if occurred is not None and not comparable and not _has_zone(raw):
        span = (
            parse_timestamp(holder.get("started_at"), where, prefix + "started_at"),
            parse_timestamp(holder.get("finished_at"), where, prefix + "finished_at"),
        )
        offset = _local_offset(occurred, ends, span)
        if offset is not None:
            occurred, comparable = occurred - offset, True
    if not comparable:
        return starts[-1][0]
    current = None
    for phase, start, _ in starts:
        if start <= occurred:  # type: ignore[operator]
            current = phase
    return current


#: UTC offsets a local clock can have: every time zone's is a multiple of 15 minutes, from
#: −12:00 to +14:00
_OFFSET_STEP = timedelta(minutes=15)
_OFFSETS = tuple(k * _OFFSET_STEP for k in range(-48, 57))
#: how far a trial's exception may be recorded from the end of the phase that raised it,
#: when the trial's own span cannot single out the local clock's offset
_RECORD_SLACK = timedelta(seconds=60)


def _local_offset(
    occurred: datetime,
    phase_ends: list[datetime],
    span: tuple[datetime | None, datetime | None],
) -> timedelta | None:
    """The UTC offset of the local clock a zone-less ``occurred_at`` was written by (read as
    if it were UTC: ``occurred``), or None when it cannot be told.

    Harbor records an exception just after the clock of the phase that raised it stops
    (:func:`_phase_of`), and the trial's ``started_at``/``finished_at`` (``span``, UTC)
    enclose it. Of the offsets a zone can have (:data:`_OFFSETS`, multiples of 15 minutes)
    those that put ``occurred − offset`` inside the span (±1 minute) are candidates; a trial
    shorter than 15 minutes leaves one. Among several, the one that puts the stamp nearest a
    phase's end (``phase_ends``, UTC) wins; without a span, only when that is within
    :data:`_RECORD_SLACK` of a phase's end."""
    start, end = span
    margin = timedelta(minutes=1)
    candidates = [
        d
        for d in _OFFSETS
        if (start is None or occurred - d >= start - margin)
        and (end is None or occurred - d <= end + margin)
    ]
    if start is None or end is None:
        candidates = [
            d for d in candidates if any(abs(occurred - d - e) <= _RECORD_SLACK for e in phase_ends)
        ]
    if not candidates:
        return None
    if len(candidates) == 1:
        return candidates[0]
    if not phase_ends:
        return None
    return min(candidates, key=lambda d: min(abs(occurred - d - e) for e in phase_ends))


def _usage(record: dict, where: Where) -> tuple[int | None, int | None, int | None, float | None]:
    """(input, cache, output tokens, cost): ``agent_result``, else the steps' summed, as
    Harbor's ``TrialResult.compute_token_cost_totals``."""
    contexts: list[tuple[dict, str]] = []
    agent = _obj(record, "agent_result", where, "agent_result")
    if agent is not None:
        contexts = [(agent, "agent_result.")]
    else:
        for i, step in enumerate(record.get("step_results") or []):
            ctx = _obj(step, "agent_result", where, f"step_results[{i}].agent_result")
            if ctx is not None:
                contexts.append((ctx, f"step_results[{i}].agent_result."))
    totals: list[int | float | None] = [None, None, None, None]
    for ctx, prefix in contexts:
        values = (
            _count(ctx, "n_input_tokens", where, prefix + "n_input_tokens"),
            _count(ctx, "n_cache_tokens", where, prefix + "n_cache_tokens"),
            _count(ctx, "n_output_tokens", where, prefix + "n_output_tokens"),
            _money(ctx, "cost_usd", where, prefix + "cost_usd"),
        )
        for k, v in enumerate(values):
            if v is not None:
                totals[k] = (totals[k] or 0) + v
    n_in, n_cache, n_out, cost = totals
    return n_in, n_cache, n_out, cost  # type: ignore[return-value]


def _agent_name(record: dict, where: Where) -> tuple[str, str | None, str | None]:
    """(agent key, model as provider/name, agent version)."""
    info = _obj(record, "agent_info", where, "agent_info")
    if info is None:
        raise where.error("field is missing", "agent_info")
    name = _text(info, "name", where, "agent_info.name", required=True)
    version = info.get("version")
    model_info = _obj(info, "model_info", where, "agent_info.model_info")
    model_name = provider = None
    if model_info is not None:
        model_name = _text(model_info, "name", where, "agent_info.model_info.name", required=True)
        provider = _text(
            model_info, "provider", where, "agent_info.model_info.provider", required=False
        )
    key = f"{name}__{model_name}" if model_name else str(name)
    model = f"{provider}/{model_name}" if provider and model_name else model_name
    return key, model, None if version is None else str(version)


class _Parsed:
    """One trial result, checked, before the reward to score is chosen."""

    def __init__(self, trial: Trial, rewards: dict[str, float] | None, trial_id: str | None):
        self.trial = trial
        self.rewards = rewards
        self.trial_id = trial_id


def _job_name(path: Path, index: int | None) -> str:
    # a trial's result.json sits in JOB/<trial>/; an embedded record in JOB/result.json
    folder = path.resolve().parent if index is not None else path.resolve().parent.parent
    return folder.name


def _parse(path: Path, index: int | None, record: Any, unclassified: dict[str, int]) -> _Parsed:
    label = f"trial_results[{index}]" if index is not None else ""
    where = Where(str(path), None if index is None else index + 1, label)
    if not isinstance(record, dict):
        raise where.error(f"expected a TrialResult object, got {type(record).__name__}")
    task = _text(record, "task_name", where, "task_name", required=True)
    trial_name = _text(record, "trial_name", where, "trial_name", required=True)
    agent, model, version = _agent_name(record, where)
    started = parse_timestamp(record.get("started_at"), where, "started_at")
    ended = parse_timestamp(record.get("finished_at"), where, "finished_at")
    if started is not None and ended is not None and ended < started:
        raise where.error(
            f"finished_at is before started_at ({started.isoformat()})", "finished_at"
        )
    rewards = _rewards(record, where, "")

    status, error, message, phase = "ok", None, None, None
    recorded = _exceptions(record, where)
    if recorded:
        info, holder, prefix = recorded[0]
        error = _text(
            info, "exception_type", where, prefix + "exception_info.exception_type", required=True
        )
        raw_message = info.get("exception_message")
        message = None if raw_message is None else str(raw_message)[:_MESSAGE_CHARS]
        phase = _phase_of(info, holder, where, prefix)
        if error in STATUS_OF_EXCEPTION:
            status = STATUS_OF_EXCEPTION[error]
        else:
            status = STATUS_OF_PHASE[phase]
            unclassified[error] = unclassified.get(error, 0) + 1

    n_in, n_cache, n_out, cost = _usage(record, where)
    extra: dict[str, Any] = {
        "prompt_tokens": n_in,
        "completion_tokens": n_out,
        "trial_name": trial_name,
        "job": _job_name(path, index),
        "source": record.get("source") if isinstance(record.get("source"), str) else None,
        "model": model,
        "agent_version": version,
        "rewards": None if rewards is None else json.dumps(rewards, sort_keys=True),
        "exception_message": message,
        "error_phase": phase,
        "cache_tokens": n_cache,
        "cost_usd": cost,
    }
    for p in PHASES:
        extra[f"{p}_s"] = _seconds(*_timing(record, p, where, ""))
    order_time = started.timestamp() if started is not None else math.inf
    trial = Trial(
        agent=agent,
        task_id=str(task),
        order=(order_time, path_key(path.resolve()), -1 if index is None else index),
        where=where,
        status=status,
        error=error,
        duration_s=_seconds(started, ended),
        started_at=started,
        ended_at=ended,
        extra=extra,
    )
    trial_id = record.get("id")
    return _Parsed(trial, rewards, trial_id if isinstance(trial_id, str) else None)


def _choose_reward(parsed: list[_Parsed], reward: str | None) -> str | None:
    """The reward name that scores (see RULES['score_rule']); None when no trial has one."""
    with_rewards = [p for p in parsed if p.rewards]
    if reward is not None:
        return reward
    if not with_rewards:
        return None
    if all(DEFAULT_REWARD in p.rewards for p in with_rewards):  # type: ignore[operator]
        return DEFAULT_REWARD
    names = sorted({name for p in with_rewards for name in p.rewards})  # type: ignore[union-attr]
    if len(names) == 1:
        return names[0]
    lacking = next(p for p in with_rewards if DEFAULT_REWARD not in p.rewards)  # type: ignore[operator]
    raise lacking.trial.where.error(
        f"no reward named {DEFAULT_REWARD!r} (this trial has: "
        f"{', '.join(sorted(lacking.rewards))}; the trials name {', '.join(names)}): "  # type: ignore[arg-type]
        "choose the one that scores with --reward",
        "verifier_result.rewards",
    )


def read(
    paths: list[str | Path], *, agent: str | None = None, reward: str | None = None
) -> tuple[list[Trial], dict]:
    found = find_results(paths)
    unclassified: dict[str, int] = {}
    parsed = [_parse(path, index, rec, unclassified) for path, index, rec in found.records]
    ids: dict[str, Where] = {}
    for p in parsed:
        if p.trial_id is None:
            continue
        if p.trial_id in ids:
            other = ids[p.trial_id]
            raise p.trial.where.error(
                f"the same trial (id {p.trial_id}) is also in {other.path}: a copied job or "
                "trial folder; import only one of them",
                "id",
            )
        ids[p.trial_id] = p.trial.where
    key = _choose_reward(parsed, reward)
    exception_types: dict[str, int] = {}
    trials: list[Trial] = []
    for p in parsed:
        t = p.trial
        if p.rewards:
            if key not in p.rewards:
                raise t.where.error(
                    f"no reward named {key!r} (this trial has: {', '.join(sorted(p.rewards))})",
                    "verifier_result.rewards",
                )
            t.score = check_score(p.rewards[key], t.where, f"verifier_result.rewards.{key}")
            if t.status in VERIFIED_AFTER:
                # the verifier decided after the agent failed: Harbor's mean counts it
                t.extra["verified_after"], t.status = t.status, "ok"
        if agent is not None:
            t.agent = agent
        if t.error is not None:
            exception_types[t.error] = exception_types.get(t.error, 0) + 1
        trials.append(t)
    sources = list(dict.fromkeys(str(path) for path, _, _ in found.records))
    extra = {
        "files": len(sources),
        "reward": key,
        "jobs": found.jobs,
        "unfinished_trials": len(found.unfinished),
        "unfinished_trial_folders": found.unfinished,
        "no_reward": sum(1 for p in parsed if not p.rewards),
        "exception_types": dict(sorted(exception_types.items())),
        "unclassified_exception_types": dict(sorted(unclassified.items())),
        "verified_after": dict(
            sorted(
                Counter(
                    str(t.extra["verified_after"]) for t in trials if t.extra.get("verified_after")
                ).items()
            )
        ),
        "not_trials": found.not_trials,
    }
    return trials, {
        "rules": RULES,
        "counts": extra,
        "sources": sources,
        "extra_types": EXTRA_TYPES,
        "warnings": import_warnings(found),
    }


def import_warnings(found: FoundResults) -> list[str]:
    """One line per job that holds fewer trials than it declared (``n_total_trials``: killed
    before all its trials were written), and one line naming the folders that hold no Harbor
    trial: what an import must never leave to its Parquet metadata alone."""
    lines = []
    for job in found.jobs:
        declared, read = job.get("n_total_trials"), int(job.get("trials_read") or 0)
        if isinstance(declared, bool) or not isinstance(declared, int) or read >= declared:
            continue
        unfinished = int(job.get("unfinished_trials") or 0)
        lines.append(
            f"incomplete Harbor job {job['job']}: {declared} trials declared, {read} found "
            f"({unfinished} started but never finished, {declared - read - unfinished} never "
            "started): the job was stopped before all its trials were written"
        )
    if found.not_trials:
        lines.append(
            f"not Harbor trials (no trial or job result.json), skipped: "
            f"{', '.join(found.not_trials)}"
        )
    return lines
