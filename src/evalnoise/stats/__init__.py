"""Statistics of repeated-trial evaluations: pure, vectorized functions over arrays.

Inputs are long arrays — one element per trial — of scores in [0, 1] and task labels (and
trial indices where pairing needs them); any number of trials per task. Every function
returns a frozen dataclass with named fields, in the manner of ``scipy.stats`` results.
Equation numbers refer to Mustahsan et al., *Stochasticity in Agentic Evaluations:
Quantifying Inconsistency with Intraclass Correlation*.
"""

from evalnoise.stats.accuracy import AccuracyResult, accuracy
from evalnoise.stats.convergence import ConvergenceResult, icc_convergence
from evalnoise.stats.icc import ICCBatch, ICCResult, bonett_se, icc_batch, icc_oneway, interpret_icc
from evalnoise.stats.paired import (
    ComparisonResult,
    McNemarResult,
    PairedBootstrapResult,
    PairedDifferenceResult,
    compare,
    holm,
    mcnemar,
    paired_bootstrap,
    paired_difference,
)
from evalnoise.stats.passk import PassKResult, pass_at_k, pass_hat_k, pass_k
from evalnoise.stats.planning import (
    Allocation,
    AllocationResult,
    MDDResult,
    SampleSizeResult,
    allocation_table,
    minimum_detectable_difference,
    tasks_for_icc_precision,
)
from evalnoise.stats.proportion import ProportionInterval, wilson_interval

__all__ = [
    "AccuracyResult",
    "Allocation",
    "AllocationResult",
    "ComparisonResult",
    "ConvergenceResult",
    "ICCBatch",
    "ICCResult",
    "MDDResult",
    "McNemarResult",
    "PairedBootstrapResult",
    "PairedDifferenceResult",
    "PassKResult",
    "ProportionInterval",
    "SampleSizeResult",
    "accuracy",
    "allocation_table",
    "bonett_se",
    "compare",
    "holm",
    "icc_batch",
    "icc_convergence",
    "icc_oneway",
    "interpret_icc",
    "mcnemar",
    "minimum_detectable_difference",
    "paired_bootstrap",
    "paired_difference",
    "pass_at_k",
    "pass_hat_k",
    "pass_k",
    "tasks_for_icc_precision",
    "wilson_interval",
]
