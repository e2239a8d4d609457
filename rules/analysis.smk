# Statistics over the scores: per agent × resource profile one job (overall and per level,
# ICC convergence, budget allocation, the judges' quality), every pair, the attribution; then
# one summary. Pure functions of the score shards: rerunning any of these never touches a
# trial. The numeric jobs carry code_version("analysis"), the summary's text
# code_version("summary"): rewording a line of summary.txt or a card reruns no statistic.


# One job per group: the group's shards are read once and every output that depends on that
# group alone is written (evalnoise.pipeline.wiring.group_outputs: the judges' record only
# when the config has a judge stage), so a new agent or profile runs exactly its own jobs.
rule analyze_group:
    input:
        scores=WIRING.group_scores,
        tasks=WIRING.tasks_table,
        reference=WIRING.group_judge_reference,
        judged=WIRING.group_judged,
        actions=WIRING.group_actions,
    output:
        **group_outputs(RUN.judge_stage),
    log:
        "results/logs/analyze_group/{agent}/{resource_profile}.log",
    params:
        **WIRING.judge_quality_params(),
        group=RUN.group_param,
        analysis=config["analysis"],
        infra_policy=RUN.infra_policy_param,
        health=config["health"],
        max_tasks=RUN.task_pool,
        imported=RUN.imported,
        code_version=code_version("analysis"),
    run:
        in_process("../scripts/analyze_group.py", locals())


rule compare:
    input:
        a=WIRING.pair_scores_a,
        b=WIRING.pair_scores_b,
        tasks=WIRING.tasks_table,
    output:
        pair="results/analysis/pairs/{kind}/{within}/{a}/{b}.json",
    log:
        "results/logs/compare/{kind}/{within}/{a}-{b}.log",
    params:
        groups=RUN.pair_groups_param,
        analysis=config["analysis"],
        infra_policy=RUN.infra_policy_param,
        health=config["health"],
        code_version=code_version("analysis"),
    run:
        in_process("../scripts/compare.py", locals())


rule attribution:
    input:
        scores=WIRING.attribution_scores,
        tasks=WIRING.tasks_table,
    output:
        summary="results/analysis/attribution.json",
        resource="results/analysis/resource_sensitivity.parquet",
        flaky="results/analysis/flaky_tasks.csv",
    log:
        "results/logs/attribution.log",
    params:
        groups=RUN.plan_groups_param,
        analysis=config["analysis"],
        infra_policy=RUN.infra_policy_param,
        # the D study's designs stay within the tasks that exist
        task_pool=RUN.task_pool,
        imported=RUN.imported,
        code_version=code_version("analysis"),
    run:
        in_process("../scripts/attribution.py", locals())


rule summarize:
    input:
        stats=WIRING.all_stats,
        judge=WIRING.all_judge_quality,
        attribution=rules.attribution.output.summary,
        pairs=WIRING.all_pairs,
        convergence=WIRING.all_convergence,
        budget=WIRING.all_budgets,
        sequential=WIRING.sequential_summary_file,
    output:
        groups="results/analysis/groups.json",
        summary="results/analysis/summary.txt",
        comparisons="results/analysis/comparisons.json",
        convergence="results/analysis/convergence.csv",
        budget="results/analysis/budget.csv",
        profiles="results/analysis/resource_profiles.csv",
        per_task="results/analysis/per_task.csv",
        metrics="results/metrics.json",
    log:
        "results/logs/summarize.log",
    params:
        confidence=config["analysis"]["confidence"],
        code_version=code_version("summary"),
    run:
        in_process("../scripts/summarize.py", locals())
