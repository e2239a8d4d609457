"""The trial runner: every (agent, resource profile, task, trial) as one isolated run.

- :mod:`~evalnoise.runner.shard` — :func:`run_shard`: a shard of trials with bounded
  concurrency, an fsynced append-only journal, resume after SIGKILL, atomic Parquet output.
- :mod:`~evalnoise.runner.docker_backend` — one fresh hardened container per trial.
- :mod:`~evalnoise.runner.local_backend` — plain subprocesses (isolates much less).
- :mod:`~evalnoise.runner.resources` — resource profiles → guarantees, hard limits, time limit.
- :mod:`~evalnoise.runner.infra_policies` — the infra policy (as_incorrect / retry / exclude).
- :mod:`~evalnoise.runner.contract` — the agent contract (task in, answer out).
- :mod:`~evalnoise.runner.seeds` — trial seeds.
- :mod:`~evalnoise.runner.base_image` — the base image, and agent images built on it offline.

Its commands, ``evalnoise run-shard`` and ``evalnoise image``, are the command line's
(:mod:`evalnoise.cli.run_shard`, :mod:`evalnoise.cli.image`): the runner imports no CLI.

The names below are loaded on first access (PEP 562 ``__getattr__``): the statistics and the
attribution read the infra policy (:mod:`~evalnoise.runner.infra_policies`), and importing it must
not import the shard runner and its backends (``evalnoise analyze`` loads no runner).
"""

from __future__ import annotations

from typing import Any

from evalnoise import _lazy

__all__ = [
    "BUILTIN_RESOURCE_PROFILES",
    "AgentSpec",
    "Allocation",
    "EngineUnavailable",
    "InfraPolicy",
    "PolicyResult",
    "ResourceProfile",
    "ShardResult",
    "TrialRequest",
    "agent_spec",
    "allocate",
    "apply_infra_policy",
    "infra_policy",
    "resource_profile",
    "run_shard",
    "seed32",
    "trial_seed",
]

_MODULES = {
    "AgentSpec": "contract",
    "agent_spec": "contract",
    "InfraPolicy": "infra_policies",
    "PolicyResult": "infra_policies",
    "apply_infra_policy": "infra_policies",
    "infra_policy": "infra_policies",
    "BUILTIN_RESOURCE_PROFILES": "resources",
    "Allocation": "resources",
    "ResourceProfile": "resources",
    "allocate": "resources",
    "resource_profile": "resources",
    "seed32": "seeds",
    "trial_seed": "seeds",
    "ShardResult": "shard",
    "run_shard": "shard",
    "EngineUnavailable": "trial",
    "TrialRequest": "trial",
}


def __getattr__(name: str) -> Any:
    return _lazy.load(globals(), _MODULES, name)


def __dir__() -> list[str]:
    return _lazy.names(globals(), __all__)
