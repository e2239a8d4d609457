"""One shard of trials: agent × resource profile × block of trial indices × chunk of tasks.

:func:`run_shard` runs every (task, trial) of the shard through a backend with bounded
concurrency (threads) and a tqdm progress bar on stderr, and is safe to kill at any moment.
It hands the thread pool at most :func:`in_flight_limit` attempts at a time, so the cost of a
trial does not grow with the number of trials in the shard.

- **Journal.** Each finished trial attempt is appended to the shard's journal as one JSON
  line, written, flushed and fsynced before it counts. The first line is a header naming
  what the rows depend on (agent spec, resource profile, run seed, backend, and the variant's
  identity when the shard runs a prompt or sampling variant); a journal whose
  header differs is moved aside (``<journal>.superseded-<UTC time>``), never mixed in.
  Each row also carries a fingerprint of its task's spec, so a changed task is rerun.
- **Variant.** A shard runs one variant (:class:`evalnoise.runner.variant.TrialVariant`,
  None without variants): every agent gets the task's question rendered with its template,
  its key enters every trial's seed and the shard's order, and its labels fill the rows'
  ``prompt_variant`` and ``sampling`` as the file is written (from the shard's plan, like
  ``time_block``: a renamed level relabels resumed rows). The task fingerprint is the
  task's own, never the rendered question's.
- **Resume.** On start the journal is read (a torn last line — a write cut by SIGKILL — is
  cut off), finished trials are skipped, and a trial whose last attempt the infra policy
  wants retried continues with the next attempt, and so does a trial whose last attempt
  was a ``verifier_error`` (the grader failed: each run of the shard tries it once more).
  A shard killed with SIGKILL and run again
  ends with exactly one row per (task, trial, attempt): none lost, none duplicated. A trial
  that ended ``infra_error`` while the engine itself stopped answering is not journaled: the
  shard stops with :class:`EngineUnavailable` and a resume runs it again (the harness
  failed, the trial has no outcome).
- **Order.** The (task, trial) pairs run in the shard's seeded random order
  (:func:`evalnoise.runner.seeds.trial_order`: keyed by the run seed, agent, resource
  profile, task and trial — never by paths or the shard id, so every checkout and every
  resume has the same order), not task by task: a drift over the shard's run spreads over
  its tasks and trials instead of lining up with them. A resumed run starts what the
  journal lacks in that same order; a retry is queued when its failed attempt ends. The
  order never feeds a trial's seed, so results do not depend on it.
- **Leftovers.** An exclusive lock (``<journal>.lock``) keeps two runs of one shard apart;
  holding it, the run removes containers / processes / scratch dirs that a killed run of the
  same shard left behind (containers are labelled ``evalnoise.shard=<shard id>``).
- **Output.** When every trial is finished, the Parquet file (schema
  :data:`evalnoise.schema.TRIALS`) is written atomically (:mod:`evalnoise.atomic`: a temp
  file in the same directory, fsync, ``os.replace``). Rows are sorted by (task_id, trial,
  attempt); ``time_block`` (the block's first trial index) and ``run_order`` (the trial's
  place in the shard's order) are filled in from the shard's plan as the file is written,
  also for rows resumed from the journal. The trials' actions (a row's ``actions``: the
  commands an external agent's runner executed, a QA agent's reported trajectory;
  :mod:`evalnoise.runner.actions`) are journaled with their row and, with ``actions_path``,
  written beside it as their own table (:data:`evalnoise.schema.ACTIONS`, sorted by task,
  trial, attempt and step), never as a column of the trials.

The infra policy's ``retry`` is carried out here (every attempt kept as its own row); how
infra outcomes then count toward accuracy is
:func:`evalnoise.runner.infra_policies.apply_infra_policy`.
"""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import fcntl
import hashlib
import json
import os
import re
import sys
import time
from collections import Counter, deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from evalnoise.atomic import atomic_path
from evalnoise.runner.actions import actions_table
from evalnoise.runner.contract import AgentSpec, agent_spec
from evalnoise.runner.infra_policies import InfraPolicy, infra_policy, should_retry
from evalnoise.runner.resources import ResourceProfile, allocate, resource_profile
from evalnoise.runner.seeds import order_seed, trial_order, trial_seed
from evalnoise.runner.trial import Backend, EngineUnavailable, TrialRequest
from evalnoise.runner.variant import TrialVariant, trial_variant
from evalnoise.schema import TASKS, TRIALS, conform

JOURNAL_VERSION = 1
_TIMESTAMP_COLUMNS = ("started_at", "ended_at")
_TASK_SPEC_COLUMNS = ("question", "level", "cpus", "memory_mb", "time_limit_s")
_ENVIRONMENT_SPEC_COLUMNS = ("task_digest", "verifier_time_limit_s")
#: columns only environment tasks fill (a question task's table may lack them)
_OPTIONAL_TASK_COLUMNS = ("kind", "task_dir", "verifier_time_limit_s", "task_digest")
_FINGERPRINT = "_task_fingerprint"
#: No dots: scratch dirs and cgroups are named "<shard id>.<uid>", and cleanup globs on it.
_SHARD_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


@dataclass
class ShardResult:
    output_path: Path
    rows: int
    trials: int
    ran: int
    resumed: int
    statuses: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0


@dataclass(frozen=True)
class ShardRequest:
    """What one run of a shard needs besides its backend and journal: the tasks, the agent,
    the resource profile, the block of trial indices, the seeds' root, the infra policy and
    where the output goes. Built by :func:`run_shard` once every input is validated.
    """

    #: the tasks' records (``answer`` removed), each with a str ``task_id``
    tasks: tuple[Mapping[str, Any], ...]
    agent: AgentSpec
    resource_profile: ResourceProfile
    #: the trial indices, sorted and distinct
    trials: tuple[int, ...]
    run_seed: int
    policy: InfraPolicy
    shard_id: str
    output_path: Path
    #: values of the agent's secret_env; never recorded (see :class:`TrialRequest`)
    secrets: Mapping[str, str] = field(default_factory=dict, repr=False)
    #: values of the agent's runtime_env
    runtime: Mapping[str, str] = field(default_factory=dict)
    concurrency: int = 1
    progress: bool = True
    #: the shard's prompt / sampling variant (None: a run without variants)
    variant: TrialVariant | None = None
    #: where the trials' actions go (:data:`evalnoise.schema.ACTIONS`; None: not written)
    actions_path: Path | None = None

    @property
    def variant_key(self) -> str:
        return self.variant.key if self.variant is not None else ""

    def trial_request(self, task: Mapping[str, Any], trial: int, attempt: int) -> TrialRequest:
        """The backend's request for one attempt of ``trial`` of ``task``; its seed depends
        on (run seed, agent, task, trial, variant) only, so every attempt of a trial shares
        it. The task's question is rendered with the variant's template."""
        if self.variant is not None and self.variant.template is not None:
            task = {**task, "question": self.variant.render(str(task["question"]))}
        return TrialRequest(
            agent=self.agent,
            task=task,
            resource_profile=self.resource_profile,
            trial=trial,
            attempt=attempt,
            seed=trial_seed(
                self.run_seed, self.agent.name, str(task["task_id"]), trial, self.variant_key
            ),
            shard_id=self.shard_id,
            secrets=self.secrets,
            runtime=self.runtime,
            variant=self.variant,
        )


def make_backend(name: str, **kwargs: Any) -> Backend:
    """``"docker"`` or ``"local"``."""
    if name == "docker":
        from evalnoise.runner.docker_backend import DockerBackend

        return DockerBackend(**kwargs)
    if name == "local":
        from evalnoise.runner.local_backend import LocalBackend

        return LocalBackend(**kwargs)
    raise ValueError(f"unknown backend {name!r}; expected 'docker' or 'local'")


def default_shard_id(output_path: str | os.PathLike[str]) -> str:
    """A short id derived from the shard's output path (unique per shard)."""
    return hashlib.sha256(str(Path(output_path).resolve()).encode()).hexdigest()[:12]


def _canonical(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def _plain(value: Any) -> Any:
    """A table cell as it goes into a journal line (:func:`evalnoise.formatting.jsonable`)."""
    from evalnoise.formatting import jsonable

    return jsonable(value)


def _task_fingerprint(task: Mapping[str, Any]) -> str:
    spec = {k: _plain(task.get(k)) for k in _TASK_SPEC_COLUMNS}
    # an environment task's folder (instruction, Dockerfile, tests, solution) is part of its
    # spec; a question task has none, and its fingerprint stays what it always was
    for key in _ENVIRONMENT_SPEC_COLUMNS:
        if _plain(task.get(key)) is not None:
            spec[key] = _plain(task.get(key))
    return hashlib.sha256(_canonical(spec).encode()).hexdigest()[:16]


# -- the journal ---------------------------------------------------------------------------


def _encode_row(row: Mapping[str, Any]) -> str:
    out = {}
    for key, value in row.items():
        if isinstance(value, datetime):
            value = value.astimezone(UTC).isoformat()
        out[key] = _plain(value)
    return json.dumps(out, sort_keys=True, ensure_ascii=False, allow_nan=False) + "\n"


def read_journal(
    path: str | os.PathLike[str], *, repair: bool = False
) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
    """``(header, rows)`` of a journal. A torn last line is ignored (and cut off if ``repair``).

    Any other unparseable line raises ``ValueError``: the journal is only ever appended
    whole lines, so that would be corruption, not a kill.
    """
    path = Path(path)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None, []
    complete = data.rfind(b"\n") + 1  # bytes up to and including the last newline
    records = []
    for number, line in enumerate(data[:complete].split(b"\n")[:-1], 1):
        if not line.strip():
            continue
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError:
            raise ValueError(f"{path}: line {number} is not JSON (corrupt journal)") from None
    if complete < len(data) and repair:
        with open(path, "r+b") as handle:
            handle.truncate(complete)
            os.fsync(handle.fileno())
    header = None
    if records and records[0].get("journal") == JOURNAL_VERSION:
        header = records.pop(0)
    return header, records


class _Journal:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    def append(self, line: str) -> None:
        data = line.encode("utf-8")
        while data:  # a regular file takes the whole write; loop only for safety
            written = os.write(self.fd, data)
            data = data[written:]
        os.fsync(self.fd)

    def close(self) -> None:
        os.close(self.fd)


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


# -- output --------------------------------------------------------------------------------


def rows_to_table(rows: Iterable[Mapping[str, Any]]) -> pa.Table:
    """Trial rows (dicts) as a :data:`TRIALS` table, sorted by (task_id, trial, attempt)."""
    rows = sorted(rows, key=lambda r: (r["task_id"], r["trial"], r["attempt"]))
    columns = {}
    for schema_field in TRIALS:
        values = [row.get(schema_field.name) for row in rows]
        if schema_field.name in _TIMESTAMP_COLUMNS:
            values = [datetime.fromisoformat(v) if isinstance(v, str) else v for v in values]
        columns[schema_field.name] = pa.array(values, type=schema_field.type)
    return conform(pa.table(columns), TRIALS)


def write_parquet_atomic(table: pa.Table, path: str | os.PathLike[str]) -> None:
    """Write ``table`` to ``path`` with :func:`evalnoise.atomic.atomic_path` (so its
    temporary is one :func:`evalnoise.atomic.is_temporary` knows), then fsync the directory:
    the shard's output must survive a crash once the run has reported it."""
    path = Path(path)
    with atomic_path(path) as tmp:
        pq.write_table(table, tmp)
    _fsync_dir(path.parent)


# -- the shard -----------------------------------------------------------------------------


def _tasks_records(tasks: Any, profile: ResourceProfile) -> list[dict[str, Any]]:
    frame = tasks
    missing = [
        f.name
        for f in TASKS
        if f.name not in frame.columns
        and f.name not in ("level", "sampling_seed", "answer", *_OPTIONAL_TASK_COLUMNS)
    ]
    if missing:
        raise ValueError(f"tasks table: missing columns {missing}")
    records = []
    for record in frame.to_dict("records"):
        record = {k: _plain(v) for k, v in record.items()}
        record.pop("answer", None)  # never handed to the agent
        record["task_id"] = str(record["task_id"])
        try:  # every task's resources must be usable before any trial starts
            allocate(record["cpus"], record["memory_mb"], record["time_limit_s"], profile)
        except (ValueError, TypeError) as exc:
            raise ValueError(f"tasks table: task {record['task_id']!r}: {exc}") from None
        records.append(record)
    ids = [r["task_id"] for r in records]
    if len(set(ids)) != len(ids):
        raise ValueError("tasks table: duplicate task_id")
    return records


def run_shard(
    tasks: Any,
    agent: AgentSpec | Mapping[str, Any],
    resource_profile_spec: ResourceProfile | Mapping[str, Any] | str,
    trials: Sequence[int],
    run_seed: int,
    policy: InfraPolicy | Mapping[str, Any] | str,
    backend: str | Backend,
    journal_path: str | os.PathLike[str],
    output_path: str | os.PathLike[str],
    *,
    concurrency: int = 1,
    shard_id: str | None = None,
    progress: bool = True,
    environ: Mapping[str, str] | None = None,
    variant: TrialVariant | Mapping[str, Any] | None = None,
    actions_path: str | os.PathLike[str] | None = None,
) -> ShardResult:
    """Run (or finish) one shard and write its Parquet file; see the module docstring.

    ``tasks``: a DataFrame with the TASKS columns (``answer`` is never passed on).
    ``agent``: an agent spec; ``resource_profile_spec``: a resource profile (name, mapping or
    object); ``trials``: the block of trial indices; ``policy``: the infra policy;
    ``backend``: ``"docker"``, ``"local"`` or a backend object; ``variant``: the shard's
    prompt / sampling variant (a :class:`TrialVariant` or its mapping; None without
    variants); ``actions_path``: where the trials' actions are written (module docstring,
    "Output"; None: not written). Secret values are read from
    ``environ`` (default ``os.environ``) for the names in the agent's ``secret_env``.
    Raises :class:`EngineUnavailable` (after journaling what finished) if the engine stops
    answering, and ``BlockingIOError`` if another process is running the same shard.
    """
    t_start = time.monotonic()
    spec = agent_spec(agent)
    profile = resource_profile(resource_profile_spec)
    policy = infra_policy(policy)
    shard_variant = trial_variant(variant)
    trial_indices = sorted({int(t) for t in trials})
    if not trial_indices:
        raise ValueError("run_shard: no trial indices")
    if concurrency < 1:
        raise ValueError("run_shard: concurrency must be >= 1")
    secrets = spec.secret_values(environ)
    runtime = spec.runtime_values(environ)
    task_records = _tasks_records(tasks, profile)
    journal_path, output_path = Path(journal_path), Path(output_path)
    shard_id = shard_id or default_shard_id(output_path)
    if not _SHARD_ID.match(shard_id):
        raise ValueError(f"shard id {shard_id!r}: use 1-64 of A-Z a-z 0-9 _ -")
    if isinstance(backend, str):
        options = {"max_pool_size": 2 * concurrency + 4} if backend == "docker" else {}
        backend_obj: Backend = make_backend(backend, **options)
    else:
        backend_obj = backend
    header = {
        "journal": JOURNAL_VERSION,
        "agent": spec.to_dict(),
        "resource_profile": profile.to_dict(),
        "run_seed": int(run_seed),
        "backend": backend_obj.name,
        # nothing for the neutral variant: its journal is that of a run without variants
        **(shard_variant.header() if shard_variant is not None else {}),
    }

    journal_path.parent.mkdir(parents=True, exist_ok=True)
    lock_handle = open(journal_path.with_name(journal_path.name + ".lock"), "w")
    try:
        try:
            fcntl.flock(lock_handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise BlockingIOError(
                f"{journal_path}: another process is running this shard"
            ) from None
        backend_obj.cleanup(shard_id)
        old_header, old_rows = read_journal(journal_path, repair=True)
        if old_header is not None and _canonical(old_header) != _canonical(header):
            stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
            aside = journal_path.with_name(f"{journal_path.name}.superseded-{stamp}")
            os.replace(journal_path, aside)
            print(
                f"evalnoise run-shard: {journal_path} was written for another configuration;"
                f" moved it to {aside.name} and starting fresh",
                file=sys.stderr,
            )
            old_header, old_rows = None, []
        elif old_header is None and old_rows:
            raise ValueError(f"{journal_path}: journal has rows but no header")
        journal = _Journal(journal_path)
        try:
            if old_header is None:
                if journal_path.stat().st_size:
                    raise ValueError(f"{journal_path}: not an evalnoise journal")
                journal.append(_canonical(header) + "\n")
            request = ShardRequest(
                tasks=tuple(task_records),
                agent=spec,
                resource_profile=profile,
                trials=tuple(trial_indices),
                run_seed=int(run_seed),
                policy=policy,
                shard_id=shard_id,
                secrets=secrets,
                runtime=runtime,
                output_path=output_path,
                concurrency=concurrency,
                progress=progress,
                variant=shard_variant,
                actions_path=None if actions_path is None else Path(actions_path),
            )
            result = _run(request, backend_obj, journal, old_rows, t_start)
            # A create request sent by a SIGKILLed earlier run can still be completed by the
            # engine after the cleanup at the start: sweep once more, now that nothing of
            # this run is in flight.
            backend_obj.cleanup(shard_id)
            return result
        finally:
            journal.close()
    finally:
        lock_handle.close()


def in_flight_limit(concurrency: int) -> int:
    """How many attempts a shard running ``concurrency`` trials at once hands to its thread
    pool at a time: ``2 * concurrency`` (one running and one queued per worker, so a worker
    that finishes starts its next attempt while the shard journals the last one)."""
    return 2 * concurrency


def _run(
    request: ShardRequest,
    backend: Backend,
    journal: _Journal,
    old_rows: list[dict[str, Any]],
    t_start: float,
) -> ShardResult:
    """Run what the journal lacks of ``request``, then write the Parquet file.

    ``old_rows`` are the journal's rows from earlier runs (rows of other tasks, trials or
    task specs are ignored); ``t_start`` is when :func:`run_shard` started (for
    ``ShardResult.seconds``).
    """
    from tqdm import tqdm

    spec, profile, policy = request.agent, request.resource_profile, request.policy
    plan, fingerprints, attempts = _planned_attempts(request, old_rows)

    def next_attempt(key: tuple[str, int]) -> int | None:
        done = attempts.get(key)
        if not done:
            return 1
        last = max(done)
        if done[last]["status"] == "verifier_error":
            # the grader failed, not the trial: a rerun of the shard runs it again (once per
            # run, never at once within one: a broken verifier would loop)
            return last + 1
        retry = should_retry(policy, done[last]["status"], last, done[last].get("verified_after"))
        return last + 1 if retry else None

    # The shard's seeded order (module docstring, "Order"); the pool starts attempts in the
    # order they are submitted, so this is the order trials start in.
    order = trial_order(
        order_seed(request.run_seed), spec.name, profile.name, plan, request.variant_key
    )
    position = {key: place for place, key in enumerate(order)}
    todo = [(key, n) for key in order if (n := next_attempt(key)) is not None]
    finished_before = len(plan) - len(todo)
    resumed_rows = sum(len(v) for v in attempts.values())
    statuses: Counter[str] = Counter()
    ran = 0

    bar = tqdm(
        total=len(plan),
        initial=finished_before,
        desc=f"{spec.name}/{profile.name}",
        unit="trial",
        file=sys.stderr,
        disable=not request.progress,
        dynamic_ncols=True,
    )
    pool = cf.ThreadPoolExecutor(max_workers=request.concurrency, thread_name_prefix="trial")
    # Attempts not yet handed to the pool, in start order: the plan's, then each retry as its
    # failed attempt ends. The pool holds at most `limit` of them (one running and one queued
    # per worker), so each wait below looks at a handful of futures, not at every trial of the
    # shard still to come: handing all of them over up front made each completion cost
    # O(trials pending), which dominated long shards (issue 21, item 9). The pool runs its
    # queue in order, so attempts start in the same order as when all were submitted at once.
    waiting = deque(todo)
    limit = in_flight_limit(request.concurrency)
    running: dict[cf.Future[dict[str, Any]], tuple[tuple[str, int], int]] = {}

    def submit() -> None:
        while waiting and len(running) < limit:
            key, attempt = waiting.popleft()
            trial_request = request.trial_request(plan[key], key[1], attempt)
            running[pool.submit(backend.run_trial, trial_request)] = (key, attempt)

    try:
        submit()
        while running:
            done, _ = cf.wait(running, return_when=cf.FIRST_COMPLETED)
            # in the order they were submitted, not the set's: retries then queue (and rows
            # are journaled) in the order their attempts started
            for future in [f for f in running if f in done]:
                key, attempt = running.pop(future)
                row = future.result()
                if row["status"] == "infra_error":
                    # Before the row is journaled: if the engine itself is gone, this row is
                    # the harness's failure, not the trial's outcome. check() raises
                    # EngineUnavailable, the row is dropped, and a resume runs the trial again.
                    backend.check()
                row[_FINGERPRINT] = fingerprints[key[0]]
                journal.append(_encode_row(row))
                attempts.setdefault(key, {})[attempt] = json.loads(_encode_row(row))
                ran += 1
                statuses[row["status"]] += 1
                if should_retry(policy, row["status"], attempt, row.get("verified_after")):
                    waiting.append((key, attempt + 1))
                else:
                    bar.update(1)
                bar.set_postfix({k: v for k, v in sorted(statuses.items())}, refresh=False)
            submit()
    except BaseException:
        for future in running:
            future.cancel()
        with contextlib.suppress(Exception):
            backend.abort(request.shard_id)
        pool.shutdown(wait=True, cancel_futures=True)
        bar.close()
        raise
    pool.shutdown(wait=True)
    bar.close()

    rows = _write_outputs(request, attempts, position)
    all_statuses = Counter(r["status"] for r in rows)
    return ShardResult(
        output_path=request.output_path,
        rows=len(rows),
        trials=len(plan),
        ran=ran,
        resumed=resumed_rows,
        statuses=dict(sorted(all_statuses.items())),
        seconds=time.monotonic() - t_start,
    )


def _planned_attempts(
    request: ShardRequest, old_rows: list[dict[str, Any]]
) -> tuple[
    dict[tuple[str, int], Mapping[str, Any]],
    dict[str, str],
    dict[tuple[str, int], dict[int, dict[str, Any]]],
]:
    """The shard's plan ((task, trial) → task), each task's fingerprint, and the journal's
    rows that belong to this plan, one per (task, trial, attempt): a row of another task
    spec (its fingerprint differs) is not this plan's."""
    plan: dict[tuple[str, int], Mapping[str, Any]] = {}
    fingerprints = {}
    for task in request.tasks:
        fingerprints[task["task_id"]] = _task_fingerprint(task)
        for trial in request.trials:
            plan[(task["task_id"], trial)] = task
    attempts: dict[tuple[str, int], dict[int, dict[str, Any]]] = {}
    for row in old_rows:
        key = (str(row.get("task_id")), row.get("trial"))
        if key not in plan or row.get(_FINGERPRINT) != fingerprints[key[0]]:
            continue
        attempts.setdefault(key, {}).setdefault(int(row["attempt"]), row)
    return plan, fingerprints, attempts


def _write_outputs(
    request: ShardRequest,
    attempts: Mapping[tuple[str, int], Mapping[int, dict[str, Any]]],
    position: Mapping[tuple[str, int], int],
) -> list[dict[str, Any]]:
    """Every attempt's row, in (task, trial, attempt) order, written to the shard's Parquet
    file (and its actions beside it); the rows."""
    rows = []
    time_block = request.trials[0]
    for key in sorted(attempts):
        for attempt in sorted(attempts[key]):
            row = dict(attempts[key][attempt])
            row.pop(_FINGERPRINT, None)
            # from the plan, not the journal: a resumed row of a shard that has since grown
            # takes its place in the order of the shard as it is now
            row["time_block"] = time_block
            row["run_order"] = position[key]
            if request.variant is not None:
                row.update(request.variant.columns())
            rows.append(row)
    if request.actions_path is not None:
        # each row's actions came from its journal line: a resumed shard has them once
        write_parquet_atomic(actions_table(rows), request.actions_path)
    write_parquet_atomic(rows_to_table(rows), request.output_path)
    return rows


__all__ = [
    "EngineUnavailable",
    "ShardRequest",
    "ShardResult",
    "default_shard_id",
    "make_backend",
    "read_journal",
    "rows_to_table",
    "run_shard",
    "write_parquet_atomic",
]
