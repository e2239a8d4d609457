"""Statistics of repeated-trial evaluations: pure, vectorized functions over arrays.

Inputs are long arrays — one element per trial — of scores in [0, 1] and task labels (and
trial indices where pairing needs them); any number of trials per task. Every function
returns a frozen dataclass with named fields, in the manner of ``scipy.stats`` results and
with its vocabulary (``statistic``, ``pvalue``, ``df``, ``ci_low``/``ci_high``); every result
has ``to_dict()``, JSON-ready with NaN as None.
Equation numbers refer to Mustahsan et al., *Stochasticity in Agentic Evaluations:
Quantifying Inconsistency with Intraclass Correlation*.
"""

from evalnoise.stats.accuracy import AccuracyResult, accuracy
from evalnoise.stats.accuracy_sequences import (
    ConfidenceSequenceResult,
    confidence_sequence,
    paired_confidence_sequence,
)
from evalnoise.stats.agreement import AgreementResult, judge_agreement, judge_agreement_by_level
from evalnoise.stats.confidence_sequences import MeanCSResult, mean_confidence_sequence
from evalnoise.stats.convergence import ConvergenceResult, icc_convergence
from evalnoise.stats.cost_allocation import (
    CostAllocation,
    CostAllocationResult,
    OptimalTrialsResult,
    PilotPlan,
    cost_allocation,
    optimal_trials_per_task,
    plan_from_pilot,
)
from evalnoise.stats.dstudy import (
    DStudyResult,
    TotalErrorResult,
    VarianceModel,
    dstudy,
    model_of,
    total_error,
    variance_model,
)
from evalnoise.stats.gate import DesignForMargin, GateResult, design_for_margin, regression_gate
from evalnoise.stats.gdesign import Design, Facet, parse_facets
from evalnoise.stats.gstudy import GStudyResult, gstudy
from evalnoise.stats.icc import ICCBatch, ICCResult, bonett_se, icc_batch, icc_oneway, interpret_icc
from evalnoise.stats.misclassification import (
    CorrectedAccuracyResult,
    PPIResult,
    RoganGladenResult,
    corrected_accuracy,
    ppi_mean,
    rogan_gladen,
)
from evalnoise.stats.optimal_design import (
    DesignChoice,
    DesignStatus,
    JudgeSamplePlan,
    OptimalDesignResult,
    best_design,
    cheapest_design,
    judge_sample_plan,
    nested_optimum,
)
from evalnoise.stats.outcome_consistency import OutcomeConsistencyResult, outcome_consistency
from evalnoise.stats.paired import (
    ComparisonResult,
    McNemarResult,
    PairedBootstrapResult,
    PairedDifferenceResult,
    benjamini_hochberg,
    compare,
    holm,
    mcnemar,
    mcnemar_exact_p,
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
from evalnoise.stats.stopping import AgentTrials, StoppingDecision, StoppingRule, stopping_decision
from evalnoise.stats.trajectory import (
    TrajectoryConsistencyResult,
    first_divergence,
    levenshtein,
    normalised_edit_distance,
    trajectory_consistency,
)

__all__ = [
    "AccuracyResult",
    "AgentTrials",
    "AgreementResult",
    "Allocation",
    "AllocationResult",
    "ComparisonResult",
    "ConfidenceSequenceResult",
    "ConvergenceResult",
    "CorrectedAccuracyResult",
    "CostAllocation",
    "CostAllocationResult",
    "DStudyResult",
    "Design",
    "DesignChoice",
    "DesignForMargin",
    "DesignStatus",
    "Facet",
    "GStudyResult",
    "GateResult",
    "ICCBatch",
    "ICCResult",
    "JudgeSamplePlan",
    "MDDResult",
    "McNemarResult",
    "MeanCSResult",
    "OptimalDesignResult",
    "OptimalTrialsResult",
    "OutcomeConsistencyResult",
    "PPIResult",
    "PairedBootstrapResult",
    "PairedDifferenceResult",
    "PassKResult",
    "PilotPlan",
    "ProportionInterval",
    "RoganGladenResult",
    "SampleSizeResult",
    "StoppingDecision",
    "StoppingRule",
    "TotalErrorResult",
    "TrajectoryConsistencyResult",
    "VarianceModel",
    "accuracy",
    "allocation_table",
    "benjamini_hochberg",
    "best_design",
    "bonett_se",
    "cheapest_design",
    "compare",
    "confidence_sequence",
    "corrected_accuracy",
    "cost_allocation",
    "design_for_margin",
    "dstudy",
    "first_divergence",
    "gstudy",
    "holm",
    "icc_batch",
    "icc_convergence",
    "icc_oneway",
    "interpret_icc",
    "judge_agreement",
    "judge_agreement_by_level",
    "judge_sample_plan",
    "levenshtein",
    "mcnemar",
    "mcnemar_exact_p",
    "mean_confidence_sequence",
    "minimum_detectable_difference",
    "model_of",
    "nested_optimum",
    "normalised_edit_distance",
    "optimal_trials_per_task",
    "outcome_consistency",
    "paired_bootstrap",
    "paired_confidence_sequence",
    "paired_difference",
    "parse_facets",
    "pass_at_k",
    "pass_hat_k",
    "pass_k",
    "plan_from_pilot",
    "ppi_mean",
    "regression_gate",
    "rogan_gladen",
    "stopping_decision",
    "tasks_for_icc_precision",
    "total_error",
    "trajectory_consistency",
    "variance_model",
    "wilson_interval",
]
