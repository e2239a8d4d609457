# Adaptive evaluation (config `sequential`, evalnoise.pipeline.sequential): trials run in
# rounds; after each round the checkpoint `sequential_round` decides per agent × resource
# profile (or per compared pair) whether to stop or what the next round holds. The input
# functions in rules/common.smk walk the round records, so Snakemake re-evaluates the DAG
# after each round and schedules exactly the next round's shards.


checkpoint sequential_round:
    input:
        scores=WIRING.sequential_round_scores,
        tasks=lambda wildcards: ancient(WIRING.tasks_table()),
        previous=WIRING.sequential_previous_record,
    output:
        record="results/sequential/round-{round}.json",
    log:
        "results/logs/sequential/round-{round}.log",
    params:
        round=lambda wildcards: int(wildcards.round),
        design=WIRING.sequential_design_param,
        settings=RUN.sequential_settings_param,
        groups=RUN.plan_groups_param,
        infra_policy=RUN.infra_policy_param,
        code_version=code_version("analysis"),
    run:
        in_process("../scripts/sequential_round.py", locals())


rule sequential_summary:
    input:
        rounds=WIRING.sequential_records,
    output:
        summary="results/sequential/summary.json",
        rounds="results/sequential/rounds.csv",
    log:
        "results/logs/sequential/summary.log",
    # the decisions' words (evalnoise.stopping_text) in an area of their own: rewording one
    # reruns this, the summary and the report, never a decision (the checkpoint's "analysis")
    params:
        code_version=code_version("sequential_summary"),
    run:
        in_process("../scripts/sequential_summary.py", locals())
