# Statistics over the scores: per agent × resource profile one job (overall and per level,
# ICC convergence, budget allocation, the judges' quality), every pair, the attribution; then
# one summary. Pure functions of the score shards: rerunning any of these never touches a
# trial. The numeric jobs carry code_version("analysis"), the summary's text
# code_version("summary"): rewording a line of summary.txt or a card reruns no statistic.


# One job per group: the group's shards are read once and every output that depends on that
# group alone is written (GROUP_OUTPUTS, rules/common.smk: the judges' record only when the
# config has a judge stage), so a new agent or profile runs exactly its own jobs.
rule analyze_group:
    input:
        scores=group_scores,
        tasks=tasks_table,
        reference=group_judge_reference,
        judged=group_judged,
        actions=group_actions,
    output:
        **GROUP_OUTPUTS,
    log:
        "results/logs/analyze_group/{agent}/{resource_profile}.log",
    params:
        **JUDGE_QUALITY_PARAMS,
        group=group_param,
        analysis=config["analysis"],
        infra_policy=infra_policy_param,
        health=config["health"],
        max_tasks=TASK_POOL,
        imported=IMPORTED,
        code_version=code_version("analysis"),
    run:
        in_process(
            "../scripts/analyze_group.py",
            input,
            output,
            params,
            wildcards,
            log,
            rule,
        )


rule compare:
    input:
        a=pair_scores_a,
        b=pair_scores_b,
        tasks=tasks_table,
    output:
        pair="results/analysis/pairs/{kind}/{within}/{a}/{b}.json",
    log:
        "results/logs/compare/{kind}/{within}/{a}-{b}.log",
    params:
        groups=pair_groups_param,
        analysis=config["analysis"],
        infra_policy=infra_policy_param,
        health=config["health"],
        code_version=code_version("analysis"),
    run:
        in_process("../scripts/compare.py", input, output, params, wildcards, log, rule)


rule attribution:
    input:
        scores=attribution_scores,
        tasks=tasks_table,
    output:
        summary="results/analysis/attribution.json",
        resource="results/analysis/resource_sensitivity.parquet",
        flaky="results/analysis/flaky_tasks.csv",
    log:
        "results/logs/attribution.log",
    params:
        groups=plan_groups_param,
        analysis=config["analysis"],
        infra_policy=infra_policy_param,
        # the D study's designs stay within the tasks that exist
        task_pool=TASK_POOL,
        imported=IMPORTED,
        code_version=code_version("analysis"),
    run:
        in_process(
            "../scripts/attribution.py", input, output, params, wildcards, log, rule
        )


rule summarize:
    input:
        stats=all_stats,
        judge=all_judge_quality,
        attribution=rules.attribution.output.summary,
        pairs=all_pairs,
        convergence=all_convergence,
        budget=all_budgets,
        sequential=sequential_summary_file,
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
        in_process(
            "../scripts/summarize.py", input, output, params, wildcards, log, rule
        )
