"""Snakemake entry point of rule `compare_runs`: this run (the candidate) against a baseline."""

from evalnoise.atomic import write_text
from evalnoise.formatting import dumps
from evalnoise.pipeline.jobs import log_to
from evalnoise.pipeline.run_comparison import compare_runs, comparison_record
from evalnoise.pipeline.run_sources import baseline_run, read_results_dir

log = log_to(snakemake.log[0])
p = snakemake.params
candidate = read_results_dir(p.results)
with baseline_run(snakemake.wildcards.baseline) as baseline:
    records = compare_runs(
        baseline,
        candidate,
        confidence=p.analysis["confidence"],
        n_resamples=p.analysis["bootstrap"]["resamples"],
        seed=p.analysis["bootstrap"]["seed"],
    )
    record = comparison_record(baseline, candidate, records)
write_text(snakemake.output.record, dumps(record) + "\n")
for r in records:
    log.info(
        "%s → %s: diff %.4f [%.4f, %.4f], MDD %.4f, %s, %s",
        r["baseline"],
        r["candidate"],
        r["diff"],
        r["ci_low"] if r["ci_low"] is not None else float("nan"),
        r["ci_high"] if r["ci_high"] is not None else float("nan"),
        r["mdd"] if r["mdd"] is not None else float("nan"),
        "difference detected" if r["detected"] else "no difference detected",
        "comparable" if r["comparability"]["comparable"] else "NOT comparable",
    )
