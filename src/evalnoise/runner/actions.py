"""A trial's actions: recorded, normalised so that two trials of a task compare, and checked.

A trial's *trajectory* is its sequence of actions, each a short text compared for equality
(:mod:`evalnoise.stats.trajectory` measures how consistent they are). Two sources:

- **the exec protocol** (external environment agents: the shell agent, the Harbor bridge, the
  Inspect adapter): :class:`ActionRecorder` records every request the runner carried out, in
  order — an ``exec`` as its command, an ``upload`` as ``upload <directory>``;
- **a QA agent's answer record** (docs/agent-contract.md): an optional
  ``"trajectory": [...]`` beside the ``"answer"``, read by :func:`reported_trajectory`; each
  element a non-empty string or a JSON object (a tool call: name and arguments), the object
  taken as its canonical JSON text (sorted keys, no spaces).

**Normalisation** (:func:`normalise_action`): runs of whitespace become one space and the ends
are stripped (``ls   -la`` and ``ls -la`` are one action); then each of the trial's own paths —
the agent's scratch directory and home on the host, the task folder, the task's working
directory — is replaced by a placeholder (``{home}``, ``{scratch}``, ``{task_dir}``,
``{workdir}``), the longest first and only where the path ends (``/app`` is replaced in
``cd /app/src``, not in ``/application``), so two trials whose scratch directories differ take
the same action. It is idempotent: a normalised action normalises to itself. An action longer
than :data:`MAX_ACTION_CHARS` is cut (:func:`cap_action`, when the trial's row is finished:
after secrets are redacted, :func:`evalnoise.runner.trial.finish_row`) to its head and the
SHA-256 of the whole, so two long commands still compare by their content, and the record
stays small.

Whether a trajectory was recorded is kept apart from what it holds: ``None`` is *not
recorded* (an agent that reports none, a built-in agent, an answer record without
``trajectory``), ``[]`` a recorded empty one (the agent took no action). A malformed
``trajectory`` is recorded as not recorded with a note for the trial's ``error``: it never
fails the trial.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import pyarrow as pa

__all__ = [
    "MAX_ACTIONS",
    "MAX_ACTION_CHARS",
    "ActionRecorder",
    "action_rows",
    "actions_table",
    "cap_action",
    "normalise_action",
    "reported_trajectory",
    "trial_paths",
]

#: Longest action kept whole (characters); a longer one is cut to its head and a digest.
MAX_ACTION_CHARS = 2000
#: Characters of a cut action's head.
_HEAD_CHARS = 1000
#: Most actions a reported trajectory may hold; more is malformed (never truncated silently).
MAX_ACTIONS = 10_000

_WHITESPACE = re.compile(r"\s+")
#: a character that may continue a path: a path is replaced only where it ends
_PATH_CHAR = r"[\w.\-~+@%]"
#: a character a path may not follow: another path's, a slash, or a placeholder's end (so a
#: placeholder never makes a new match, and normalising twice changes nothing)
_BEFORE_PATH = r"[\w.\-~+@%/}]"


def trial_paths(
    *,
    scratch: str | None = None,
    home: str | None = None,
    task_dir: str | None = None,
    workdir: str | None = None,
) -> dict[str, str]:
    """Placeholder name → the trial's path, for :func:`normalise_action`; a missing path or
    the root ``/`` (which would swallow every path) is left out."""
    given = {"home": home, "scratch": scratch, "task_dir": task_dir, "workdir": workdir}
    return {
        name: path.rstrip("/")
        for name, path in given.items()
        if path and path.rstrip("/") and path.startswith("/")
    }


def normalise_action(text: str, paths: Mapping[str, str] | None = None) -> str:
    """``text`` with its whitespace collapsed (``" ".join(text.split())``) and each path of
    ``paths`` (placeholder name → absolute path, :func:`trial_paths`; others are ignored)
    replaced by ``{name}`` where the path ends (module docstring), the longest path first."""
    out = _WHITESPACE.sub(" ", text).strip()
    for name, path in sorted((paths or {}).items(), key=lambda item: -len(item[1])):
        path = _WHITESPACE.sub(" ", path).strip()
        if not path.startswith("/") or path == "/":
            continue  # only absolute paths: a placeholder holds none, so none matches in it
        pattern = rf"(?<!{_BEFORE_PATH}){re.escape(path)}(?!{_PATH_CHAR})"
        out = re.sub(pattern, "{" + name + "}", out)
    return out


def cap_action(text: str, limit: int = MAX_ACTION_CHARS) -> str:
    """``text`` if it has at most ``limit`` characters, else its first ``_HEAD_CHARS`` and
    the first 16 hex digits of the SHA-256 of the whole (UTF-8): equal actions stay equal,
    different ones differ (but for a hash collision)."""
    if len(text) <= limit:
        return text
    digest = hashlib.sha256(text.encode("utf-8", "replace")).hexdigest()[:16]
    return f"{text[:_HEAD_CHARS]} [... {len(text) - _HEAD_CHARS} chars, sha256 {digest}]"


class ActionRecorder:
    """The actions of one external agent's trial, in the order the runner carried them out,
    each normalised with the trial's ``paths`` (:func:`trial_paths`)."""

    def __init__(self, paths: Mapping[str, str] | None = None) -> None:
        self.paths = dict(paths or {})
        self.actions: list[str] = []

    @classmethod
    def for_trial(
        cls,
        box: Any,
        *,
        scratch: str,
        home: str,
        task_dir: str | None,
        workdir: str | None,
    ) -> ActionRecorder:
        """The recorder of one trial in the container ``box``
        (:class:`evalnoise.runner.trial_container.TrialContainer`): its paths are the agent's
        ``scratch`` and ``home`` on the host, the ``task_dir`` and the task's ``workdir`` —
        when the task declares none, the working directory its image sets (the container's
        ``WorkingDir``), where the agent's commands run."""
        if not workdir:
            try:
                workdir = box.api.inspect_container(box.id)["Config"].get("WorkingDir") or None
            except Exception:  # an engine that does not answer fails the trial elsewhere
                workdir = None
        return cls(trial_paths(scratch=scratch, home=home, task_dir=task_dir, workdir=workdir))

    def record(self, message: Any) -> None:
        """Record one request of the exec protocol
        (:class:`evalnoise.runner.exec_protocol.Exec` or ``Upload``; ``Done`` is no action)."""
        command = getattr(message, "command", None)
        if command is not None:
            self.actions.append(normalise_action(command, self.paths))
            return
        target = getattr(message, "target", None)
        if target is not None:
            self.actions.append(normalise_action(f"upload {target}", self.paths))


def _action_text(value: Any) -> str | None:
    """One reported action as text (None: malformed)."""
    if isinstance(value, str):
        text = value
    elif isinstance(value, Mapping):
        try:
            text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        except (TypeError, ValueError):
            return None
    else:
        return None
    text = normalise_action(text)
    return text or None


def reported_trajectory(
    record: Mapping[str, Any] | None,
) -> tuple[list[str] | None, str | None]:
    """``(actions, note)``: the ``trajectory`` of a QA agent's answer record, each action
    normalised (:func:`normalise_action`), and a note naming what was
    malformed. No record or no ``trajectory`` (or null): ``(None, None)``, not recorded. A
    trajectory that is not a list of at most :data:`MAX_ACTIONS` non-empty strings or objects:
    ``(None, note)`` — not recorded, never half-read, never a reason to fail the trial."""
    value = None if record is None else record.get("trajectory")
    if value is None:
        return None, None
    if not isinstance(value, Sequence) or isinstance(value, str | bytes):
        return None, f"trajectory ignored: not a JSON list ({type(value).__name__})"
    if len(value) > MAX_ACTIONS:
        return None, f"trajectory ignored: {len(value)} actions, more than {MAX_ACTIONS}"
    actions = []
    for step, item in enumerate(value):
        text = _action_text(item)
        if text is None:
            shown = json.dumps(item, default=str)[:40]
            return None, (
                f"trajectory ignored: action {step} is {shown} (not a non-empty string or object)"
            )
        actions.append(text)
    return actions, None


def action_rows(row: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The :data:`evalnoise.schema.ACTIONS` rows of one trial row (its ``actions``: None or
    absent → none, not recorded; ``[]`` → one row with a null action; else one per action)."""
    actions = row.get("actions")
    if actions is None:
        return []
    key = {
        name: row.get(name) for name in ("agent", "resource_profile", "task_id", "trial", "attempt")
    } | {"prompt_variant": row.get("prompt_variant"), "sampling": row.get("sampling")}
    if not actions:
        return [{**key, "step": 0, "action": None}]
    return [{**key, "step": step, "action": action} for step, action in enumerate(actions)]


def actions_table(rows: Iterable[Mapping[str, Any]]) -> pa.Table:
    """The :data:`evalnoise.schema.ACTIONS` table of trial rows (:func:`action_rows`), sorted by
    (task_id, trial, attempt, step): the same rows give the same file, however they were run
    or resumed."""
    from evalnoise.schema import ACTIONS, conform

    out = sorted(
        (a for row in rows for a in action_rows(row)),
        key=lambda r: (str(r["task_id"]), int(r["trial"]), int(r["attempt"]), int(r["step"])),
    )
    columns = {f.name: pa.array([r[f.name] for r in out], type=f.type) for f in ACTIONS}
    return conform(pa.table(columns), ACTIONS)
