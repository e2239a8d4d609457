# Statistics over the scores: per agent × resource profile (overall and per level), every
# pair, ICC convergence and budget allocation; then one summary. Pure functions of the score
# shards: rerunning any of these never touches a trial.


rule analyze:
    input:
        scores=group_scores,
        tasks=tasks_table,
    output:
        stats="results/analysis/groups/{agent}/{resource_profile}.json",
    log:
        "results/logs/analyze/{agent}/{resource_profile}.log",
    conda:
        ENV
    params:
        group=group_param,
        analysis=config["analysis"],
        infra_policy=infra_policy_param,
        health=config["health"],
        code_version=code_version("analysis"),
    script:
        "../scripts/analyze.py"


rule compare:
    input:
        a=pair_scores_a,
        b=pair_scores_b,
        tasks=tasks_table,
    output:
        pair="results/analysis/pairs/{kind}/{within}/{a}/{b}.json",
    log:
        "results/logs/compare/{kind}/{within}/{a}-{b}.log",
    conda:
        ENV
    params:
        groups=pair_groups_param,
        analysis=config["analysis"],
        infra_policy=infra_policy_param,
        health=config["health"],
        code_version=code_version("analysis"),
    script:
        "../scripts/compare.py"


rule convergence:
    input:
        scores=group_scores,
        tasks=tasks_table,
    output:
        table="results/analysis/convergence/{agent}/{resource_profile}.csv",
    log:
        "results/logs/convergence/{agent}/{resource_profile}.log",
    conda:
        ENV
    params:
        group=group_param,
        analysis=config["analysis"],
        infra_policy=infra_policy_param,
        health=config["health"],
        code_version=code_version("analysis"),
    script:
        "../scripts/convergence.py"


rule budget:
    input:
        stats=unconstrained(rules.analyze.output.stats),
    output:
        table="results/analysis/budget/{agent}/{resource_profile}.csv",
    log:
        "results/logs/budget/{agent}/{resource_profile}.log",
    conda:
        ENV
    params:
        analysis=config["analysis"],
        max_tasks=TASK_POOL,
        code_version=code_version("analysis"),
    script:
        "../scripts/budget.py"


rule judge_quality:
    input:
        reference=group_reference_scores,
        judged=group_judged,
        tasks=tasks_table,
    output:
        stats="results/analysis/judge/{agent}/{resource_profile}.json",
    log:
        "results/logs/judge_quality/{agent}/{resource_profile}.log",
    conda:
        ENV
    params:
        group=group_param,
        analysis=config["analysis"],
        infra_policy=infra_policy_param,
        judges=judges_param,
        judged=group_judged_by_judge,
        reference=config["scorer"],
        code_version=code_version("analysis"),
    script:
        "../scripts/judge_quality.py"


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
    conda:
        ENV
    params:
        groups=plan_groups_param,
        analysis=config["analysis"],
        infra_policy=infra_policy_param,
        code_version=code_version("analysis"),
    script:
        "../scripts/attribution.py"


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
    conda:
        ENV
    params:
        confidence=config["analysis"]["confidence"],
        code_version=code_version("analysis"),
    script:
        "../scripts/summarize.py"
