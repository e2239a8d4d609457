# This run (the candidate) against a baseline run: `snakemake results/compare/NAME.json`,
# NAME a results directory under baselines/ or a git revision whose tree holds results/. A
# rule never calls dvc: for a DVC-tracked baseline, `dvc get . results --rev REV -o
# baselines/REV` first (or run `evalnoise compare REV results`, which may).


rule compare_runs:
    input:
        groups=rules.summarize.output.groups,
        config=CONFIG_RECORD,
    output:
        record="results/compare/{baseline}.json",
    log:
        "results/logs/compare_runs/{baseline}.log",
    params:
        # the results directory this run's groups.json lies in (results/analysis/…)
        results=lambda w, input: input.groups.rsplit("/", 2)[0],
        analysis=config["analysis"],
        code_version=code_version("analysis"),
    run:
        in_process("../scripts/compare_runs.py", locals())
