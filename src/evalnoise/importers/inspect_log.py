"""Inspect AI eval logs: ``.eval`` (a zip archive) and ``.json`` (one ``EvalLog`` object).

Read from the documented on-disk format (inspect_ai ``log/_log.py`` and
``log/_recorders/eval.py``), without inspect_ai, so the result never depends on whether or
which inspect_ai happens to be installed:

- ``.json``: ``EvalLog`` = ``{version, status, eval: {task, model, created, ...}, plan,
  results, stats, samples: [EvalSample], ...}``.
- ``.eval``: a zip with ``header.json`` (the ``EvalLog`` without samples; absent while a run
  is still going, when ``_journal/start.json`` holds ``{version, eval, plan}``),
  ``samples/<id>_epoch_<epoch>.json`` (one ``EvalSample`` each), ``summaries.json`` and
  ``reductions.json``. inspect_ai 0.3.2xx writes every member zstandard-compressed (zip
  method 93), which Python < 3.14's zipfile cannot read: those members are decompressed
  here with the ``zstandard`` package; deflate and stored members are read by zipfile.

An ``EvalSample`` has ``id``, ``epoch`` (from 1), ``scores: {scorer: {value, answer, ...}}``
(older logs: a single ``score``), ``output``, ``error: {message, traceback}``,
``limit: {type, limit}``, ``started_at``, ``completed_at``, ``total_time``.

Mapping: epochs are trials; the agent is ``eval.model`` (or ``--agent``), plus the run
settings that differ between the logs of one model (see :func:`agent_names`); the task is
the sample id (prefixed with ``eval.task`` + ``/`` when the logs cover more than one task);
score values convert as inspect_ai's ``value_to_float`` does ('C' → 1, 'P' → 0.5, 'I' and
'N' → 0, numbers and booleans as is, yes/true/no/false), except that a value it cannot
convert is an error here, not a silent 0. Each row also carries the log's generation
``seed`` (TRIALS column) and the extra columns ``temperature``, ``generate_config`` and
``task_args`` (JSON text), so that an analysis can tell a fixed-seed run from a sampled one.
"""

from __future__ import annotations

import io
import json
import re
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa

from evalnoise.errors import InputError
from evalnoise.importers._trial_records import (
    Trial,
    Where,
    check_score,
    expand_paths,
    load_json,
    natural_key,
    parse_timestamp,
    path_key,
)

FORMAT = "inspect"
OPTIONS = ("agent", "scorer")
PATTERNS = ("*.eval", "*.json")

#: zip compression method 93 (APPNOTE 4.4.5): zstandard, what inspect_ai writes
ZIP_ZSTANDARD = 93

#: ``EvalSample.limit.type`` → TRIALS status. A clock limit is a timeout; an operator who
#: stopped the sample is outside the agent; the agent's own budgets (tokens, messages,
#: turns, context, cost, custom limits) used up are the agent's outcome.
STATUS_OF_LIMIT = {
    "time": "timeout",
    "working": "timeout",
    "operator": "infra_error",
    "token": "agent_error",
    "message": "agent_error",
    "turn": "agent_error",
    "context": "agent_error",
    "cost": "agent_error",
    "custom": "agent_error",
}

#: GenerateConfig fields that say how requests are sent, not what the model is asked to do:
#: two runs differing only in these are the same agent.
OPERATIONAL_SETTINGS = frozenset(
    {
        "max_retries",
        "timeout",
        "attempt_timeout",
        "stream_idle_timeout",
        "max_connections",
        "adaptive_connections",
        "batch",
        "cache_prompt",
        "extra_headers",
    }
)

RULES = {
    "rule": (
        "within (agent, task_id), trials are numbered from 0 in the order of (the log's "
        "eval.created, the log's path in natural sort order, the sample's epoch); for one "
        "log this is epoch − 1"
    ),
    "agent_rule": "the --agent option if given (refused when the logs' run settings "
    "differ), else the log's eval.model; when logs of one model differ in run settings "
    "(generation config: eval.model_generate_config overridden by plan.config, less "
    "operational keys such as max_connections; eval.task_args; eval.model_args), the "
    "differing settings are appended: 'model [seed=42, temperature=0.0]'",
    "task_rule": "the sample id; prefixed with '<eval.task>/' when the logs cover more "
    "than one eval.task",
    "score_rule": "the chosen scorer's value, as inspect_ai's value_to_float: C → 1, P → "
    "0.5, I/N → 0, numbers and booleans as is, yes/true → 1, no/false → 0; null for a "
    "sample that errored before it was scored",
    "status_rule": "sample.error → infra_error (an exception that halted the sample: "
    "inspect_ai's sandbox or model-API failures, retried by retry_on_error; Vivaria files "
    "them as serverOrTask); else sample.limit.type time/working → timeout, operator → "
    "infra_error, token/message/turn/context/cost/custom → agent_error; else ok",
    "settings_rule": "seed = the generation config's seed; temperature, generate_config "
    "(the whole generation config, JSON) and task_args (JSON) as in the log",
}

#: the columns each row gets beyond TRIALS (``seed`` is a TRIALS column), and their types
EXTRA_TYPES = {
    "temperature": pa.float64(),
    "generate_config": pa.string(),
    "task_args": pa.string(),
}

_SAMPLE_MEMBER = re.compile(r"^samples/.+\.json$")
_WORDS = {"c": 1.0, "p": 0.5, "i": 0.0, "n": 0.0, "yes": 1.0, "true": 1.0, "no": 0.0, "false": 0.0}
#: inspect_ai ``log/_file.py`` ``log_file_pattern``: a .json log's name starts with an
#: ISO timestamp (what Inspect names its logs); other .json files are not logs
_LOG_FILE_NAME = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}[:-]\d{2}[:-]\d{2}.*$")


@dataclass(frozen=True)
class Log:
    """One log file: its header (the EvalLog without samples) and its samples."""

    path: Path
    header: dict
    samples: list[tuple[dict, str]]

    @property
    def eval(self) -> dict:
        return self.header["eval"]


def is_log_file(path: Path) -> bool:
    """Whether a file found in a folder is an Inspect log, by Inspect's own rule.

    inspect_ai 0.3.285 ``log/_file.py``: ``list_eval_logs`` keeps the files for which
    ``is_log_file(name, [".eval", ".json"])`` holds — every ``*.eval``, and a ``*.json``
    only when its name matches ``log_file_pattern`` (``YYYY-MM-DDTHH-MM-SS…``). So an
    ``inspect eval-set`` folder's own ``eval-set.json`` and ``logs.json`` are left out.
    """
    name = path.name
    return name.endswith(".eval") or (
        name.endswith(".json") and _LOG_FILE_NAME.match(name) is not None
    )


def find_logs(paths: list[str | Path]) -> list[Path]:
    """The log files named by ``paths``: files as given, folders listed as Inspect does."""
    return expand_paths(paths, PATTERNS, "Inspect logs (.eval or .json)", accept=is_log_file)


def _zstd_member(path: Path, info: zipfile.ZipInfo) -> bytes:
    """A method-93 member's bytes: its raw data after the local header, zstd-decoded."""
    import zstandard  # a core dependency; imported here to keep the module light

    if info.flag_bits & 0x1:
        raise InputError(f"member {info.filename!r} is encrypted", path=str(path))
    with path.open("rb") as fh:
        fh.seek(info.header_offset)
        local = fh.read(30)
        if len(local) != 30 or local[:4] != b"PK\x03\x04":
            raise zipfile.BadZipFile(f"bad local header of member {info.filename!r}")
        name_len = int.from_bytes(local[26:28], "little")
        extra_len = int.from_bytes(local[28:30], "little")
        fh.seek(info.header_offset + 30 + name_len + extra_len)
        raw = fh.read(info.compress_size)
    if len(raw) != info.compress_size:
        raise zipfile.BadZipFile(f"member {info.filename!r} is truncated")
    # inspect_ai splits large members into several zstd frames: read across all of them
    reader = zstandard.ZstdDecompressor().stream_reader(io.BytesIO(raw), read_across_frames=True)
    try:
        data = reader.read()
    except zstandard.ZstdError as exc:
        raise zipfile.BadZipFile(f"member {info.filename!r}: zstandard: {exc}") from exc
    if len(data) != info.file_size or zlib.crc32(data) != info.CRC:
        raise zipfile.BadZipFile(f"member {info.filename!r} fails its size or CRC check")
    return data


def _zip_json(zf: zipfile.ZipFile, name: str, path: Path) -> Any:
    info = zf.getinfo(name)
    try:
        if info.compress_type == ZIP_ZSTANDARD:
            raw = _zstd_member(path, info)
        else:
            raw = zf.read(info)
    except NotImplementedError as exc:  # a method neither zipfile nor we read (e.g. LZMA64)
        raise InputError(
            f"member {name!r} uses zip compression method {info.compress_type}, which "
            "evalnoise cannot read (it reads stored, deflate and zstandard members); "
            "convert the log with `inspect log convert --to json`",
            path=str(path),
        ) from exc
    except (zipfile.BadZipFile, OSError) as exc:
        raise InputError(f"member {name!r} cannot be read: {exc}", path=str(path)) from exc
    try:
        return json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InputError(f"member {name!r} is not valid JSON: {exc}", path=str(path)) from exc


def _read_eval_zip(path: Path) -> tuple[dict, list[tuple[dict, str]]]:
    try:
        zf = zipfile.ZipFile(path)
    except zipfile.BadZipFile as exc:
        raise InputError(f"not an .eval log (not a zip archive): {exc}", path=str(path)) from exc
    with zf:
        names = zf.namelist()
        if "header.json" in names:
            header = _zip_json(zf, "header.json", path)
        elif "_journal/start.json" in names:
            header = _zip_json(zf, "_journal/start.json", path)
            if isinstance(header, dict):
                header.setdefault("status", "started")
        else:
            raise InputError(
                "not an .eval log: neither header.json nor _journal/start.json is in the archive",
                path=str(path),
            )
        members = sorted((n for n in names if _SAMPLE_MEMBER.match(n)), key=natural_key)
        samples = [(_zip_json(zf, n, path), n) for n in members]
    if not isinstance(header, dict):
        raise InputError("header.json is not a JSON object", path=str(path))
    return header, samples


def _read_json_log(path: Path) -> tuple[dict, list[tuple[dict, str]]]:
    data = load_json(path)
    if not isinstance(data, dict):
        raise InputError(
            f"expected an EvalLog JSON object, got {type(data).__name__}", path=str(path)
        )
    samples = data.pop("samples", None)
    if samples is None:
        samples = []
    if not isinstance(samples, list):
        raise InputError("field 'samples' must be a list", path=str(path), column="samples")
    return data, [(s, f"samples[{k}]") for k, s in enumerate(samples)]


def load_log(path: Path) -> tuple[dict, list[tuple[dict, str]]]:
    """``(header, [(sample, label)])`` of one log, as plain JSON data."""
    if path.suffix == ".eval":
        return _read_eval_zip(path)
    return _read_json_log(path)


def _load_checked(path: Path) -> Log:
    """One log, refused unless it names its task and model and holds samples."""
    header, samples = load_log(path)
    where = Where(str(path))
    ev = header.get("eval")
    if not isinstance(ev, dict):
        raise where.error("not an Inspect log: field 'eval' (the EvalSpec) is missing", "eval")
    for key in ("task", "model"):
        if not isinstance(ev.get(key), str):
            raise where.error(f"eval.{key} is missing or not a string", f"eval.{key}")
    if not samples:
        raise where.error(
            "the log holds no samples (written with log_samples=False, or header only?)"
        )
    return Log(path, header, samples)


def _check_distinct_runs(logs: list[Log]) -> None:
    """Refuse two files of one run (same ``eval.eval_id``): the same samples twice."""
    seen: dict[str, Log] = {}
    for log in logs:
        eval_id = log.eval.get("eval_id")
        if not isinstance(eval_id, str) or not eval_id:
            continue  # logs before eval_id: the sample uuids catch repeats
        if eval_id in seen:
            raise InputError(_same_run_message(seen[eval_id], log), path=str(log.path))
        seen[eval_id] = log


def _same_run_message(first: Log, second: Log) -> str:
    """What to tell the user about two files that hold one run."""
    eval_id = second.eval.get("eval_id") or first.eval.get("eval_id")
    run = f"one run (eval_id {eval_id})" if eval_id else "one run"
    if first.path.suffix != second.path.suffix:
        return (
            f"this log and {first.path} are {run} in two formats ({second.path.suffix} and "
            f"{first.path.suffix}, as `inspect log convert` writes): import only one of them"
        )
    return f"this log and {first.path} are copies of {run}: import only one of them"


def generate_config(header: dict) -> dict[str, Any]:
    """The generation config a run used: the model's own config (``eval.model_generate_config``)
    overridden by the eval's (``plan.config``, where ``eval(temperature=…)`` puts it); nulls
    dropped."""
    ev = header.get("eval") or {}
    plan = header.get("plan") if isinstance(header.get("plan"), dict) else {}
    merged: dict[str, Any] = {}
    for part in (ev.get("model_generate_config"), plan.get("config")):
        if isinstance(part, dict):
            merged.update({k: v for k, v in part.items() if v is not None})
    return merged


def run_settings(header: dict) -> dict[str, Any]:
    """The settings that make a run a different agent of the same model, flat: generation
    config keys as is (less :data:`OPERATIONAL_SETTINGS`), ``task_args.<k>``, ``model_args.<k>``."""
    ev = header["eval"]
    out = {k: v for k, v in generate_config(header).items() if k not in OPERATIONAL_SETTINGS}
    for field in ("task_args", "model_args"):
        args = ev.get(field)
        if isinstance(args, dict):
            out.update({f"{field}.{k}": v for k, v in args.items() if v is not None})
    return out


def _shown(value: Any) -> str:
    """A setting's value as a user reads it: text as is, absent as 'none', else JSON."""
    if value is None:
        return "none"
    if isinstance(value, str):
        return value
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def _differing(settings: list[dict[str, Any]]) -> list[str]:
    """The setting names whose values are not the same in all of ``settings``."""
    names = sorted({k for s in settings for k in s})
    return [k for k in names if len({_shown(s.get(k)) for s in settings}) > 1]


def agent_names(logs: list[Log], agent: str | None) -> dict[Path, str]:
    """Each log's agent name. Logs of one model whose run settings differ are different
    agents, named ``model [setting=value, ...]`` with the settings that differ; ``agent``
    (the --agent option) names them all, and is refused when their settings differ."""
    settings = {log.path: run_settings(log.header) for log in logs}
    if agent is not None:
        differ = _differing(list(settings.values()))
        if differ:
            raise InputError(
                f"--agent {agent!r} would merge runs with different settings "
                f"({_difference_text(logs, settings, differ)}): drop --agent to name the "
                "agents by model and setting, or import the runs separately"
            )
        return {log.path: agent for log in logs}
    names: dict[Path, str] = {}
    for model in sorted({log.eval["model"] for log in logs}):
        mine = [log for log in logs if log.eval["model"] == model]
        differ = _differing([settings[log.path] for log in mine])
        for log in mine:
            suffix = ", ".join(f"{k}={_shown(settings[log.path].get(k))}" for k in differ)
            names[log.path] = f"{model} [{suffix}]" if differ else model
    return names


def _difference_text(logs: list[Log], settings: dict[Path, dict], differ: list[str]) -> str:
    """'temperature 0.7 in a.eval, 0.0 in b.json; seed ...' for the first two logs that
    differ, enough to see what to fix."""
    first = logs[0]
    other = next(
        log
        for log in logs[1:]
        if any(
            _shown(settings[log.path].get(k)) != _shown(settings[first.path].get(k)) for k in differ
        )
    )
    parts = [
        f"{k} {_shown(settings[first.path].get(k))} in {first.path.name}, "
        f"{_shown(settings[other.path].get(k))} in {other.path.name}"
        for k in differ
        if _shown(settings[first.path].get(k)) != _shown(settings[other.path].get(k))
    ]
    return "; ".join(parts)


def _settings_columns(header: dict) -> dict[str, Any]:
    """The columns each of a log's rows carries: seed, temperature, the whole generation
    config and the task arguments (JSON text)."""
    config = generate_config(header)
    seed = config.get("seed")
    temperature = config.get("temperature")
    task_args = header["eval"].get("task_args")
    return {
        "seed": seed if isinstance(seed, int) and not isinstance(seed, bool) else None,
        "temperature": float(temperature) if isinstance(temperature, int | float) else None,
        "generate_config": json.dumps(config, sort_keys=True, ensure_ascii=False),
        "task_args": json.dumps(task_args or {}, sort_keys=True, ensure_ascii=False),
    }


def value_to_float(value: Any, where: Where, column: str) -> float:
    """inspect_ai's ``value_to_float``, strict: an unconvertible value is an error."""
    if isinstance(value, bool | int | float):
        return check_score(value, where, column)
    if isinstance(value, str):
        text = value.strip()
        if text.lower() in _WORDS and (len(text) > 1 or text.isupper()):
            return _WORDS[text.lower()]
        try:
            return check_score(float(text), where, column)
        except ValueError:
            pass
    raise where.error(
        f"score value {value!r} is not C/I/P/N, a number, or yes/no/true/false", column
    )


def _text_of(content: Any, attachments: dict[str, str]) -> str | None:
    if isinstance(content, str):
        if content.startswith("attachment://"):
            return attachments.get(content.removeprefix("attachment://"), content)
        return content
    if isinstance(content, list):
        parts = [
            _text_of(c.get("text"), attachments)
            for c in content
            if isinstance(c, dict) and c.get("type") == "text"
        ]
        return "\n".join(p for p in parts if p) or None
    return None


def _prediction(sample: dict, chosen: dict | None) -> str | None:
    attachments = sample.get("attachments") or {}
    if chosen is not None and isinstance(chosen.get("answer"), str):
        return _text_of(chosen["answer"], attachments)
    output = sample.get("output")
    if isinstance(output, dict):
        if isinstance(output.get("completion"), str):
            return output["completion"]
        choices = output.get("choices")
        if isinstance(choices, list) and choices and isinstance(choices[0], dict):
            message = choices[0].get("message")
            if isinstance(message, dict):
                return _text_of(message.get("content"), attachments)
    return None


def _scores_of(sample: dict, where: Where) -> dict[str, Any]:
    scores = sample.get("scores")
    if scores is None and isinstance(sample.get("score"), dict):  # logs before scores{}
        scores = {"score": sample["score"]}
    if scores is None:
        return {}
    if not isinstance(scores, dict):
        raise where.error(f"expected an object, got {type(scores).__name__}", "scores")
    return scores


def _choose_scorer(logs: list[Log], scorer: str | None) -> str:
    """The scorer whose value is the score: the one asked for, or the only one."""
    names: set[str] = set()
    for log in logs:
        for sample, label in log.samples:
            if isinstance(sample, dict):
                names.update(_scores_of(sample, Where(str(log.path), None, label)))
    if scorer is not None:
        if scorer not in names:
            raise InputError(
                f"no scorer {scorer!r} in the logs (they have: "
                f"{', '.join(sorted(names)) or 'no scores'})"
            )
        return scorer
    if len(names) == 1:
        return next(iter(names))
    if not names:
        raise InputError("the logs hold no scored samples")
    raise InputError(
        f"the logs have several scorers ({', '.join(sorted(names))}): choose one with --scorer"
    )


def _status(sample: dict, where: Where) -> tuple[str, str | None]:
    """``(status, error message)`` of a sample: an error, else a limit, else ok."""
    error = sample.get("error")
    if error is not None:
        return "infra_error", error.get("message") if isinstance(error, dict) else str(error)
    limit = sample.get("limit")
    if limit is not None:
        kind = limit.get("type") if isinstance(limit, dict) else limit
        if kind not in STATUS_OF_LIMIT:
            raise where.error(
                f"unknown limit type {kind!r} (known: {', '.join(STATUS_OF_LIMIT)})", "limit"
            )
        return STATUS_OF_LIMIT[kind], f"{kind} limit"
    return "ok", None


def _score(sample: dict, scorer: str, where: Where) -> tuple[float | None, dict | None]:
    """``(score, the chosen score record)``; no score only for a sample that errored."""
    chosen = _scores_of(sample, where).get(scorer)
    if chosen is None:
        if sample.get("error") is None:
            raise where.error(f"no score from scorer {scorer!r} and no error", "scores")
        return None, None
    if not isinstance(chosen, dict) or "value" not in chosen:
        raise where.error(f"score {scorer!r} has no value", f"scores.{scorer}")
    return value_to_float(chosen["value"], where, f"scores.{scorer}.value"), chosen


def _log_order(log: Log) -> tuple:
    """Where a log's epochs go in the trial order: by eval.created, then by path."""
    created = log.eval.get("created")
    created_at = (
        parse_timestamp(created, Where(str(log.path)), "eval.created")
        if isinstance(created, str)
        else None
    )
    stamp = created_at.timestamp() if created_at is not None else float("-inf")
    return (stamp, path_key(log.path.resolve()))


def _sample_where(log: Log, sample: Any, label: str) -> tuple[Where, Any, int]:
    """The sample's id and epoch, checked, and a ``Where`` that names them."""
    where = Where(str(log.path), None, label)
    if not isinstance(sample, dict):
        raise where.error(f"expected an EvalSample object, got {type(sample).__name__}")
    sid = sample.get("id")
    if isinstance(sid, bool) or not isinstance(sid, int | str):
        raise where.error(f"sample id must be an integer or string, got {sid!r}", "id")
    epoch = sample.get("epoch")
    if isinstance(epoch, bool) or not isinstance(epoch, int) or epoch < 1:
        raise where.error(f"epoch must be an integer ≥ 1, got {epoch!r}", "epoch")
    return Where(str(log.path), None, f"{label} (sample {sid!r}, epoch {epoch})"), sid, epoch


def _check_uuid(sample: dict, log: Log, seen: dict[str, Log], where: Where) -> None:
    """Refuse a sample run already imported from another log: the same run in two files
    (also caught by eval_id, where logs have one), or an eval-retry log, which repeats the
    samples its original completed."""
    uuid = sample.get("uuid")
    if not isinstance(uuid, str):
        return
    if uuid in seen:
        other = seen[uuid]
        if other.path.stem == log.path.stem:
            raise where.error(f"the same sample run (uuid {uuid}): {_same_run_message(other, log)}")
        raise where.error(
            f"the same sample run (uuid {uuid}) is also in {other.path}: an eval-retry log "
            "repeats the samples of the log it retried; import only one of them"
        )
    seen[uuid] = log


def _trials_of(log: Log, name: str, scorer: str, prefix_task: bool, seen: dict) -> list[Trial]:
    """The trials of one log."""
    order = _log_order(log)
    columns = _settings_columns(log.header)
    out = []
    for sample, label in log.samples:
        where, sid, epoch = _sample_where(log, sample, label)
        _check_uuid(sample, log, seen, where)
        status, message = _status(sample, where)
        score, chosen = _score(sample, scorer, where)
        total = sample.get("total_time")
        out.append(
            Trial(
                agent=name,
                task_id=f"{log.eval['task']}/{sid}" if prefix_task else str(sid),
                order=(*order, epoch),
                where=where,
                status=status,
                score=score,
                error=message,
                prediction=_prediction(sample, chosen),
                started_at=parse_timestamp(sample.get("started_at"), where, "started_at"),
                ended_at=parse_timestamp(sample.get("completed_at"), where, "completed_at"),
                duration_s=float(total) if isinstance(total, int | float) else None,
                extra=dict(columns),
            )
        )
    return out


def read(
    paths: list[str | Path], *, agent: str | None = None, scorer: str | None = None
) -> tuple[list[Trial], dict]:
    files = find_logs(paths)
    logs = [_load_checked(path) for path in files]
    _check_distinct_runs(logs)
    chosen_scorer = _choose_scorer(logs, scorer)
    names = agent_names(logs, agent)
    tasks = {log.eval["task"] for log in logs}
    seen_uuid: dict[str, Log] = {}
    trials: list[Trial] = []
    for log in logs:
        trials.extend(_trials_of(log, names[log.path], chosen_scorer, len(tasks) > 1, seen_uuid))
    statuses: dict[str, int] = {}
    for log in logs:
        status = str(log.header.get("status", "unknown"))
        statuses[status] = statuses.get(status, 0) + 1
    extra = {
        "files": len(files),
        "scorer": chosen_scorer,
        "eval_tasks": sorted(tasks),
        "log_status": dict(sorted(statuses.items())),
        "agents_by_log": {str(log.path): names[log.path] for log in logs},
    }
    return trials, {
        "rules": RULES,
        "counts": extra,
        "sources": [str(f) for f in files],
        "extra_types": EXTRA_TYPES,
    }
