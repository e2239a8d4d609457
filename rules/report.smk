# Provenance and the report: the manifest hashes every artifact the run made; the report
# (charts, Evaluation Cards, index.html) shows the numbers with the manifest's summary.
# Last, `check` fails the run (after the report shows why) when a group is not a
# measurement of the agent or trials are unscored.


rule manifest:
    input:
        tasks=WIRING.tasks_table,
        images=WIRING.all_image_infos,
        trials=WIRING.all_trial_shards,
        scores=WIRING.all_score_shards,
        judged=WIRING.all_judged_shards,
        analysis=WIRING.analysis_outputs,
        # everything else the run makes before the manifest, so it hashes each final file
        analysis_all=WIRING.analysis_targets,
        trials_all=WIRING.trial_targets,
        config_record=CONFIG_RECORD,
    output:
        manifest="results/manifest.json",
    log:
        "results/logs/manifest.log",
    params:
        config=config,
        code_version=code_version("manifest"),
    run:
        in_process("../scripts/manifest.py", locals())


rule report:
    input:
        groups=rules.summarize.output.groups,
        comparisons=rules.summarize.output.comparisons,
        convergence=rules.summarize.output.convergence,
        budget=rules.summarize.output.budget,
        profiles=rules.summarize.output.profiles,
        per_task=rules.summarize.output.per_task,
        attribution=rules.attribution.output.summary,
        resource_sensitivity=rules.attribution.output.resource,
        flaky_tasks=rules.attribution.output.flaky,
        manifest=rules.manifest.output.manifest,
        images=WIRING.all_image_infos,
        sequential=WIRING.sequential_report_files,
    output:
        report=directory("results/report"),
    log:
        "results/logs/report.log",
    params:
        config=config,
        code_version=code_version("report"),
    run:
        in_process("../scripts/report.py", locals())


rule record_config:
    output:
        config=CONFIG_RECORD,
    log:
        "results/logs/record_config.log",
    params:
        record=EFFECTIVE_CONFIG,
        code_version=code_version("manifest"),
    run:
        in_process("../scripts/record_config.py", locals())


rule check:
    input:
        groups=rules.summarize.output.groups,
        report=rules.report.output.report,
        manifest=rules.manifest.output.manifest,
    output:
        health="results/health.json",
    log:
        "results/logs/check.log",
    # a verdict over finished numbers: retrying it repeats the same message
    retries: 0
    params:
        code_version=code_version("summary"),
    run:
        in_process("../scripts/check.py", locals())
