"""Which files each rule reads and each target names: the logic of the workflow's input
functions.

A :class:`Wiring` turns a :class:`evalnoise.pipeline.run_plan.RunPlan` into file lists. It
knows the rules' output patterns only through ``outputs`` (rule name → its named output
patterns, as the rules declare them) and the sequential checkpoint only through
``round_record`` (round label → the path of its record; until the round has run, the caller
raises Snakemake's incomplete-checkpoint signal there). So ``rules/common.smk`` hands it two
small lookups and its input functions are this class's methods; nothing here imports
Snakemake, and the tests give it plain dicts.

Which shards a group has: the fixed design's
(:meth:`evalnoise.pipeline.shard_plan.ShardPlan.shards`), or in sequential mode the design
decided by the rounds so far (:func:`evalnoise.pipeline.sequential.shard_ranges` of each
round's rectangles). Which scores the statistics read: the reference scorer's shards, or with
``analysis.score: judge`` the primary judge's. A target names every file a later step reads,
not only the last ones: a file deleted under an up-to-date consumer is rebuilt only when it is
a target.
"""

from __future__ import annotations

import json
import string
from collections.abc import Callable, Mapping
from typing import Any

from evalnoise.pipeline.run_plan import RunPlan, pair_groups
from evalnoise.pipeline.shard_plan import Shard, chunk_size, group_label

__all__ = ["Wiring", "fill", "group_outputs", "round_label"]

#: Lookup of a rule's named outputs: rule name → {key: path pattern}, in declared order.
Outputs = Callable[[str], Mapping[str, str]]


def fill(pattern: str, **wildcards: Any) -> str:
    """``pattern`` with its ``{wildcards}`` filled in (as Snakemake's ``expand`` does with one
    value each: ``string.Formatter().vformat``)."""
    return string.Formatter().vformat(pattern, (), wildcards)


def round_label(round_: int) -> str:
    """The ``round`` wildcard of sequential round ``round_``: three digits (``007``)."""
    return f"{round_:03d}"


def group_outputs(judge_stage: bool) -> dict[str, str]:
    """What analyze_group writes for one group: statistics, ICC convergence and budget
    table, and with a judge stage the judges' record. Declared per config (not an always-
    written "no judge" file): the DAG names exactly the files a run makes, and adding a
    judge stage reruns the groups' jobs because their declared outputs grew."""
    return {
        "stats": "results/analysis/groups/{agent}/{resource_profile}.json",
        "convergence": "results/analysis/convergence/{agent}/{resource_profile}.csv",
        "budget": "results/analysis/budget/{agent}/{resource_profile}.csv",
        **(
            {"judge": "results/analysis/judge/{agent}/{resource_profile}.json"}
            if judge_stage
            else {}
        ),
    }


class Wiring:
    """The file lists of one run's rules (see the module's docstring)."""

    def __init__(self, run: RunPlan, outputs: Outputs, round_record: Callable[[str], str]) -> None:
        self.run = run
        self.plan = run.plan
        self._outputs = outputs
        self._round_record = round_record

    def output(self, rule: str, key: str) -> str:
        """The output pattern ``key`` of ``rule``."""
        return self._outputs(rule)[key]

    def _fill(self, rule: str, key: str, **wildcards: Any) -> str:
        return fill(self.output(rule, key), **wildcards)

    def _all(self, rule: str) -> list[str]:
        return list(self._outputs(rule).values())

    # -- trials and scores ----------------------------------------------------------------------

    def tasks_table(self, wildcards: Any = None) -> str:
        """The tasks table: sampled, or listed from the imported trial table."""
        if self.run.imported:
            return self.output("import_trials", "tasks")
        return self.output("sample_tasks", "tasks")

    def canary(self, wildcards: Any) -> str | None:
        """The agent's canary record its trials wait for (None with ``canary: false``)."""
        if not self.run.config["canary"]:
            return None
        return self._fill("canary", "canary", agent=wildcards.agent)

    def all_image_infos(self, wildcards: Any = None) -> list[str]:
        """Every agent's image record (none for an imported table)."""
        if self.run.imported:
            return []
        return [self._fill("build_image", "info", agent=agent) for agent in self.plan.agents]

    # -- which shards: the fixed design, or (sequential mode) the rounds decided so far ---------

    def sequential_record(self, round_: int) -> dict[str, Any]:
        """Round ``round_``'s record (raises, through ``round_record``, until it exists)."""
        with open(self._round_record(round_label(round_)), encoding="utf-8") as handle:
            return json.load(handle)

    def sequential_design(self, round_: int) -> dict[str, list[Any]]:
        """{group label: [Rect]} run up to and including round ``round_``: round 0 is
        :func:`evalnoise.pipeline.sequential.first_design`, round k the previous record's
        ``next_design``."""
        # by name: the DAG build needs these, not the stopping rule's statistics
        from evalnoise.pipeline.sequential import Rect, first_design

        if round_ == 0:
            return first_design(self.run.sequential, self.plan.groups())
        return {
            group: [Rect.from_list(r) for r in rects]
            for group, rects in self.sequential_record(round_ - 1)["next_design"].items()
        }

    def sequential_last_round(self) -> int:
        """The round after which every unit had stopped."""
        round_ = 0
        while not self.sequential_record(round_)["done"]:
            round_ += 1
        return round_

    def group_shards(
        self, agent: str, resource_profile: str, design: Mapping[str, Any] | None = None
    ) -> list[Shard]:
        """The shards of one group: the fixed design's, or those of ``design`` (sequential
        mode; default: the design of the last round)."""
        from evalnoise.pipeline.sequential import shard_ranges

        if self.run.sequential is None:
            return self.plan.shards(agent, resource_profile)
        if design is None:
            design = self.sequential_design(self.sequential_last_round())
        rects = design[group_label(agent, resource_profile)]
        config = self.run.config
        block_size = int(config["trials"]["block_size"])
        return [
            Shard(agent, resource_profile, block, chunk)
            for block, chunk in shard_ranges(rects, block_size, chunk_size(config))
        ]

    def all_shards(self) -> list[Shard]:
        """Every group's shards."""
        return [s for a, r in self.plan.groups() for s in self.group_shards(a, r)]

    def all_trial_shards(self, wildcards: Any = None) -> list[str]:
        """Every trial shard (the imported table's trials)."""
        if self.run.imported:
            return [self.output("import_trials", "trials")]
        return [self._fill("run_trials", "shard", **s.wildcards) for s in self.all_shards()]

    def all_score_shards(self, wildcards: Any = None) -> list[str]:
        """Every reference score shard (the imported table's scores)."""
        if self.run.imported:
            return [self.output("import_trials", "scores")]
        return [self._fill("score", "scores", **s.wildcards) for s in self.all_shards()]

    def all_judged_shards(self, wildcards: Any = None) -> list[str]:
        """The judge stage's shards, every judge's (none without it)."""
        if not self.run.judge_stage:
            return []
        return [
            self._fill("judge", "judged", judge=judge, **s.wildcards)
            for judge in self.run.judges
            for s in self.all_shards()
        ]

    def reference_scores_of(
        self, agent: str, resource_profile: str, design: Mapping[str, Any] | None = None
    ) -> list[str]:
        """The reference scorer's shards of one group."""
        if self.run.imported:
            return [self.output("import_trials", "scores")]
        return [
            self._fill("score", "scores", **s.wildcards)
            for s in self.group_shards(agent, resource_profile, design)
        ]

    def judged_of(
        self,
        agent: str,
        resource_profile: str,
        design: Mapping[str, Any] | None = None,
        judges: list[str] | None = None,
    ) -> list[str]:
        """The judge stage's shards of one group: of ``judges`` (default: every judge)."""
        if not self.run.judge_stage:
            return []
        return [
            self._fill("judge", "judged", judge=judge, **s.wildcards)
            for judge in (self.run.judges if judges is None else judges)
            for s in self.group_shards(agent, resource_profile, design)
        ]

    def scores_of(
        self, agent: str, resource_profile: str, design: Mapping[str, Any] | None = None
    ) -> list[str]:
        """The shards the statistics read: the reference scorer's, or with
        ``analysis.score: judge`` the judge stage's (its primary judge's)."""
        if self.run.config["analysis"]["score"] == "judge" and self.run.judge_stage:
            primary = [self.run.primary_judge]
            return self.judged_of(agent, resource_profile, design, judges=primary)
        return self.reference_scores_of(agent, resource_profile, design)

    def score_reruns(self, wildcards: Any) -> int:
        """Runs of this score shard's job that left trials unjudged
        (:func:`evalnoise.pipeline.reruns.judge_reruns`): a plain rerun judges them again."""
        from evalnoise.pipeline.reruns import judge_reruns

        return judge_reruns(self._fill("score", "scores", **wildcards))

    def verifier_reruns(self, wildcards: Any) -> int:
        """Runs of this trial shard's job that left trials without a verifier's verdict
        (:func:`evalnoise.pipeline.reruns.verifier_reruns`): a plain rerun runs them again."""
        from evalnoise.pipeline.reruns import verifier_reruns

        return verifier_reruns(self._fill("run_trials", "shard", **wildcards))

    def judge_reruns(self, wildcards: Any) -> int:
        """Runs of this judge shard's job that left trials unjudged."""
        from evalnoise.pipeline.reruns import judge_reruns

        return judge_reruns(self._fill("judge", "judged", **wildcards))

    # -- sequential mode: the checkpoint's inputs and params ------------------------------------

    def sequential_round_scores(self, wildcards: Any) -> list[str]:
        """Every group's score shards of the design run up to this round."""
        design = self.sequential_design(int(wildcards.round))
        return [path for a, r in self.plan.groups() for path in self.scores_of(a, r, design)]

    def sequential_previous_record(self, wildcards: Any) -> list[str]:
        """The previous round's record (none before round 0)."""
        round_ = int(wildcards.round)
        if round_ == 0:
            return []
        return [self._fill("sequential_round", "record", round=round_label(round_ - 1))]

    def sequential_design_param(self, wildcards: Any) -> dict[str, list[Any]]:
        """This round's design as lists: {group label: [rect as a list]}."""
        return {
            group: [rect.to_list() for rect in rects]
            for group, rects in self.sequential_design(int(wildcards.round)).items()
        }

    def sequential_records(self, wildcards: Any = None) -> list[str]:
        """Every round's record, the first to the last (none for a fixed design)."""
        if self.run.sequential is None:
            return []
        return [
            self._fill("sequential_round", "record", round=round_label(round_))
            for round_ in range(self.sequential_last_round() + 1)
        ]

    def sequential_outputs(self, wildcards: Any = None) -> list[str]:
        """results/sequential/{summary.json,rounds.csv}: written in every mode (a fixed
        design says so), so the trials stage's DVC output always exists."""
        return self._all("sequential_summary")

    def sequential_report_files(self, wildcards: Any = None) -> list[str]:
        """[summary.json, rounds.csv] for the report's Adaptive evaluation section
        (sequential mode only)."""
        if self.run.sequential is None:
            return []
        return [
            self.output("sequential_summary", "summary"),
            self.output("sequential_summary", "rounds"),
        ]

    def sequential_summary_file(self, wildcards: Any = None) -> list[str]:
        """results/sequential/summary.json in sequential mode, else nothing."""
        if self.run.sequential is None:
            return []
        return [self.output("sequential_summary", "summary")]

    # -- groups and pairs -----------------------------------------------------------------------

    def group_scores(self, wildcards: Any) -> list[str]:
        """The score shards of one agent × resource profile."""
        return self.scores_of(wildcards.agent, wildcards.resource_profile)

    def group_judge_reference(self, wildcards: Any) -> list[str]:
        """The reference scorer's shards of one group, which its judges are set against
        (none without a judge stage)."""
        if not self.run.judge_stage:
            return []
        return self.reference_scores_of(wildcards.agent, wildcards.resource_profile)

    def group_judged(self, wildcards: Any) -> list[str]:
        """Every judge's shards of one group."""
        return self.judged_of(wildcards.agent, wildcards.resource_profile)

    def group_actions(self, wildcards: Any) -> list[str]:
        """The actions tables beside one group's trial shards (none for an imported table,
        which records no actions)."""
        if self.run.imported:
            return []
        return [
            self._fill("run_trials", "actions", **s.wildcards)
            for s in self.group_shards(wildcards.agent, wildcards.resource_profile)
        ]

    def group_judged_by_judge(self, wildcards: Any) -> dict[str, list[str]]:
        """{judge: its shards of one group}, for the judges' record of analyze_group."""
        w = wildcards
        return {
            judge: self.judged_of(w.agent, w.resource_profile, judges=[judge])
            for judge in self.run.judges
        }

    def judge_quality_params(self) -> dict[str, Any]:
        """The judges' params of analyze_group, only with a judge stage: a judge spec edited
        in a run without one reruns no group's statistics."""
        if not self.run.judge_stage:
            return {}
        return {
            "judges": self.run.judges_param,
            "judged": self.group_judged_by_judge,
            "reference": self.run.config["scorer"],
        }

    def pair_scores_a(self, wildcards: Any) -> list[str]:
        """The first group's score shards of a ``compare`` job."""
        return self.scores_of(*pair_groups(wildcards)[0])

    def pair_scores_b(self, wildcards: Any) -> list[str]:
        """The second group's score shards of a ``compare`` job."""
        return self.scores_of(*pair_groups(wildcards)[1])

    def _group_output(self, key: str) -> list[str]:
        return [
            self._fill("analyze_group", key, agent=a, resource_profile=r)
            for a, r in self.plan.groups()
        ]

    def all_stats(self, wildcards: Any = None) -> list[str]:
        """Every group's statistics."""
        return self._group_output("stats")

    def all_convergence(self, wildcards: Any = None) -> list[str]:
        """Every group's ICC convergence table."""
        return self._group_output("convergence")

    def all_budgets(self, wildcards: Any = None) -> list[str]:
        """Every group's budget table."""
        return self._group_output("budget")

    def all_judge_quality(self, wildcards: Any = None) -> list[str]:
        """Every group's judges' record (none without a judge stage)."""
        return self._group_output("judge") if self.run.judge_stage else []

    def attribution_scores(self, wildcards: Any = None) -> list[str]:
        """Every group's score shards, as the statistics read them, each file once: an
        imported table is one file that holds every group (read once per group, each of its
        trials would count as many times as there are groups)."""
        paths = (path for a, r in self.plan.groups() for path in self.scores_of(a, r))
        return list(dict.fromkeys(paths))

    def all_pairs(self, wildcards: Any = None) -> list[str]:
        """Every pair: two agents within a resource profile, two profiles within an agent."""
        out = [
            self._fill("compare", "pair", kind="agents", within=r, a=a, b=b)
            for r, a, b in self.plan.agent_pairs()
        ]
        out += [
            self._fill("compare", "pair", kind="resource_profiles", within=g, a=a, b=b)
            for g, a, b in self.plan.profile_pairs()
        ]
        return out

    def analysis_outputs(self, wildcards: Any = None) -> list[str]:
        """What summarize makes (the tables, summary and metrics the report reads)."""
        return self._all("summarize")

    # -- targets --------------------------------------------------------------------------------

    def trial_targets(self, wildcards: Any = None) -> list[str]:
        """The trials stage: tasks, each agent's image record, every trial shard, and
        (sequential mode) the rounds that decided which shards there are. Not the canaries:
        nothing reads one after its agent's trials, and one rebuilt (absent, it is no longer
        ``ancient``) would make all the agent's shards look stale."""
        return [
            self.tasks_table(),
            *self.all_image_infos(),
            *self.all_trial_shards(),
            *self.sequential_outputs(),
        ]

    def analysis_targets(self, wildcards: Any = None) -> list[str]:
        """The analysis stage: every group, pair, convergence and budget file, and the
        summary."""
        return [
            *self.all_stats(),
            *self.all_pairs(),
            *self.all_convergence(),
            *self.all_budgets(),
            *self.all_judge_quality(),
            *self._all("attribution"),
            *self.analysis_outputs(),
        ]

    def all_outputs(self, wildcards: Any = None) -> list[str]:
        """Everything ``snakemake`` builds by default: every artifact of every stage."""
        return [
            *self.trial_targets(),
            *self.all_score_shards(),
            *self.all_judged_shards(),
            *self.analysis_targets(),
            self.output("manifest", "manifest"),
            self.output("report", "report"),
            self.output("record_config", "config"),
            self.output("check", "health"),
        ]
