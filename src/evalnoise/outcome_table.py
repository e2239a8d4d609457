"""The one table of trial outcomes: every other list of outcomes or statuses reads it.

A trial's *status* is what its row says (the runner's, or an importer's); its *outcome* is
what the reports count, one per trial. Each row of :data:`OUTCOME_TABLE` is an
:class:`Outcome`: its name (the key in every output: ``outcomes`` counts, ``metrics.json``,
``profiles.csv``, the cards), its words (``label`` for legends and help, ``header`` for
table columns), the status it is counted from, whether it is the infrastructure's (the
infra policy decides how it counts, and ``retry`` runs it again), whether it is *decided*
(an undecided trial waits for a grader's verdict: no score, never a 0) and the phase the
trial ended in.

Two outcomes refine a status by another column (:func:`evalnoise.outcomes.outcome_of`):
``agent_error`` is ``crashed`` when its exit code is a fault signal and ``no_answer``
otherwise; ``ok`` is ``unscored`` when its score is null. Every other outcome is its own
status (``name == status``), so a new outcome is one row here (and its words' test):

- the trial tables accept its status (:data:`evalnoise.schema.STATUSES`, the importers);
- every count, line and table prints it (:func:`evalnoise.outcomes.outcome_counts`,
  ``summary.txt``, ``metrics.json``, ``profiles.csv``, the cards, the report, ``evalnoise
  analyze``); an infrastructure outcome gets its ``<name>_attempts`` column and follows the
  infra policy; an undecided one is left out of every number.

:data:`FLAG_TABLE` is the same for *flags*: a trial row's column that marks something that
happened beside its outcome (the verdict that came after an agent failure, an OOM kill the
task survived, an environment the agent tampered with). A flag does not change the outcome;
it is counted beside it (:func:`evalnoise.outcomes.flag_counts`) wherever the outcomes are.

The names below (:data:`OUTCOMES`, :data:`STATUSES`, …) are *views*: they read the table
each time they are used, so a table extended in one place (a test registering a
hypothetical outcome) is seen everywhere.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass

__all__ = [
    "FLAGS",
    "FLAG_LABELS",
    "FLAG_TABLE",
    "INFRA_STATUSES",
    "OUTCOMES",
    "OUTCOME_HEADERS",
    "OUTCOME_LABELS",
    "OUTCOME_TABLE",
    "PHASES",
    "STATUSES",
    "UNDECIDED",
    "Flag",
    "Outcome",
    "attempt_columns",
    "describe_statuses",
    "outcome",
]

#: The phases a trial can end in, in the order a trial goes through them.
PHASES = ("environment", "agent", "verifier", "scoring")


@dataclass(frozen=True)
class Outcome:
    """One outcome of a trial.

    name : the outcome's key in every output.
    label : what it means, for legends, cards and help.
    header : its short column header in outcome tables.
    status : the trial row's status it is counted from (its own ``name`` unless it
        refines a status, see the module's docstring).
    infra : the infrastructure's outcome: the infra policy decides how it counts
        (``as_incorrect``, ``exclude``, ``retry``), and it is counted per attempt.
    decided : False when the trial waits for a grader's verdict: no score, never a 0,
        left out of every number until a rerun decides it.
    phase : the phase the trial ended in (:data:`PHASES`).
    """

    name: str
    label: str
    header: str
    status: str
    infra: bool = False
    decided: bool = True
    phase: str = "agent"

    def __post_init__(self) -> None:
        if self.phase not in PHASES:
            raise ValueError(f"outcome {self.name!r}: phase {self.phase!r} is not one of {PHASES}")


@dataclass(frozen=True)
class Flag:
    """A mark a trial row can carry beside its outcome: the trial table's column ``name``
    (a boolean, or a string naming what happened; null or false: not flagged).

    name : the column, and the flag's key in every output.
    label : its words in outcome lines, cards and legends.
    meaning : what it means, for legends and help.
    """

    name: str
    label: str
    meaning: str


#: Every outcome, in the order every output prints them; they partition the trials.
OUTCOME_TABLE: tuple[Outcome, ...] = (
    Outcome("ok", "ok (answered and scored)", "ok", "ok", phase="scoring"),
    Outcome(
        "crashed",
        "agent_error: crashed (killed by a fault signal)",
        "crashed",
        "agent_error",
    ),
    Outcome("no_answer", "agent_error: no answer", "no answer", "agent_error"),
    Outcome("timeout", "timeout", "timeout", "timeout", infra=True),
    Outcome("oom_killed", "oom_killed", "oom_killed", "oom_killed", infra=True),
    Outcome(
        "infra_error", "infra_error", "infra_error", "infra_error", infra=True, phase="environment"
    ),
    Outcome(
        "verifier_error",
        "verifier_error (the verifier left no valid reward)",
        "verifier_error",
        "verifier_error",
        decided=False,
        phase="verifier",
    ),
    Outcome(
        "agent_setup_error",
        "agent_setup_error (the agent could not be set up in the task's container: neither "
        "its skill nor the task)",
        "agent_setup_error",
        "agent_setup_error",
        decided=False,
        phase="environment",
    ),
    Outcome(
        "unscored",
        "unscored (judge_error)",
        "unscored",
        "ok",
        decided=False,
        phase="scoring",
    ),
)

#: Every flag a trial row can carry, in print order. A flag is counted where its column
#: exists (the runner and the importers write it); a table without the column counts none.
FLAG_TABLE: tuple[Flag, ...] = (
    Flag(
        "verified_after",
        "verified after an agent failure",
        "the agent phase ended in timeout or agent_error (the column names which) and the "
        "verifier then wrote a valid reward, which scores the trial",
    ),
    Flag(
        "oom_in_agent",
        "OOM kill in the agent phase",
        "the kernel killed a process of the agent for memory while the trial's container "
        "lived on: the task's own event, the verdict decides",
    ),
    Flag(
        "environment_tampered",
        "environment tampered with",
        "what the verifier executes changed during the agent phase (the column names the paths)",
    ),
)


def _table() -> tuple[Outcome, ...]:
    # the module's global at the time of use, never a copy taken at import: see the
    # module's docstring
    return OUTCOME_TABLE


def _flags() -> tuple[Flag, ...]:
    return FLAG_TABLE


class _Names(Sequence[str]):
    """A tuple of names read from a table each time it is used (iterated, indexed, tested
    for membership, compared with a tuple)."""

    def __init__(self, read: Callable[[], Sequence[str]]) -> None:
        self._read = read

    def __getitem__(self, index):  # type: ignore[override]
        return tuple(self._read())[index]

    def __len__(self) -> int:
        return len(tuple(self._read()))

    def __iter__(self) -> Iterator[str]:
        return iter(tuple(self._read()))

    def __contains__(self, value: object) -> bool:
        return value in tuple(self._read())

    def __eq__(self, other: object) -> bool:
        return tuple(self) == (tuple(other) if isinstance(other, Sequence) else other)

    def __hash__(self) -> int:
        return hash(tuple(self))

    def __add__(self, other: Sequence[str]) -> tuple[str, ...]:
        return (*self, *other)

    def __repr__(self) -> str:
        return repr(tuple(self))


class _Words(Mapping[str, str]):
    """A mapping name → words read from a table each time it is used."""

    def __init__(self, read: Callable[[], Mapping[str, str]]) -> None:
        self._read = read

    def __getitem__(self, key: str) -> str:
        return self._read()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._read())

    def __len__(self) -> int:
        return len(self._read())

    def __repr__(self) -> str:
        return repr(dict(self._read()))


#: every outcome, in print order
OUTCOMES = _Names(lambda: [o.name for o in _table()])
#: the statuses a trial row may hold, each once, in the order of their first outcome
STATUSES = _Names(lambda: list(dict.fromkeys(o.status for o in _table())))
#: the infrastructure's statuses: the infra policy applies to them
INFRA_STATUSES = _Names(lambda: list(dict.fromkeys(o.status for o in _table() if o.infra)))
#: outcomes that wait for a grader's verdict: no score, never a 0, decided by a rerun
UNDECIDED = _Names(lambda: [o.name for o in _table() if not o.decided])
#: what each outcome means, for legends and cards
OUTCOME_LABELS = _Words(lambda: {o.name: o.label for o in _table()})
#: short column headers of the outcome tables
OUTCOME_HEADERS = _Words(lambda: {o.name: o.header for o in _table()})
#: every flag, in print order
FLAGS = _Names(lambda: [f.name for f in _flags()])
#: what each flag reads as in lines and cards
FLAG_LABELS = _Words(lambda: {f.name: f.label for f in _flags()})


def attempt_columns() -> tuple[str, ...]:
    """``<status>_attempts`` of every infrastructure status: the attempts that ended so,
    counted per attempt (:func:`evalnoise.runner.infra_policies.apply_infra_policy`)."""
    return tuple(f"{s}_attempts" for s in INFRA_STATUSES)


def outcome(name: str) -> Outcome:
    """The table's row of outcome ``name`` (KeyError naming the known ones)."""
    for o in _table():
        if o.name == name:
            return o
    raise KeyError(f"unknown outcome {name!r} (known: {', '.join(OUTCOMES)})")


def describe_statuses() -> str:
    """``ok, agent_error, timeout, …``: the statuses a trial row may hold, for help texts."""
    return ", ".join(STATUSES)
