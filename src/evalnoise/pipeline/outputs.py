"""What a run leaves behind besides statistics: the provenance manifest and the report.

:func:`run_manifest` calls :func:`evalnoise.manifest.build_manifest` with what the pipeline
knows: the config, seeds, agent images and their ids, the model file, the judge template
hash, the backend, and the SHA-256 of every artifact. Its ``started_at``/``ended_at`` are
the first trial's start and the last trial's end as recorded in the trial shards (not the
wall clock when the manifest was written), so rebuilding the manifest from the same trials
gives the same times.

:func:`card_context` is what the report's Evaluation Cards say about the run, from the config
(the report itself: :class:`evalnoise.report.inputs.ReportInputs` and
:func:`evalnoise.report.build_report`).

:func:`execution_record` is the manifest's ``execution``: every ``run_trials`` job of every
shard as the job recorded itself (:func:`evalnoise.pipeline.slurm_resources.record_job`:
executor ``slurm`` or ``local``, Slurm job id, node); a shard that took several jobs
(cancelled, then resumed) lists each.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from evalnoise.pipeline.judges import judge_specs, uses_judge_server
from evalnoise.pipeline.sampling import benchmark_name
from evalnoise.pipeline.settings import (
    infra_policy_spec,
    judge_stage,
    uses_judge,
    uses_model_server,
)
from evalnoise.pipeline.slurm_resources import read_job_records

__all__ = [
    "SEED_RULE",
    "card_context",
    "execution_record",
    "run_manifest",
    "trial_time_span",
]

SEED_RULE = (
    "trial seed = first 8 bytes (big-endian) of sha256 of the canonical JSON "
    '{"agent", "run_seed", "task_id", "trial"} (sorted keys, no spaces, UTF-8), masked to '
    "63 bits; agents whose RNG takes 32 bits use its low 31 bits (seed32). The resource "
    "profile is not an input: the same trial gets the same seed under every profile. A "
    'trial of a prompt or sampling variant adds {"variant": its key} (none for the neutral '
    "variant)."
)


def trial_time_span(paths: Iterable[str | os.PathLike[str]]) -> tuple[Any, Any]:
    """(earliest ``started_at``, latest ``ended_at``) over trial shards; None if unknown."""
    starts, ends = [], []
    for path in paths:
        table = pq.read_table(path, columns=["started_at", "ended_at"]).to_pandas()
        starts.extend(table["started_at"].dropna())
        ends.extend(table["ended_at"].dropna())
    start = min(starts).to_pydatetime().astimezone(UTC) if starts else None
    end = max(ends).to_pydatetime().astimezone(UTC) if ends else None
    return start, end


def execution_record(trial_shards: Iterable[str | os.PathLike[str]]) -> dict[str, Any]:
    """The manifest's ``execution``: every ``run_trials`` job of every shard, as the job
    recorded itself (:func:`evalnoise.pipeline.slurm_resources.record_job`), and the
    executors of each shard's last job (``unknown`` for a shard with no record, e.g. one
    restored with ``dvc pull``)."""
    jobs, executors = [], set()
    for shard in sorted(str(s) for s in trial_shards):
        records = read_job_records(shard)
        executors.add(records[-1].get("executor", "unknown") if records else "unknown")
        for record in records:
            jobs.append(
                {
                    "shard": shard,
                    "executor": record.get("executor"),
                    "slurm_job_id": record.get("slurm_job_id"),
                    "node": record.get("node"),
                }
            )
    return {"executors": sorted(executors), "trial_jobs": jobs}


def _served(config: Mapping[str, Any]) -> bool:
    if config.get("trials_from"):
        return False
    return any(uses_model_server(config, name) for name in config["agents"]) or (
        uses_judge(config)
        and any(uses_judge_server(s) for s in judge_specs(config["scorer"]["judge"]).values())
    )


def run_manifest(
    config: Mapping[str, Any],
    *,
    root: str | os.PathLike[str],
    artifacts: Sequence[str | os.PathLike[str]],
    trial_shards: Sequence[str | os.PathLike[str]],
    image_infos: Sequence[str | os.PathLike[str]],
) -> dict[str, Any]:
    """The run's provenance manifest (see module docstring)."""
    from evalnoise.manifest import build_manifest
    from evalnoise.pipeline.judges import judge_template_hash

    imported = bool(config.get("trials_from"))
    images = {}
    for path in image_infos:
        info = json.loads(Path(path).read_text(encoding="utf-8"))
        if info.get("image"):
            images[info["image"]] = info.get("id") or "unknown"
    model_files = {}
    if _served(config):
        from evalnoise.models import default_model_path

        server = config["model_server"]
        model_files[server["alias"]] = server["model_path"] or default_model_path()
    judge_hash = None
    judge_hashes = {}
    if not imported and uses_judge(config):
        judge_hash = judge_template_hash(config["scorer"]["judge"])
        judge_hashes = {
            name: judge_template_hash(spec)
            for name, spec in judge_specs(config["scorer"]["judge"]).items()
        }
    secret_names = sorted(
        {
            name
            for agent in (config.get("agents") or {}).values()
            for name in agent.get("secret_env", [])
        }
    )
    judge_section = (config.get("scorer") or {}).get("judge") or {}
    for judge_key in sorted(
        {s.get("api_key_env") for s in judge_specs(judge_section).values()} - {None}
    ):
        secret_names.append(judge_key)
    started, ended = trial_time_span(trial_shards)
    manifest = build_manifest(
        config=config,
        run_seed=None if imported else int(config["run_seed"]),
        seed_rule="imported trials: seeds as recorded by their source" if imported else SEED_RULE,
        artifacts=list(artifacts),
        root=root,
        started_at=started,
        ended_at=ended,
        images=images,
        model_files=model_files,
        judge_template_hash=judge_hash,
        backend="imported" if imported else config["backend"],
        secret_env=secret_names,
    )
    if not imported:
        manifest["execution"] = execution_record(trial_shards)
    if len(judge_hashes) > 1:
        # every judge's prompt, mode and schemas (or rule); the first is judge_template_sha256
        manifest["judge_template_sha256_by_judge"] = judge_hashes
    return manifest


def _agent_description(
    config: Mapping[str, Any], name: str, images: Mapping[str, str]
) -> dict[str, Any]:
    agent = config["agents"][name]
    out: dict[str, Any] = {}
    if agent["model"] == "served":
        out["model"] = config["model_server"]["alias"]
        out["model_server"] = "llama.cpp (managed, 127.0.0.1)"
    decoding = {k: v for k, v in sorted(agent["env"].items()) if k.startswith("AGENT_")}
    if decoding:
        out["decoding"] = decoding
    if images.get(name):
        out["image"] = images[name]
    if agent["command"]:
        out["command"] = " ".join(agent["command"])
    out.update(agent["description"])
    return out


def card_context(config: Mapping[str, Any], *, images: Mapping[str, str] | None = None) -> Any:
    """The run-level facts of the Evaluation Cards."""
    from evalnoise.report import CardContext
    from evalnoise.runner.infra_policies import infra_policy

    images = images or {}
    policy = infra_policy(infra_policy_spec(config)).describe()
    confidence = config["analysis"]["confidence"]
    if config.get("trials_from"):
        return CardContext(
            benchmark=Path(config["trials_from"]).stem,
            infra_policy=policy,
            benchmark_version=config["report"]["benchmark_version"],
            backend=None,
            scoring={"scorer": "recorded (the imported table's own scores)"},
            confidence=confidence,
            prices=config.get("prices"),
        )
    bench = config["benchmark"]
    version = config["report"]["benchmark_version"]
    if version is None and bench["source"] == "generated":
        version = f"generated/v1, seed {bench['seed']}, {bench['n']} tasks"
    scorer = config["scorer"]
    scoring: dict[str, Any] = {"scorer": scorer["name"]}
    if scorer["name"] in ("numeric", "fuzzy"):
        scoring.update(scorer[scorer["name"]])
    if scorer["name"] == "judge" or judge_stage(config):
        from evalnoise.pipeline.judges import judge_template_hash

        specs = judge_specs(scorer["judge"])
        judge = next(iter(specs.values()))
        scoring.update(
            {
                "judge_stage": scorer["name"] != "judge",
                "judge_model": f"rule:{judge['rule']}"
                if judge["rule"]
                else judge["model"] or config["model_server"]["alias"],
                "judge_mode": "rule" if judge["rule"] else judge["mode"],
                "judge_samples": 1 if judge["rule"] else judge["samples"],
                "template_sha256": judge_template_hash(judge),
            }
        )
        if len(specs) > 1 and scorer["name"] != "judge":
            scoring["judges"] = ", ".join(
                f"{name} (rule {s['rule']})"
                if s["rule"]
                else f"{name} ({s['model'] or config['model_server']['alias']}, {s['mode']}, "
                f"{s['samples']} samples)"
                for name, s in specs.items()
            )
    return CardContext(
        benchmark=benchmark_name(bench),
        infra_policy=policy,
        benchmark_version=version,
        backend=config["backend"],
        agents={name: _agent_description(config, name, images) for name in config["agents"]},
        resource_profiles={name: dict(rp) for name, rp in config["resource_profiles"].items()},
        run_seed=int(config["run_seed"]),
        seed_rule=SEED_RULE,
        scoring=scoring,
        confidence=confidence,
        prices=config.get("prices"),
    )
