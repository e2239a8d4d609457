"""Harbor's exception types and the trial status each one means: the one table.

Read by the Harbor importer (:mod:`evalnoise.importers.harbor_jobs`: a Harbor job's
``result.json`` → trial rows) and by the runner (:mod:`evalnoise.runner.agent_failures`: the
exception a Harbor agent run through the bridge reports), so a Harbor agent's failure is the
same outcome whether Harbor or evalnoise ran it. No imports: a change to an importer does not
touch the runner's code, nor the other way round.
"""

from __future__ import annotations

#: The status of a verifier that timed out, crashed or left no valid reward. Harbor still
#: ran the agent; the verifier failed to measure it: never a score of 0.
VERIFIER_ERROR = "verifier_error"

#: (status, why, Harbor's exception type names). Harbor's error policy groups the same names
#: by cause (sandbox_failed, model_provider_failed, harbor_failed, unclassified,
#: agent_exhausted_budget, agent_refused_task, verifier_failed, cancelled); the status here
#: asks whose doing the end of the trial was: the agent under test (``agent_error``), its
#: clock (``timeout``), the sandbox's memory limit (``oom_killed``), the verifier
#: (:data:`VERIFIER_ERROR`), or anything else outside the agent (``infra_error``).
#: tests/importers/test_importers_harbor.py checks, against an installed Harbor, that every
#: exception class Harbor defines and every name its policy table lists is here.
GROUPS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    (
        "timeout",
        "the agent ran out of time; Harbor still ran the verifier, whose reward is kept",
        ("AgentTimeoutError",),
    ),
    (
        VERIFIER_ERROR,
        "the verifier timed out or left no valid reward (Harbor: verifier_failed)",
        (
            "VerifierTimeoutError",
            "RewardFileNotFoundError",
            "RewardFileEmptyError",
            "VerifierOutputParseError",
        ),
    ),
    (
        "oom_killed",
        "the sandbox ran out of memory (Harbor: sandbox_failed)",
        ("MemoryLimitExceededError", "SandboxLikelyOutOfMemoryError"),
    ),
    (
        "infra_error",
        "the environment could not be built, started, reached or set up, or the tests could "
        "not be copied in or the verifier's files out (Harbor: sandbox_failed), including "
        "the sandbox back ends' own errors",
        (
            "EnvironmentStartTimeoutError",
            "SandboxBuildFailedError",
            "AgentSetupTimeoutError",
            "HealthcheckError",
            "SSHAccessError",
            "GKEExecStreamClosedError",
            "GKEPodNotFoundError",
            "RuntimeRequestError",
            "AddTestsDirError",
            "DownloadVerifierDirError",
            "CreateOutcomeUnknown",
            "EndpointCredentialExpired",
            "IncompleteDownload",
            "InfrastructureTimeout",
            "RequestThrottled",
            "SbxCommandError",
            "ShortCredential",
            "_OutputLimitExceeded",
            "_SnapshotNeedsCreate",
        ),
    ),
    (
        "infra_error",
        "the model provider was unavailable: rate limits, server errors, lost connections, "
        "usage caps (Harbor: model_provider_failed, retried)",
        (
            "ApiError",
            "ApiRateLimitError",
            "ApiInternalServerError",
            "ApiOverloadedError",
            "ApiConnectionClosedError",
            "ApiResponseStalledError",
            "UnknownApiError",
            "NetworkConnectionError",
            "ApiConnectionError",
            "ApiUsageLimitError",
            "RateLimitError",
            "InternalServerError",
            "ServiceUnavailableError",
            "APIConnectionError",
            "APIError",
            "Timeout",
            "APIResponseValidationError",
        ),
    ),
    (
        "infra_error",
        "the run was misconfigured: credentials refused or missing, model not found "
        "(Harbor: model_provider_failed, not graded)",
        (
            "AgentAuthenticationError",
            "ModelNotFoundError",
            "ApiProviderResourceNotFoundError",
            "AuthenticationError",
            "PermissionDeniedError",
            "NotFoundError",
            "MissingModelCredentialError",
        ),
    ),
    (
        "agent_error",
        "the agent's requests were refused as malformed or over its own budget (Harbor: "
        "model_provider_failed, graded)",
        (
            "BadRequestError",
            "UnprocessableEntityError",
            "UnsupportedParamsError",
            "UnsupportedModelParametersError",
            "BudgetExceededError",
        ),
    ),
    (
        "agent_error",
        "the agent used up its context or output budget (Harbor: agent_exhausted_budget)",
        (
            "ContextWindowExceededError",
            "OutputTokenExceededError",
            "ContextLengthExceededError",
            "OutputLengthExceededError",
        ),
    ),
    (
        "agent_error",
        "the agent refused the task (Harbor: agent_refused_task)",
        ("AgentSafetyRefusalError", "ContentPolicyViolationError"),
    ),
    (
        "agent_error",
        "the agent's process exited non-zero (Harbor: unclassified)",
        ("NonZeroAgentExitCodeError",),
    ),
    (
        "infra_error",
        "Harbor itself failed or the run was cancelled (Harbor: harbor_failed, cancelled)",
        (
            "ServiceOperationsUnsupportedError",
            "VercelScopeError",
            "DspyImportError",
            "MissingExtraError",
            "RegradeError",
            "CancelledError",
        ),
    ),
    (
        "infra_error",
        "errors of Harbor's command line, hub, registry, upload and viewer, outside any "
        "trial; should one be recorded in a trial, it is not the agent's doing",
        (
            "ApiKeyRejectedError",
            "ComposeLoadError",
            "EmptyDatasetError",
            "HarborHubAgentCatalogError",
            "HostedNotApprovedError",
            "HostedQuotaExceededError",
            "LeaderboardAPIError",
            "MultimodalExportError",
            "NotAuthenticatedError",
            "OAuthCallbackError",
            "OwnerOrgError",
            "RegistryCredentialReplacementRequired",
            "SecretReplacementRequired",
            "StaleAccessTokenError",
            "StreamError",
            "TaskVersionNotFoundError",
            "UnavailableDatasetTasksError",
            "_BatchUpdateError",
        ),
    ),
)

#: Harbor exception type name → TRIALS status: the one table (built from :data:`GROUPS`).
STATUS_OF_EXCEPTION: dict[str, str] = {
    name: status for status, _, names in GROUPS for name in names
}
