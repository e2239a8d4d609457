# trials_from: an existing trial table stands in for sampling, running and scoring. It
# becomes the same three artifacts (tasks, trials, scores) so every later rule is the same.


rule import_trials:
    input:
        table=imported_table,
    output:
        tasks="results/tasks.parquet",
        trials="results/trials/imported.parquet",
        scores="results/scores/imported.parquet",
    log:
        "results/logs/import_trials.log",
    params:
        columns=config["columns"],
        code_version=code_version("imported"),
    run:
        in_process("../scripts/import_trials.py", locals())
