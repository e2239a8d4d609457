"""What a report is built from, as one typed record: :class:`ReportInputs`.

Every input of :func:`evalnoise.report.build_report` is a field here, named once and read by
the sections under the same name:

=======================  ===================================================================
field                    what it holds
=======================  ===================================================================
``groups``               one statistics record per agent × resource profile (``groups.json``)
``card_context``         run-level facts for the Evaluation Cards
``levels``               per-level statistics records (group record keys plus ``level``)
``per_task``             ``group, task, n, mean, ci_low, ci_high`` (``per_task.csv``)
``convergence``          the convergence table with a ``group`` column (``convergence.csv``)
``budget``               ``n_tasks, trials, se`` [``group``, ``recommended``]; rows with an
                         undefined ``se`` dropped (``budget.csv``)
``infra``                one row per agent × resource profile (``resource_profiles.csv``)
``comparisons``          ``a, b, diff, ci_low, ci_high`` [``pvalue_holm``, ``kind``]
``skipped_comparisons``  pairs not compared, each ``kind, within, a, b, reason``
``attribution``          :class:`~evalnoise.attribution.AttributionTables`, or None: the
                         section "Where the noise comes from" was not computed
``manifest``             the run manifest (``manifest.json``), or None
``sequential``           an adaptive run's summary (``results/sequential/summary.json``)
``sequential_rounds``    its round table (``rounds.csv``)
=======================  ===================================================================

Tables are a :class:`pandas.DataFrame` with rows, or None (an empty table and a missing one
take the same path); records are tuples of mappings. Three ways in:

- :meth:`ReportInputs.read` loads the report rule's files (the I/O edge);
- :meth:`ReportInputs.of` takes the loose forms a Python caller has at hand (records or
  frames, the whole ``comparisons.json`` mapping, attribution tables or a mapping of them)
  and normalises them;
- the constructor takes the normalised forms and checks them (types; no empty table).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from evalnoise.attribution.all_analyses import (
    FLAKY_COLUMNS,
    RESOURCE_COLUMNS,
    AttributionTables,
    read_attribution,
)
from evalnoise.errors import InputError
from evalnoise.report.cards import CardContext

__all__ = ["COMPARISON_KIND_LABELS", "Records", "ReportInputs", "frame_or_none"]

#: A sequence of records as the report keeps it.
Records = tuple[Mapping[str, Any], ...]

#: How the pipeline's comparison kinds (``comparisons.json``) read in the report.
COMPARISON_KIND_LABELS = {
    "agents": "agent pairs (same resource profile)",
    "resource_profiles": "resource-profile pairs (same agent)",
}

#: The columns of a comparison record the report reads from ``comparisons.json``.
_COMPARISON_COLUMNS = ("a", "b", "diff", "ci_low", "ci_high")

_FRAMES = ("per_task", "convergence", "budget", "infra", "comparisons")
_RECORDS = ("groups", "levels", "skipped_comparisons", "sequential_rounds")
_MAPPINGS = ("manifest", "sequential")


def frame_or_none(
    value: pd.DataFrame | Sequence[Mapping[str, Any]] | None,
) -> pd.DataFrame | None:
    """``value`` (a frame, or records) as a frame; None when it is None or has no rows."""
    if value is None:
        return None
    frame = value if isinstance(value, pd.DataFrame) else pd.DataFrame.from_records(list(value))
    return None if frame.empty else frame


@dataclass(frozen=True, eq=False)
class ReportInputs:
    """Everything a report shows (the module's table says what each field holds).

    ``eq=False``: the fields hold frames, which have no single truth value; two inputs are
    the same object or different ones."""

    groups: Records
    card_context: CardContext
    levels: Records = ()
    per_task: pd.DataFrame | None = None
    convergence: pd.DataFrame | None = None
    budget: pd.DataFrame | None = None
    infra: pd.DataFrame | None = None
    comparisons: pd.DataFrame | None = None
    skipped_comparisons: Records = ()
    attribution: AttributionTables | None = None
    manifest: Mapping[str, Any] | None = None
    sequential: Mapping[str, Any] | None = None
    sequential_rounds: Records = ()

    def __post_init__(self) -> None:
        for name in _FRAMES:
            value = getattr(self, name)
            if value is not None and not isinstance(value, pd.DataFrame):
                raise TypeError(
                    f"report inputs: {name} must be a DataFrame or None, got "
                    f"{type(value).__name__} (ReportInputs.of converts records)"
                )
            if value is not None and value.empty:
                # an empty table and a missing one must take the same path in every section
                raise ValueError(f"report inputs: {name} has no rows (None says there is none)")
        for name in _RECORDS:
            value = getattr(self, name)
            if not isinstance(value, tuple) or not all(isinstance(r, Mapping) for r in value):
                raise TypeError(f"report inputs: {name} must be a tuple of mappings")
        for name in _MAPPINGS:
            value = getattr(self, name)
            if value is not None and not isinstance(value, Mapping):
                raise TypeError(
                    f"report inputs: {name} must be a mapping or None, got {type(value).__name__}"
                )
        if not isinstance(self.card_context, CardContext):
            raise TypeError("report inputs: card_context must be a CardContext")
        if self.attribution is not None and not isinstance(self.attribution, AttributionTables):
            raise TypeError(
                "report inputs: attribution must be AttributionTables or None, got "
                f"{type(self.attribution).__name__} (ReportInputs.of converts a mapping)"
            )
        if not self.groups:
            raise ValueError("report inputs: no group records")

    @classmethod
    def of(
        cls,
        *,
        groups: Sequence[Mapping[str, Any]],
        card_context: CardContext,
        levels: Sequence[Mapping[str, Any]] = (),
        per_task: pd.DataFrame | Sequence[Mapping[str, Any]] | None = None,
        convergence: pd.DataFrame | Sequence[Mapping[str, Any]] | None = None,
        budget: pd.DataFrame | Sequence[Mapping[str, Any]] | None = None,
        infra: pd.DataFrame | Sequence[Mapping[str, Any]] | None = None,
        comparisons: pd.DataFrame | Sequence[Mapping[str, Any]] | Mapping[str, Any] | None = None,
        skipped_comparisons: Sequence[Mapping[str, Any]] = (),
        attribution: AttributionTables | Mapping[str, Any] | None = None,
        manifest: Mapping[str, Any] | None = None,
        sequential: Mapping[str, Any] | None = None,
        sequential_rounds: Sequence[Mapping[str, Any]] = (),
    ) -> ReportInputs:
        """The inputs from what a Python caller has at hand, normalised.

        Tables: a frame or records (:func:`evalnoise.analysis.compare_all_pairs`,
        :func:`evalnoise.analysis.convergence_records`, ...), empty as None. ``comparisons``
        may be the whole ``comparisons.json`` (``{"comparisons": [...], "skipped": [...]}``):
        its skipped pairs follow ``skipped_comparisons``. ``budget`` rows whose ``se`` is
        not finite are dropped (an undefined SE is named under the chart, never drawn).
        ``attribution``: :class:`~evalnoise.attribution.AttributionTables` (from
        :func:`~evalnoise.attribution.attribution_for_trials` or
        :func:`~evalnoise.attribution.read_attribution`), or a mapping with ``summary``,
        ``resource``, ``flaky`` [, ``problems``]; a table lacking the columns the report
        reads is dropped and named in ``problems``."""
        skipped = [dict(r) for r in skipped_comparisons]
        if isinstance(comparisons, Mapping):
            skipped += [dict(r) for r in comparisons.get("skipped") or ()]
            comparisons = comparisons.get("comparisons")
        budget = frame_or_none(budget)
        if budget is not None and "se" in budget.columns:
            se = pd.to_numeric(budget["se"], errors="coerce")
            budget = frame_or_none(budget[np.isfinite(se.to_numpy(dtype=float))])
        return cls(
            groups=tuple(groups),
            card_context=card_context,
            levels=tuple(levels),
            per_task=frame_or_none(per_task),
            convergence=frame_or_none(convergence),
            budget=budget,
            infra=frame_or_none(infra),
            comparisons=frame_or_none(comparisons),
            skipped_comparisons=tuple(skipped),
            attribution=_attribution(attribution),
            manifest=manifest,
            sequential=sequential,
            sequential_rounds=tuple(sequential_rounds),
        )

    @classmethod
    def read(
        cls,
        card_context: CardContext,
        *,
        groups: str | os.PathLike[str],
        comparisons: str | os.PathLike[str],
        convergence: str | os.PathLike[str],
        budget: str | os.PathLike[str],
        profiles: str | os.PathLike[str],
        per_task: str | os.PathLike[str],
        manifest: str | os.PathLike[str],
        attribution: str | os.PathLike[str] | None = None,
        resource_sensitivity: str | os.PathLike[str] | None = None,
        flaky_tasks: str | os.PathLike[str] | None = None,
        sequential: Sequence[str | os.PathLike[str]] = (),
    ) -> ReportInputs:
        """The inputs from the report rule's files (keywords named as the rule's inputs).

        ``groups.json`` gives ``groups`` and ``levels``; ``comparisons.json`` the
        comparisons (their kinds labelled with :data:`COMPARISON_KIND_LABELS`) and the
        skipped pairs; ``resource_profiles.csv`` (``profiles``) the ``infra`` table. The
        attribution files are read with :func:`~evalnoise.attribution.read_attribution`: a
        missing or invalid one is named in ``attribution.problems`` (and in the report),
        never an error. ``sequential``: ``[summary.json, rounds.csv]`` in sequential mode,
        else empty. A JSON file that is unreadable or lacks a key raises
        :class:`~evalnoise.errors.InputError` naming the file and the key."""
        grouped = _json_object(groups)
        pairs = _json_object(comparisons)
        compared = [
            {
                **{k: _field(r, k, comparisons) for k in _COMPARISON_COLUMNS},
                "pvalue_holm": r.get("pvalue_holm"),
                "kind": _kind_label(_field(r, "kind", comparisons)),
            }
            for r in _field(pairs, "comparisons", comparisons)
        ]
        skipped = [
            {**r, "kind": _kind_label(_field(r, "kind", comparisons))}
            for r in pairs.get("skipped", [])
        ]
        summary, rounds = None, ()
        if sequential:
            summary_path, rounds_path = sequential
            summary = _json_object(summary_path)
            rounds = tuple(pd.read_csv(rounds_path).to_dict("records"))
        return cls.of(
            groups=_field(grouped, "groups", groups),
            card_context=card_context,
            levels=_field(grouped, "levels", groups),
            per_task=pd.read_csv(per_task),
            convergence=pd.read_csv(convergence),
            budget=pd.read_csv(budget),
            infra=pd.read_csv(profiles),
            # a frame of the records as written, so the comparisons' columns keep their order
            comparisons=pd.DataFrame(compared),
            skipped_comparisons=skipped,
            attribution=read_attribution(attribution, resource_sensitivity, flaky_tasks),
            manifest=_json_object(manifest),
            sequential=summary,
            sequential_rounds=rounds,
        )


def _kind_label(kind: Any) -> Any:
    return COMPARISON_KIND_LABELS.get(kind, kind)


def _json_object(path: str | os.PathLike[str]) -> dict[str, Any]:
    """A JSON file holding an object; :class:`InputError` naming the file otherwise."""
    try:
        with open(path, encoding="utf-8") as handle:
            value = json.load(handle)
    except (OSError, ValueError) as exc:
        raise InputError(f"cannot read the report input: {exc}", path=os.fspath(path)) from exc
    if not isinstance(value, dict):
        raise InputError(
            f"expected a JSON object, got {type(value).__name__}", path=os.fspath(path)
        )
    return value


def _field(record: Mapping[str, Any], key: str, path: str | os.PathLike[str]) -> Any:
    """``record[key]``; :class:`InputError` naming the file and the key when it is absent."""
    if key not in record:
        raise InputError("missing key", path=os.fspath(path), column=key)
    return record[key]


def _attribution(value: Any) -> AttributionTables | None:
    """The attribution input as :class:`AttributionTables` with the columns the report reads:
    the tables themselves, or a mapping with ``summary``, ``resource``, ``flaky``
    [, ``problems``]. A table lacking the columns the section reads is dropped and named in
    ``problems``; a summary that is not an object is named and left empty."""
    if value is None:
        return None
    if isinstance(value, AttributionTables):
        summary, problems = value.summary, list(value.problems)
        parts = {"resource": value.resource, "flaky": value.flaky}
    elif isinstance(value, Mapping):
        summary, problems = value.get("summary"), [str(p) for p in value.get("problems") or ()]
        parts = {"resource": value.get("resource"), "flaky": value.get("flaky")}
    else:
        raise TypeError(
            "attribution: expected AttributionTables or a mapping with summary, resource and "
            f"flaky, got {type(value).__name__}"
        )
    if not isinstance(summary, Mapping):
        problems.append("attribution summary: missing or not an object")
        summary = {}
    tables = {}
    for name, required in (("resource", RESOURCE_COLUMNS), ("flaky", FLAKY_COLUMNS)):
        frame = frame_or_none(parts[name])
        missing = [] if frame is None else [c for c in required if c not in frame.columns]
        if missing:
            problems.append(f"{name} table: invalid (lacks column(s) {', '.join(missing)})")
            frame = None
        tables[name] = pd.DataFrame() if frame is None else frame
    return AttributionTables(summary=summary, problems=tuple(problems), **tables)
