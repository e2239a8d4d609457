"""On-disk schemas of the pipeline's Parquet artifacts: the schema is the type.

``TASKS``  — ``results/tasks.parquet``: one row per sampled task.
``TRIALS`` — trial shards: one row per (agent, resource_profile, task_id, trial, attempt).
``SCORES`` — score shards: the trial row plus the scorer's verdict.
``ACTIONS`` — beside each trial shard: the actions of its trials, one row per action.

Every artifact is written through :func:`conform`, so a column added upstream without a
schema change fails loudly instead of silently drifting.

Cost drivers (:mod:`evalnoise.costs` prices them) are nullable counts where null means
*not reported* and 0 a measured zero: a trial's ``duration_s`` (container seconds), the
agent's ``prompt_tokens``, ``completion_tokens`` and ``model_calls`` (from its answer record,
:func:`evalnoise.runner.contract.usage_columns`), and the LLM judge's ``judge_calls``,
``judge_cached``, ``judge_prompt_tokens`` and ``judge_completion_tokens`` (null for the other
scorers, which ask no judge).
"""

from __future__ import annotations

import pyarrow as pa

from evalnoise.column_names import ENVIRONMENT_TASK_COLUMNS
from evalnoise.outcome_table import INFRA_STATUSES as INFRA_STATUSES
from evalnoise.outcome_table import STATUSES as STATUSES

# The statuses a trial row may hold (STATUSES) and the infrastructure's (INFRA_STATUSES,
# which follow the declared infra policy) are views of the one outcome table,
# :data:`evalnoise.outcome_table.OUTCOME_TABLE`: ``ok`` and ``agent_error`` are the agent's;
# ``timeout``, ``oom_killed`` and ``infra_error`` the infrastructure's; ``verifier_error``
# (environment tasks) the grader's: no valid reward, so no score (never a 0) until a rerun;
# how the infra policy counts them: config/README.md, "Scoring and the infra policy".

#: The agent outcomes a verifier's valid verdict may follow (then the trial is ``ok``, the
#: outcome kept in the column ``verified_after``: evalnoise.verified_after).
VERIFIED_AFTER = ("timeout", "agent_error")
#: Task kinds: a question with a reference answer, or a task that brings its environment and
#: verifier (the Harbor format, :mod:`evalnoise.tasks.harbor_task`).
TASK_KINDS = ("question", "environment")

_UTC = pa.timestamp("us", tz="UTC")

TASKS = pa.schema(
    [
        pa.field("task_id", pa.string(), nullable=False),
        pa.field("question", pa.string(), nullable=False),
        pa.field("answer", pa.string(), nullable=False),
        pa.field("level", pa.string()),
        pa.field("cpus", pa.float64()),
        pa.field("memory_mb", pa.int64()),
        pa.field("time_limit_s", pa.float64()),
        pa.field("sampling_seed", pa.int64()),
        # environment tasks (null for questions): the kind, the task folder (relative to the
        # checkout when inside it), the verifier's time limit, a digest of the folder's files
        pa.field("kind", pa.string()),
        pa.field("task_dir", pa.string()),
        pa.field("verifier_time_limit_s", pa.float64()),
        pa.field("task_digest", pa.string()),
    ]
)

#: The TASKS columns of a question task, in order.
QUESTION_TASK_COLUMNS = tuple(f.name for f in TASKS if f.name not in ENVIRONMENT_TASK_COLUMNS)

#: Columns that identify one trial (all its attempts share them; ``attempt`` numbers them).
#: With prompt or sampling variants a (task, trial index) runs once per variant: the
#: variant's labels (:data:`evalnoise.runner.variant.VARIANT_COLUMNS`) are part of the key —
#: last, so a table without variants (null there, or no such columns) keeps its order and
#: grouping. Here, beside the schema, because the runner, the outcome accounting and the
#: analyses all key trials by it.
TRIAL_KEY = ("agent", "resource_profile", "task_id", "trial", "prompt_variant", "sampling")

TRIALS = pa.schema(
    [
        pa.field("agent", pa.string(), nullable=False),
        pa.field("resource_profile", pa.string(), nullable=False),
        pa.field("task_id", pa.string(), nullable=False),
        pa.field("trial", pa.int64(), nullable=False),
        pa.field("attempt", pa.int64(), nullable=False),
        pa.field("seed", pa.int64()),
        pa.field("status", pa.string(), nullable=False),
        pa.field("exit_code", pa.int64()),
        pa.field("prediction", pa.string()),
        pa.field("error", pa.string()),
        pa.field("duration_s", pa.float64()),
        pa.field("peak_memory_bytes", pa.int64()),
        # the resource values actually applied to this trial's container
        pa.field("cpu_shares", pa.int64()),
        pa.field("cpu_quota_cpus", pa.float64()),
        pa.field("memory_reservation_bytes", pa.int64()),
        pa.field("memory_limit_bytes", pa.int64()),
        pa.field("time_limit_s", pa.float64()),
        pa.field("stdout_tail", pa.string()),
        pa.field("stderr_tail", pa.string()),
        # the agent's model usage as it reported it: null = not reported (the agent sent no
        # usage, or a malformed one, noted in `error`); 0 = a reported zero
        pa.field("prompt_tokens", pa.int64()),
        pa.field("completion_tokens", pa.int64()),
        pa.field("model_calls", pa.int64()),
        pa.field("started_at", _UTC),
        pa.field("ended_at", _UTC),
        # when the trial was meant to run (evalnoise.runner.seeds, "Trial order"): the first
        # trial index of its shard's trial block (the pipeline runs block by block: t0004-0007
        # → 4), and the trial's 0-based place in its shard's seeded order (retries share it);
        # null for imported trials
        pa.field("time_block", pa.int64()),
        pa.field("run_order", pa.int64()),
        # the trial's variant (evalnoise.runner.variant): the prompt template's level name and
        # the agent's varied sampling settings (`VAR=value`, by variable, comma-separated);
        # null when the run did not vary that facet, and for imported trials
        pa.field("prompt_variant", pa.string()),
        pa.field("sampling", pa.string()),
        pa.field("image", pa.string()),
        pa.field("image_digest", pa.string()),
        # the trial container's network: none, host, trial-bridge / trial-internal (an
        # environment trial's network of its own), named:NAME; null for imported trials
        pa.field("network", pa.string()),
        pa.field("backend", pa.string()),
        pa.field("host", pa.string()),
        # imported trials carry their own verdict; pipeline trials get it from the scorer
        pa.field("score", pa.float64()),
        # environment trials (evalnoise.runner.environment; null for question trials): the
        # scoring reward (only when the status is ok), every named reward the verifier left
        # (JSON, whatever the status), the phase a failure happened in (build, setup, agent,
        # verifier), the phases' times, the verifier's exit code, limit and output tail, the
        # OOM kills counted in the container, the external agent's commands, the task digest
        pa.field("reward", pa.float64()),
        pa.field("rewards_json", pa.string()),
        pa.field("phase", pa.string()),
        pa.field("agent_duration_s", pa.float64()),
        pa.field("verifier_exit_code", pa.int64()),
        pa.field("verifier_duration_s", pa.float64()),
        pa.field("verifier_time_limit_s", pa.float64()),
        pa.field("verifier_output_tail", pa.string()),
        pa.field("oom_kills", pa.int64()),
        pa.field("agent_steps", pa.int64()),
        pa.field("task_digest", pa.string()),
        # the verdict after an agent failure (evalnoise.verified_after): the agent outcome
        # (timeout, agent_error) a trial had before its verifier's valid reward decided it
        # (status ok), null otherwise; and whether a process was OOM-killed in the agent
        # phase while the container lived on (the task's own event, not an infra outcome)
        pa.field("verified_after", pa.string()),
        pa.field("oom_in_agent", pa.bool_()),
        # a multi-step task's steps (evalnoise.runner.steps): JSON list of {step, status,
        # rewards}, each step's named rewards (null: no verdict); null for a single-step task
        pa.field("step_rewards_json", pa.string()),
        # what the agent changed of what the verifier executes (evalnoise.runner.
        # verifier_integrity), "; "-separated, e.g. "python3: now /usr/local/bin/python3 (was
        # /usr/bin/python3)"; null when nothing changed and for other trials
        pa.field("environment_tampered", pa.string()),
    ]
)

#: A trial shard's actions (:mod:`evalnoise.runner.actions`): one row per action, ``step`` its
#: 0-based place in the attempt's sequence; an attempt that recorded an empty trajectory has
#: one row with step 0 and a null ``action``, one that recorded none has no row. Keyed by the
#: attempt (:data:`TRIAL_KEY` and ``attempt``), kept out of the trials table's rows.
ACTIONS = pa.schema(
    [
        pa.field("agent", pa.string(), nullable=False),
        pa.field("resource_profile", pa.string(), nullable=False),
        pa.field("task_id", pa.string(), nullable=False),
        pa.field("trial", pa.int64(), nullable=False),
        pa.field("attempt", pa.int64(), nullable=False),
        pa.field("prompt_variant", pa.string()),
        pa.field("sampling", pa.string()),
        pa.field("step", pa.int64(), nullable=False),
        pa.field("action", pa.string()),
    ]
)

SCORES = pa.schema(
    [
        *TRIALS,
        pa.field("scorer", pa.string(), nullable=False),
        pa.field("correct", pa.bool_()),
        pa.field("judge_status", pa.string()),
        pa.field("judge_explanation", pa.string()),
        # every judge sample's verdict (k > 1: the judge's own noise); null for other scorers
        pa.field("judge_votes", pa.list_(pa.bool_())),
        # the LLM judge's cost of this trial in this scoring run (null for other scorers):
        # samples sent to the server (an HTTP retry or a structured-form probe is part of its
        # call, not another), samples answered from the cache (free), and the tokens of the
        # calls' replies (null when a call's reply did not report them; 0 with no call)
        pa.field("judge_calls", pa.int64()),
        pa.field("judge_cached", pa.int64()),
        pa.field("judge_prompt_tokens", pa.int64()),
        pa.field("judge_completion_tokens", pa.int64()),
    ]
)


def conform(table: pa.Table, schema: pa.Schema) -> pa.Table:
    """Return ``table`` with exactly ``schema``'s columns, in order, cast to its types.

    Missing nullable columns are filled with nulls; a missing non-nullable column or an
    extra column raises ``ValueError`` naming it.
    """
    extra = [name for name in table.column_names if schema.get_field_index(name) < 0]
    if extra:
        raise ValueError(f"columns not in the schema: {', '.join(extra)}")
    columns = []
    for field in schema:
        if field.name in table.column_names:
            columns.append(table.column(field.name).cast(field.type))
        elif field.nullable:
            columns.append(pa.nulls(table.num_rows, type=field.type))
        else:
            raise ValueError(f"required column {field.name!r} is missing")
    return pa.Table.from_arrays(columns, schema=schema)
