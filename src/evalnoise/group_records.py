"""The typed record of one group (agent @ resource profile): what every layer reads.

:class:`GroupRecord` is built once from the statistics' results
(:func:`evalnoise.analysis.group_record`: :class:`~evalnoise.stats.AccuracyResult` and
:class:`~evalnoise.stats.icc.ICCResult`, under their own names), completed by the layers that
know more (the readings, the outcomes and health, the group's identity, its judges and
costs), serialised once (:meth:`GroupRecord.to_dict`) and read back typed
(:meth:`GroupRecord.from_dict`) by the summary, the cards and the command line. Its field
names ARE the keys of the artifacts that hold it:

- an entry of ``groups`` in ``evalnoise analyze --json``;
- an entry of ``groups`` and of ``levels`` in ``results/analysis/groups.json``
  (and ``overall`` and each of ``levels`` in a group's ``stats.json``).

No layer renames a field. ``metrics.json``'s per-group entry is its own record,
:class:`GroupMetrics`, made from a :class:`GroupRecord` in one place
(:meth:`GroupMetrics.from_record`): DVC's metrics name the headline ``accuracy``.
``tests/test_group_records.py`` fails when a key of any of these artifacts has no field, or
a field no key.

A field that only some layers fill (:data:`OPTIONAL_FIELDS`: the readings, the outcomes,
the judge, …) is left out of the serialised record while it is None, so an artifact says
only what its layer knows (a table without statuses has no ``outcomes``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from typing import Any

from evalnoise.outcome_table import FLAGS, OUTCOMES

__all__ = [
    "ESTIMATE_FIELDS",
    "OPTIONAL_FIELDS",
    "GroupMetrics",
    "GroupRecord",
    "MetricsReading",
    "Reading",
]


@dataclass(frozen=True)
class Reading:
    """A labelled reading of a group's accuracy that no headline stands for
    (:func:`evalnoise.analysis.failure_readings`): μ̂ over the trials in it, its
    task-clustered CI, and how many trials and tasks it counts (None estimates when none)."""

    mean: float | None
    ci_low: float | None
    ci_high: float | None
    n_trials: int
    n_tasks: int

    def to_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Reading:
        return cls(**_known(cls, data, "reading"))


def _optional() -> Any:
    return field(default=None, metadata={"optional": True})


@dataclass(frozen=True)
class GroupRecord:
    """One group's numbers and what became of its trials.

    The estimates (:data:`ESTIMATE_FIELDS`; None in an undefined or withheld record):
    ``mean`` (μ̂, the mean of the task means: each task weighs 1), ``mean_pooled`` (the mean
    over all trials, paper eq. 2), ``se_naive`` and ``se_clustered`` (eq. 3–4), ``ci_low``
    and ``ci_high`` (the clustered interval, or the Wilson fallback ``ci_method`` names),
    ``design_effect``; the ICC(1,1) ``icc`` with ``icc_ci_low``, ``icc_ci_high``, ``icc_se``
    (Bonett), ``icc_k``, ``icc_plugin``, its F test (``statistic``, ``df1``, ``df2``,
    ``pvalue``), ``n0``, ``sigma2_between``, ``sigma2_within``; and ``between_query_se``
    (paper eq. 11). ``interpretation`` is the ICC's band, or ``undefined`` / ``withheld``.

    The rest: ``withheld`` (why a group that is not a measurement of the agent has no
    headline), ``readings`` (name → :class:`Reading`), ``agent``, ``resource_profile`` and
    ``level`` (the group's identity; ``level`` in a per-level record), ``outcomes`` (count
    per outcome, :func:`evalnoise.outcomes.outcome_counts`), ``health``
    (:meth:`evalnoise.outcomes.Health.to_dict`), ``crash_signals``, ``judge`` (the judges'
    summary, :func:`evalnoise.pipeline.summary.judge_summary`), ``costs`` (the cost drivers,
    :func:`evalnoise.costs.combine_costs`), ``task_failures`` (the tasks every trial of which
    failed the same way, e.g. an image build: :func:`evalnoise.infra_failures.task_failures`);
    the reliability beyond the mean
    (:func:`evalnoise.consistency.reliability_fields`, None when withheld): ``pass_k``
    (pass^k and pass@k for k = 1…T with task-clustered intervals), ``outcome_consistency``
    (mean C_out = (2p̂ − 1)²), ``multiverse`` (the headline under every combination of
    the analysis choices, its ``cells``, with the range and the choice that moves it most;
    the infra policy and, with a judge stage, the scorer among the choices) and
    ``trajectory_consistency`` (the counted trials' action sequences: distinct
    sequences per task, normalised edit distance, step of first divergence, the accuracy of
    consistent against inconsistent tasks, each mean with its interval;
    :func:`evalnoise.consistency.trajectory_fields`, ``recorded`` false when no trial
    recorded one).
    """

    group: str
    n_tasks: int
    n_obs: int
    mean: float | None = None
    mean_pooled: float | None = None
    se_naive: float | None = None
    se_clustered: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    ci_method: str | None = None
    design_effect: float | None = None
    icc: float | None = None
    icc_ci_low: float | None = None
    icc_ci_high: float | None = None
    icc_se: float | None = None
    icc_k: float | None = None
    icc_plugin: float | None = None
    statistic: float | None = None
    df1: float | None = None
    df2: float | None = None
    pvalue: float | None = None
    n0: float | None = None
    sigma2_between: float | None = None
    sigma2_within: float | None = None
    interpretation: str = "undefined"
    warnings: tuple[str, ...] = ()
    between_query_se: float | None = None
    withheld: str | None = _optional()
    readings: Mapping[str, Reading] | None = _optional()
    agent: str | None = _optional()
    resource_profile: str | None = _optional()
    level: str | None = _optional()
    outcomes: Mapping[str, int] | None = _optional()
    health: Mapping[str, Any] | None = _optional()
    crash_signals: Mapping[str, int] | None = _optional()
    judge: Mapping[str, Any] | None = _optional()
    costs: Mapping[str, Any] | None = _optional()
    task_failures: Sequence[Mapping[str, Any]] | None = _optional()
    pass_k: Mapping[str, Any] | None = _optional()
    outcome_consistency: Mapping[str, Any] | None = _optional()
    multiverse: Mapping[str, Any] | None = _optional()
    trajectory_consistency: Mapping[str, Any] | None = _optional()

    def to_dict(self) -> dict[str, Any]:
        """The record as its artifacts hold it: every field under its own name, an optional
        field only when set; NaN as None; readings as dicts; warnings as a list."""
        out: dict[str, Any] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if value is None and f.metadata.get("optional"):
                continue
            if f.name == "readings":
                value = {k: r.to_dict() for k, r in value.items()}
            elif f.name == "warnings":
                value = list(value)
            elif isinstance(value, float) and not math.isfinite(value):
                value = None
            out[f.name] = value
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> GroupRecord:
        """A record read back from an artifact (:meth:`to_dict`'s output); a key that is no
        field is an error naming it."""
        values = _known(cls, data, "group record")
        if values.get("readings") is not None:
            values["readings"] = {
                k: r if isinstance(r, Reading) else Reading.from_dict(r)
                for k, r in values["readings"].items()
            }
        values["warnings"] = tuple(values.get("warnings") or ())
        return cls(**values)

    @property
    def headline(self) -> float | None:
        """The accuracy a reader may quote: ``mean``, None when withheld or undefined."""
        return None if self.withheld else self.mean

    def with_estimates_withheld(self, reason: str) -> GroupRecord:
        """This record with every estimate (:data:`ESTIMATE_FIELDS`) None and ``withheld``
        the reason: a group that is not a measurement of the agent has no headline."""
        return replace(
            self,
            **dict.fromkeys(ESTIMATE_FIELDS),
            interpretation="withheld",
            withheld=reason,
        )


#: The numbers of a record: None in an undefined or withheld record (its counts, its ICC
#: band and its warnings are no estimate).
ESTIMATE_FIELDS = tuple(
    f.name
    for f in fields(GroupRecord)
    if not f.metadata.get("optional")
    and f.name not in ("group", "n_tasks", "n_obs", "interpretation", "warnings")
)
#: The fields a layer fills only when it knows them: absent from an artifact while None.
OPTIONAL_FIELDS = tuple(f.name for f in fields(GroupRecord) if f.metadata.get("optional"))


def _known(cls: type, data: Mapping[str, Any], what: str) -> dict[str, Any]:
    names = {f.name for f in fields(cls)}
    unknown = sorted(set(data) - names)
    if unknown:
        raise ValueError(
            f"{what} {data.get('group', '')!r}: keys {unknown} are no field of {cls.__name__} "
            f"(evalnoise.group_records)"
        )
    return dict(data)


def _num(value: Any, digits: int = 6) -> float | None:
    """``value`` rounded to ``digits`` (stable across platforms), None when undefined."""
    if value is None:
        return None
    f = float(value)
    return round(f, digits) if math.isfinite(f) else None


@dataclass(frozen=True)
class MetricsReading:
    """A labelled reading as ``metrics.json`` holds it."""

    accuracy: float | None
    ci_low: float | None
    ci_high: float | None
    n_trials: int


#: The trajectory numbers of a group's ``metrics.json`` entry (DVC tracks them).
TRAJECTORY_METRICS = (
    "mean_distinct",
    "mean_edit_distance",
    "mean_first_divergence",
    "accuracy_consistent",
    "accuracy_inconsistent",
)


@dataclass(frozen=True)
class GroupMetrics:
    """A group's entry of ``results/metrics.json`` (DVC's metrics): the headline, its CI,
    the ICC, the infra error rate, the counts and whether the group is a measurement.

    ``accuracy`` is :attr:`GroupRecord.headline` (the record's ``mean``; None when withheld),
    ``n_trials`` the record's ``n_obs``; ``valid`` says the group measured the agent with
    every trial decided (``measurement`` without the second half). The optional fields are
    present only when they say something: ``incomplete``, ``withheld``, ``readings`` (a group
    with failures or withheld), the total-error SE of the D study, the attribution's
    ``infra_share``/``policy_moves_result``/``flaky_tasks``, ``judge``, and the reliability
    beyond the mean: ``pass_hat_k`` (k → pass^k), ``outcome_consistency`` (mean C_out),
    ``multiverse_spread`` (how far the analysis choices move the headline) and
    ``trajectory_consistency`` (the means of :data:`TRAJECTORY_METRICS`, when trajectories
    were recorded).
    """

    accuracy: float | None
    ci_low: float | None
    ci_high: float | None
    icc: float | None
    icc_ci_low: float | None
    icc_ci_high: float | None
    infra_error_rate: float | None
    n_tasks: int
    n_trials: int
    valid: bool
    measurement: bool
    expected_failures: bool
    outcomes: Mapping[str, int]
    incomplete: tuple[str, ...] | None = _optional()
    withheld: str | None = _optional()
    readings: Mapping[str, MetricsReading] | None = _optional()
    total_error_se: float | None = _optional()
    total_error_ci_low: float | None = _optional()
    total_error_ci_high: float | None = _optional()
    se_clustered: float | None = _optional()
    infra_share: float | None = _optional()
    policy_moves_result: bool | None = _optional()
    flaky_tasks: int | None = _optional()
    judge: Mapping[str, Any] | None = _optional()
    pass_hat_k: Mapping[str, float | None] | None = _optional()
    outcome_consistency: float | None = _optional()
    multiverse_spread: float | None = _optional()
    trajectory_consistency: Mapping[str, float | None] | None = _optional()

    @classmethod
    def from_record(
        cls,
        record: GroupRecord,
        *,
        infra_error_rate: float | None,
        show_readings: bool,
        noise: Mapping[str, Any] | None = None,
        attribution: Mapping[str, Any] | None = None,
    ) -> GroupMetrics:
        """The metrics of ``record`` (rounded to 6 digits: stable across platforms).

        ``show_readings``: the group has failures or is withheld (its readings go beside
        the nulls); ``noise``: the attribution's noise model, whose D-study total error is
        shown beside a headline that is not withheld; ``attribution``: the group's entry of
        the attribution summary when it computed the infrastructure's share."""
        health = record.health or {}
        total = (
            noise["dstudy"]["total_error"]
            if noise and noise.get("dstudy") and not record.withheld
            else None
        )
        judge = record.judge
        return cls(
            accuracy=_num(record.headline),
            ci_low=_num(record.ci_low),
            ci_high=_num(record.ci_high),
            icc=_num(record.icc),
            icc_ci_low=_num(record.icc_ci_low),
            icc_ci_high=_num(record.icc_ci_high),
            infra_error_rate=_num(infra_error_rate),
            n_tasks=int(record.n_tasks),
            n_trials=int(record.n_obs),
            valid=bool(health.get("valid")) and not health.get("incomplete"),
            measurement=bool(health.get("valid")),
            expected_failures=bool(health.get("expected")),
            outcomes={
                k: int(record.outcomes[k])
                for k in (*OUTCOMES, "trials", "unjudged", *FLAGS)
                if k in (record.outcomes or {})
            },
            incomplete=tuple(health["incomplete"]) if health.get("incomplete") else None,
            withheld=record.withheld or None,
            readings=(
                {
                    name: MetricsReading(
                        accuracy=_num(r.mean),
                        ci_low=_num(r.ci_low),
                        ci_high=_num(r.ci_high),
                        n_trials=int(r.n_trials),
                    )
                    for name, r in (record.readings or {}).items()
                }
                if show_readings
                else None
            ),
            total_error_se=None if total is None else _num(total["se"]),
            total_error_ci_low=None if total is None else _num(total["ci_low"]),
            total_error_ci_high=None if total is None else _num(total["ci_high"]),
            se_clustered=None if total is None else _num(total.get("se_clustered")),
            infra_share=None if attribution is None else _num(attribution["infra_share"]),
            policy_moves_result=(
                None if attribution is None else bool(attribution["policy_moves_result"])
            ),
            flaky_tasks=None if attribution is None else int(attribution["flaky_flagged"]),
            judge=None if judge is None else _judge_metrics(judge),
            pass_hat_k=(
                None
                if not record.pass_k or record.withheld
                else {
                    str(k): _num(v)
                    for k, v in zip(record.pass_k["k"], record.pass_k["pass_hat"], strict=True)
                }
            ),
            outcome_consistency=(
                None
                if not record.outcome_consistency or record.withheld
                else _num(record.outcome_consistency["statistic"])
            ),
            multiverse_spread=(
                None
                if not record.multiverse or record.withheld
                else _num(record.multiverse["spread"])
            ),
            trajectory_consistency=(
                None
                if not (record.trajectory_consistency or {}).get("recorded") or record.withheld
                else {
                    name: _num(record.trajectory_consistency.get(name))
                    for name in TRAJECTORY_METRICS
                }
            ),
        )

    def to_dict(self) -> dict[str, Any]:
        """The entry as ``metrics.json`` holds it (an optional field only when set)."""
        out: dict[str, Any] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if value is None and f.metadata.get("optional"):
                continue
            if f.name == "readings":
                value = {k: vars(r).copy() for k, r in value.items()}
            elif f.name == "incomplete":
                value = list(value)
            out[f.name] = value
        return out


def _judge_metrics(j: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {k: _num(j.get(k)) for k in ("accuracy", "kappa", "parse_rate")}
    out["share_judge"] = _num(j.get("share_judge"))
    out["unjudged"] = int(j.get("unjudged") or 0)
    if len(j.get("judges") or ()) > 1:
        out["kappa_by_judge"] = {r["name"]: _num(r["kappa"]) for r in j["judges"]}
    return out
