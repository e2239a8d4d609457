"""The page's "Run" section: the run's settings, a summary of its manifest (config hash, git
commit, seeds, backend, times, packages, images, executor and trial jobs) and the machine
the trials ran on (host, CPU model, cgroup version, llama.cpp runtime), so every number on
the page traces back to what produced it.
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from typing import Any

from evalnoise.report.cards import ICC_VARIANT, CardContext
from evalnoise.report.health import machine_of

__all__ = ["machine_rows", "manifest_rows", "run_section"]


def manifest_rows(manifest: Mapping[str, Any] | None) -> list[tuple[str, str]]:
    """The manifest as (field, value) rows; one row "not given" without a manifest."""
    if manifest is None:
        return [("manifest", "not given")]
    git = manifest.get("git") or {}
    commit = git.get("commit")
    commit_text = "not a git checkout" if commit is None else str(commit)
    if git.get("dirty"):
        commit_text += " (uncommitted changes)"
    packages = manifest.get("packages") or {}
    host = manifest.get("host") or {}
    rows = [
        ("config sha256", str(manifest.get("config_sha256", "not recorded"))),
        ("git commit", commit_text),
        ("run seed", str(manifest.get("run_seed"))),
        ("seed rule", str(manifest.get("seed_rule") or "not recorded")),
        ("backend", str(manifest.get("backend") or "not recorded")),
        ("started (UTC)", str(manifest.get("started_at") or "not recorded")),
        ("ended (UTC)", str(manifest.get("ended_at") or "not recorded")),
        ("host", str(host.get("hostname") or "not recorded")),
        ("evalnoise", str(packages.get("evalnoise") or "not recorded")),
        (
            "packages",
            ", ".join(f"{k} {v}" for k, v in sorted(packages.items()) if v and k != "evalnoise")
            or "not recorded",
        ),
        ("images", str(len(manifest.get("images") or {}))),
        ("model files", str(len(manifest.get("model_files") or {}))),
        ("judge template sha256", str(manifest.get("judge_template_sha256") or "none")),
        ("artifacts hashed", str(len(manifest.get("artifacts") or []))),
    ]
    execution = manifest.get("execution")
    if execution:
        jobs = execution.get("trial_jobs") or []
        slurm = sorted({str(j["slurm_job_id"]) for j in jobs if j.get("slurm_job_id")}, key=int)
        rows.append(("executor", ", ".join(execution.get("executors") or []) or "not recorded"))
        rows.append(
            (
                "trial jobs",
                f"{len(jobs)}" + (f"; Slurm job ids {', '.join(slurm)}" if slurm else ""),
            )
        )
    return rows


def machine_rows(manifest: Mapping[str, Any] | None) -> list[tuple[str, str]]:
    """The machine the trials ran on: host, CPU model, cgroup version, llama.cpp runtime."""
    machine = machine_of(manifest)
    if machine is None:
        return [("machine", "not recorded")]
    rows = [
        ("host", machine["host"] or "not recorded"),
        ("CPU model", machine["cpu_model"] or "not recorded"),
        ("cgroup version", machine["cgroup_version"] or "not recorded"),
    ]
    llama = machine["llama_cpp"]
    if llama is None:
        rows.append(("llama.cpp runtime", "none recorded"))
        return rows
    runtime = f"llama-cpp-python {llama['version'] or '(version not recorded)'}"
    if llama["wheel_key"]:
        runtime += f" (wheel {llama['wheel_key']})"
    rows += [
        ("llama.cpp runtime", runtime),
        ("llama.cpp declared CPU baseline", llama["cpu_baseline"] or "not recorded"),
        ("llama.cpp CPU features", llama["system_info"] or "not recorded"),
    ]
    return rows


def _kv_table(rows: Sequence[tuple[str, str]], cls: str = "kv") -> str:
    body = "\n".join(
        f"<tr><th>{html.escape(k)}</th><td>{html.escape(v)}</td></tr>" for k, v in rows
    )
    return f'<table class="{cls}">\n{body}\n</table>'


def run_section(card_context: CardContext, manifest: Mapping[str, Any] | None) -> str:
    """The ``<section id="run">``: the run's settings, its manifest and its machine."""
    run_rows = [
        ("infra policy", card_context.infra_policy),
        ("backend", card_context.backend or "not recorded"),
        ("confidence level", f"{card_context.confidence:.0%}"),
        ("ICC", ICC_VARIANT),
    ]
    return f"""<section id="run">
<h2>Run</h2>
{_kv_table(run_rows)}
<h3>Manifest</h3>
{_kv_table(manifest_rows(manifest))}
<h3 id="machine">Machine</h3>
{_kv_table(machine_rows(manifest))}
</section>"""
