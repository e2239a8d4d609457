# Stage targets: what each `dvc.yaml` stage asks Snakemake to build (`snakemake <target>`).
# The DAG itself is defined once, by the rules; these only name parts of it.


rule all_trials:
    input:
        WIRING.trial_targets,


rule all_scores:
    input:
        WIRING.all_score_shards,


rule all_judged:
    input:
        WIRING.all_judged_shards,


rule all_analysis:
    input:
        WIRING.analysis_targets,
