"""``evalnoise analyze``: accuracy with both CIs, ICC(1,1) and the variance decomposition."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from evalnoise.cli._columns import add_column_options
from evalnoise.errors import InputError
from evalnoise.outcome_table import describe_statuses

if TYPE_CHECKING:
    import pandas as pd

    from evalnoise.trial_table import Columns

# numpy, pandas and the statistics (scipy) are imported where a command runs, not here:
# ``evalnoise analyze --help`` and the other commands' parsers need none of them.

HELP = "accuracy ± clustered CI, ICC(1,1) and variance components per group"


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "analyze",
        help=HELP,
        description=HELP + ". Reads CSV, JSONL or Parquet.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    p.add_argument("path", help="trial table: one row per (group, task, trial)")
    add_column_options(p)
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.add_argument(
        "--actions",
        metavar="FILE",
        help="the trials' actions (a pipeline's results/trials/AGENT/PROFILE/actions/*.parquet, "
        "or any table with the task, trial, step and action columns and the group column): "
        "trajectory consistency per group from each trial's last attempt; without it "
        "trajectories are not recorded",
    )
    p.add_argument("--confidence", type=float, default=0.95, help="CI level")
    p.add_argument(
        "--cluster-se",
        choices=["cr1", "miller"],
        default="cr1",
        help="task-clustered SE: CR1 (small-sample corrected, as statsmodels) "
        "or Miller (2024) uncorrected",
    )
    p.add_argument(
        "--quantile",
        choices=["normal", "t"],
        default="normal",
        help="critical value for the accuracy CI",
    )
    p.add_argument(
        "--convergence", action="store_true", help="add the ICC-over-trials convergence table"
    )
    p.add_argument(
        "--subsamples",
        type=int,
        default=200,
        help="random subsamples per trial count (with --convergence)",
    )
    p.add_argument("--seed", type=int, default=0, help="seed of the subsampling")
    p.add_argument(
        "--status",
        default="status",
        metavar="COL",
        help=f"column with each trial's status ({describe_statuses()}); when the file has "
        "it, every group's outcomes are counted and a group that crashed or failed too often "
        "is flagged",
    )
    p.add_argument(
        "--no-attribution",
        action="store_true",
        help="skip where-the-noise-comes-from (infra policy sensitivity, time blocks and "
        "hosts, flaky tasks, resource sensitivity), which runs when the table has a status, "
        "timestamp or host column",
    )
    facets = p.add_argument_group(
        "facets: every source of noise the table varied, in one variance model (G study)"
    )
    facets.add_argument(
        "--facets",
        metavar="COL[,COL…]",
        help="columns that are random facets crossed with the task (INNER:OUTER nests INNER "
        "in OUTER, e.g. judge:prompt); the JSON gains per group the G study (a variance "
        "component per effect, with its interval) and the D study (the total-error SE beside "
        "the task-clustered one, and projections); the trial column is then optional (scores "
        "sharing every facet's level are replicates)",
    )
    facets.add_argument(
        "--facet-costs",
        metavar="F=C[,F=C…]",
        help="cost per level of each facet (and 'trial' per score) for the D study's cheapest "
        "design (with --target-se)",
    )
    facets.add_argument(
        "--target-se", type=float, metavar="S", help="the SE the cheapest design must reach"
    )
    p.add_argument(
        "--max-tasks",
        type=int,
        metavar="N",
        help="tasks the benchmark has: no D-study design (the attribution's, --facets') has "
        "more, and one a target needs more for says so (default: the tasks of the table)",
    )
    p.add_argument(
        "--after-agent-failure",
        choices=["verdict", "failure"],
        default="verdict",
        help="a trial the verifier decided after its agent timed out or failed (the table's "
        "verified_after column): scored by that verdict, as the benchmarks do, or counted as "
        "the failure it was; the other reading is printed beside it",
    )
    p.add_argument(
        "--max-failure-rate",
        type=float,
        default=0.5,
        help="largest share of trials not ok with a score before a group is flagged",
    )
    p.set_defaults(run=run)


def with_outcomes(
    raw: pd.DataFrame, columns: Columns, status: str, path: str, rule: str = "verdict"
) -> tuple[pd.DataFrame, dict[str, pd.DataFrame]]:
    """The rows that count (a failed trial without a score counts as incorrect, as the
    pipeline's ``as_incorrect`` policy does; a trial waiting for a grader's verdict —
    :data:`evalnoise.outcomes.UNDECIDED`: an ``ok`` trial without a score, a
    ``verifier_error`` — is left out, never a 0), read under the ``after_agent_failure``
    ``rule`` (:func:`evalnoise.verified_after.apply_rule`), and each group's rows with the
    columns :func:`outcome_counts` and :func:`evalnoise.analysis.failure_readings` read
    (``task_id``, ``status``, ``exit_code``, ``score`` and the flags)."""
    import numpy as np
    import pandas as pd

    from evalnoise.outcomes import FLAGS, UNDECIDED, outcome_of
    from evalnoise.trial_table import to_scores
    from evalnoise.verified_after import apply_rule

    if status not in raw.columns:
        return raw, {}
    score = raw[columns.score] if columns.score in raw.columns else pd.Series(np.nan, raw.index)
    missing = score.isna() | score.astype("string").str.strip().eq("")
    state = raw[status].astype(str)
    values = to_scores(score.mask(missing), path, columns.score, allow_missing=True)
    view = pd.DataFrame(
        {
            "task_id": raw[columns.task].astype(str).to_numpy()
            if columns.task in raw.columns
            else "",
            # the trial labels, when the table has them (the multiverse pairs attempts by them)
            **({"trial": raw[columns.trial].to_numpy()} if columns.trial in raw.columns else {}),
            "status": state.to_numpy(),
            "exit_code": raw["exit_code"].to_numpy() if "exit_code" in raw else np.nan,
            "score": values,
            # the flags a trial row carries (evalnoise.outcome_table.FLAGS), counted beside
            **{name: raw[name].to_numpy() for name in FLAGS if name in raw.columns},
        }
    )
    groups = raw[columns.group].astype(str) if columns.group else pd.Series("all", raw.index)
    per_group = {str(g): view[(groups == g).to_numpy()] for g in groups.unique()}
    ruled = apply_rule(view, rule)
    undecided = np.isin(outcome_of(ruled).astype(str), UNDECIDED)
    counted = raw[~undecided].copy()
    if rule != "verdict":  # the verdicts the rule overrides: the failures' scores
        counted[status] = ruled["status"].to_numpy()[~undecided]
        counted[columns.score] = ruled["score"].to_numpy()[~undecided]
    failed = counted[columns.score].isna() & counted[status].astype(str).ne("ok")
    if failed.any():
        counted[columns.score] = counted[columns.score].astype(object)
        counted.loc[failed, columns.score] = 0
    return counted.reset_index(drop=True), per_group


def fixed_seeds(raw: pd.DataFrame, columns: Columns) -> dict[str, str]:
    """Groups whose every task ran all its trials with one seed (the table's ``seed``
    column: an Inspect log's generation seed), each with a description of the seed.

    The pipeline gives each trial its own seed, so this flags only tables that say the
    trials of a task were one seeded request repeated.
    """
    import pandas as pd

    from evalnoise.trial_table import trial_labels

    if "seed" not in raw.columns or columns.task not in raw.columns:
        return {}
    groups = raw[columns.group].astype(str) if columns.group else pd.Series("all", raw.index)
    out = {}
    for group in groups.unique():
        rows = raw[(groups == group).to_numpy()]
        if rows["seed"].isna().any():
            continue
        seeds = pd.Series(trial_labels(rows["seed"]), index=rows.index)  # 42.0 → "42"
        per_task = seeds.groupby(rows[columns.task].astype(str)).nunique()
        if len(per_task) and (per_task == 1).all():
            values = seeds.unique()
            out[str(group)] = f"seed {values[0]}" if len(values) == 1 else "seed per task"
    return out


#: Columns of a trial table that give the attribution something to attribute to.
ATTRIBUTION_EVIDENCE = ("status", "started_at", "ended_at", "host")


def attribution_of(source: pd.DataFrame, columns: Columns, status: str, args: Any) -> Any:
    """Where the noise comes from, for a table that records outcomes, times or hosts
    (:data:`ATTRIBUTION_EVIDENCE`): :func:`evalnoise.attribution.attribution_for_trials`,
    the implementation the pipeline's attribution stage runs; None for a table of scores
    alone, where every such analysis would only say it could not run."""
    present = {status if c == "status" else c for c in ATTRIBUTION_EVIDENCE} & set(source)
    if not present:
        return None
    from evalnoise.attribution import attribution_for_trials

    return attribution_for_trials(
        source,
        {
            "task": columns.task,
            "trial": columns.trial,
            "score": columns.score,
            "correct": None,
            "agent": columns.group,
            "resource_profile": None,
            "status": status if status in source.columns else None,
        },
        confidence=args.confidence,
        cluster_se=args.cluster_se,
        quantile=args.quantile,
        max_tasks=task_pool(source, columns, args),
    )


def actions_by_group(path: str, columns: Columns) -> dict[str, pd.DataFrame]:
    """group → its actions as :data:`evalnoise.consistency.ACTION_COLUMNS` (task, trial,
    step, action), read from ``path``: the task in the trial table's task column or
    ``task_id``, the group in its group column (one group ``all`` without one); of a trial
    with several attempts, the last attempt's. :class:`InputError` names a missing column."""
    import pandas as pd

    from evalnoise.trial_table import read_any, trial_labels

    table = read_any(path)
    task = columns.task if columns.task in table.columns else "task_id"
    missing = [c for c in (task, "trial", "step", "action") if c not in table.columns]
    if missing:
        raise InputError(f"the actions table lacks the columns {missing}", path=path)
    group = (
        table[columns.group].astype(str)
        if columns.group and columns.group in table.columns
        else pd.Series("all", index=table.index)
    )
    frame = pd.DataFrame(
        {
            "group": group.to_numpy(),
            "task": table[task].astype(str).to_numpy(),
            "trial": trial_labels(table["trial"]),
            "step": table["step"].to_numpy(),
            "action": table["action"].to_numpy(),
        }
    )
    if "attempt" in table.columns:
        attempt = table["attempt"].astype("int64").to_numpy()
        last = frame.assign(attempt=attempt).groupby(["group", "task", "trial"])["attempt"]
        frame = frame[attempt == last.transform("max").to_numpy()]
    return {
        str(g): part.drop(columns="group").reset_index(drop=True)
        for g, part in frame.groupby("group", sort=False)
    }


def task_pool(source: pd.DataFrame, columns: Columns, args: Any) -> int:
    """The tasks that exist, which no D-study design may exceed: ``--max-tasks``, else the
    tasks the table has."""
    if args.max_tasks is not None:
        if args.max_tasks < 1:
            raise InputError(f"--max-tasks must be a positive integer, got {args.max_tasks}")
        return int(args.max_tasks)
    return int(source[columns.task].nunique())


def run(args: argparse.Namespace) -> int:
    from evalnoise.analysis import convergence_records
    from evalnoise.cli._columns import announce, resolved_columns
    from evalnoise.formatting import dumps
    from evalnoise.trial_table import read_any, validate_trials

    source = read_any(args.path)
    # what the import that made the table could not take as it was (an incomplete job,
    # folders that are no trials): said here too, never left to the file's metadata alone
    import_warnings = [str(w) for w in (source.attrs.get("evalnoise") or {}).get("warnings") or ()]
    columns, used = resolved_columns(source, args, path=str(args.path))
    raw, per_group = with_outcomes(
        source, columns, args.status, str(args.path), args.after_agent_failure
    )
    facet_out = None
    if args.facets is not None:
        frame, facet_out = _facets(raw, columns, args)
        if columns.trial not in source.columns:
            used += f"; no {columns.trial!r} column: scores in a design cell are replicates"
    else:
        if args.facet_costs or args.target_se is not None:
            raise InputError("--facet-costs and --target-se need --facets")
        frame = validate_trials(raw, columns, path=str(args.path))
    announce("analyze", used)
    records = _group_records(frame, source, columns, per_group, facet_out, args)
    conv = (
        convergence_records(frame, n_subsamples=args.subsamples, seed=args.seed)
        if args.convergence
        else None
    )
    attribution = (
        None
        if args.no_attribution or columns.trial not in source.columns
        else attribution_of(source, columns, args.status, args)
    )
    if args.json:
        out: dict[str, Any] = {"groups": [r.to_dict() for r in records]}
        if import_warnings:
            out["import_warnings"] = import_warnings
        if conv is not None:
            out["convergence"] = conv
        if attribution is not None:
            out["attribution"] = attribution.to_dict()
        if facet_out is not None:
            out["gstudy"] = {k: v["gstudy"] for k, v in facet_out.items()}
            out["dstudy"] = {k: v["dstudy"] for k, v in facet_out.items()}
        print(dumps(out))
        return 0
    _print_text(records, import_warnings, attribution, facet_out, conv, args)
    return 0


def _group_records(
    frame: pd.DataFrame,
    source: pd.DataFrame,
    columns: Columns,
    per_group: dict[str, pd.DataFrame],
    facet_out: dict | None,
    args: argparse.Namespace,
) -> list[Any]:
    """Each group's typed record: its statistics, the fixed-seed warnings, its outcomes,
    health and readings (a group that did not measure the agent has its estimates withheld)
    and, unless withheld or analysed by facets, its reliability beyond the mean."""
    from dataclasses import replace

    from evalnoise.analysis import analyze_frame, failure_readings, fixed_seed_warnings
    from evalnoise.consistency import reliability_fields
    from evalnoise.group_records import GroupRecord
    from evalnoise.outcomes import assess_health
    from evalnoise.pipeline.stages import outcomes_with_flags

    actions = actions_by_group(args.actions, columns) if args.actions else None
    records = []
    seeded = fixed_seeds(source, columns)
    for record in map(
        GroupRecord.from_dict,
        analyze_frame(
            frame, confidence=args.confidence, cluster_se=args.cluster_se, quantile=args.quantile
        ),
    ):
        if record.group in seeded:
            record = replace(
                record, warnings=fixed_seed_warnings(record.warnings, seeded[record.group])
            )
        if record.group in per_group:
            view = per_group[record.group]
            outcomes = outcomes_with_flags(view, args.after_agent_failure)
            health = assess_health(outcomes, max_failure_rate=args.max_failure_rate)
            readings = failure_readings(
                view,
                confidence=args.confidence,
                cluster_se=args.cluster_se,
                quantile=args.quantile,
            )
            if not health.valid:
                # not a measurement of the agent: no headline, the reason in its place
                reason = "not a measurement of the agent (" + "; ".join(health.reasons) + ")"
                record = record.with_estimates_withheld(reason)
            record = replace(
                record,
                readings=readings,
                outcomes=outcomes,
                health=health.to_dict(),
            )
        if not record.withheld and facet_out is None:
            # pass^k, C_out and (with the trials' outcomes) the multiverse
            view = per_group.get(record.group)
            record = replace(
                record,
                **reliability_fields(
                    frame[frame["group"].astype(str) == record.group],
                    view if view is not None and "trial" in view.columns else None,
                    confidence=args.confidence,
                    actions=None if actions is None else actions.get(str(record.group)),
                ),
            )
        records.append(record)
    return records


def _print_text(
    records: list[Any],
    import_warnings: list[str],
    attribution: Any,
    facet_out: dict | None,
    conv: list[dict] | None,
    args: argparse.Namespace,
) -> None:
    """The command's text output: the table of groups, each group's lines, the attribution,
    the facets and the convergence table."""
    from evalnoise.attribution.text import attribution_lines, resource_line
    from evalnoise.consistency_text import reliability_lines
    from evalnoise.formatting import fmt, pct, table
    from evalnoise.group_text import readings_text, reporting_line
    from evalnoise.outcomes import failed_trials, outcome_line
    from evalnoise.trial_table import shown_group

    rows = [
        [
            shown_group(r.group),
            r.n_tasks,
            r.n_obs,
            pct(r.mean),
            f"[{pct(r.ci_low)}, {pct(r.ci_high)}]",
            fmt(r.design_effect, ".2f"),
            fmt(r.icc),
            f"[{fmt(r.icc_ci_low, '.2f')}, {fmt(r.icc_ci_high, '.2f')}]",
            fmt(r.icc_plugin),
            fmt(r.sigma2_between, ".4f"),
            fmt(r.sigma2_within, ".4f"),
            r.interpretation,
        ]
        for r in records
    ]
    for line in import_warnings:
        print(f"warning: {line}")
    print(
        table(
            rows,
            [
                "group",
                "tasks",
                "obs",
                "accuracy",
                f"{args.confidence:.0%} CI",
                "deff",
                "ICC",
                "ICC CI",
                "ICC plugin",
                "σ²_between",
                "σ²_within",
                "reliability",
            ],
        )
    )
    print()
    for r in records:
        print(f"{shown_group(r.group)}: {reporting_line(r, args.confidence)}")
        if r.outcomes is not None:
            print(f"  outcomes: {outcome_line(r.outcomes)}")
            if not r.health["valid"]:
                print("  NOT A MEASUREMENT OF THE AGENT: " + "; ".join(r.health["reasons"]))
            verified = "verified_as_failures" in (r.readings or {})
            if r.withheld or failed_trials(r.outcomes) or verified:
                print(f"  readings: {readings_text(r.readings)}")
        for line in reliability_lines(r):
            print(f"  {line}")
        summary = attribution.summary.get(str(r.group)) if attribution is not None else None
        if isinstance(summary, dict) and "not_computed" not in summary:
            print("".join(f"  {line}\n" for line in attribution_lines(summary)), end="")
        for w in r.warnings:
            print(f"  warning: {w}", file=sys.stderr)
    if attribution is not None:
        for resource in attribution.summary.get("_resource") or ():
            print(resource_line(resource))
        for skipped in attribution.not_run:
            print(f"not run: {skipped.check} ({skipped.scope}): {skipped.reason}")
    if facet_out is not None:
        _print_facets(facet_out, args.confidence)
    if conv is not None:
        print()
        keys = [k for k in conv[0] if k not in ("group", "converged_at")] if conv else []
        print(
            table(
                [
                    [c["group"], *[fmt(c[k]) if isinstance(c[k], float) else c[k] for k in keys]]
                    for c in conv
                ],
                ["group", *keys],
            )
        )


def _facets(raw: pd.DataFrame, columns: Columns, args: Any) -> tuple[pd.DataFrame, dict]:
    """The standard frame (a trial per row; trials numbered within each task when the file
    has no trial column) and the per-group G and D studies of ``--facets``."""
    from evalnoise.facets import facet_frame, facet_records, parse_costs, parse_facet_specs

    specs = parse_facet_specs(args.facets)
    frame = facet_frame(
        raw, task=columns.task, score=columns.score, group=columns.group, specs=specs,
        path=str(args.path),
    )  # fmt: skip
    if args.target_se is not None and not args.target_se > 0:
        raise InputError("--target-se must be > 0")
    out = facet_records(
        frame,
        task=columns.task,
        specs=specs,
        confidence=args.confidence,
        costs=parse_costs(args.facet_costs),
        target_se=args.target_se,
        max_tasks=task_pool(raw, columns, args),
    )
    standard = frame[["group", "task", "score"]].copy()
    standard["trial"] = standard.groupby(["group", "task"]).cumcount().astype(str)
    return standard, out


def _print_facets(facet_out: dict, confidence: float) -> None:
    from evalnoise.design_text import choice_text
    from evalnoise.formatting import fmt, table
    from evalnoise.trial_table import shown_group

    for group, rec in facet_out.items():
        print()
        if rec["gstudy"] is None:
            print(f"{shown_group(group)}: G study not computed ({rec['not_computed']})")
            continue
        g, te = rec["gstudy"], rec["dstudy"]["total_error"]
        print(f"{shown_group(group)}: G study of {g['design']} ({g['method']}, {g['ci_method']})")
        rows = [
            [
                c["component"],
                fmt(c["sigma2"], ".4g"),
                f"[{fmt(c['ci_low'], '.3g')}, {fmt(c['ci_high'], '.3g')}]",
                fmt(c["share"], ".2f") if c["detected"] else "not detected",
            ]
            for c in g["components"]
        ]
        print(table(rows, ["component", "σ²", f"{confidence:.0%} CI", "share"]))
        print(
            f"total-error SE {fmt(te['se'], '.4f')} (df {fmt(te['df'], '.1f')}; "
            f"{confidence:.0%} CI [{fmt(te['ci_low'])}, {fmt(te['ci_high'])}]) vs "
            f"task-clustered SE {fmt(te['se_clustered'], '.4f')}"
        )
        cheapest = rec["dstudy"].get("cheapest")
        if cheapest:
            print(choice_text(cheapest))
