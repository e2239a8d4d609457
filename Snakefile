# evalnoise: the evaluation as one DAG. This file is a table of contents; rules live in rules/,
# logic in the package (evalnoise.pipeline), configuration in config/config.yaml.
from snakemake.utils import min_version

min_version("9.0")


configfile: "config/config.yaml"


include: "rules/common.smk"


if RUN.imported:

    include: "rules/import.smk"

else:

    include: "rules/trials.smk"


include: "rules/sequential.smk"
include: "rules/analysis.smk"
include: "rules/report.smk"
include: "rules/compare_runs.smk"
include: "rules/targets.smk"


rule all:
    default_target: True
    input:
        WIRING.all_outputs,
