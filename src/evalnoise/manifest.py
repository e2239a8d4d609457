"""The run manifest: what produced an evaluation's results, and the hash of every artifact.

:func:`build_manifest` records the config and its hash, the run seed and how trial seeds
derive from it, the trial order (its seed and rule: :data:`TRIAL_ORDER_RULE`), the git
commit and whether the tree was dirty, the versions of the packages that shape the numbers,
container image digests, model file hashes, the judge template hash, the host, the trial
backend, UTC start and end times, and the SHA-256 and size of every artifact (paths
relative to ``root``, sorted).

No secret ever appears in a manifest:

- a config value under a key that names a credential (``api_key``, ``*_api_key``,
  ``password``, ``secret``, ``*_token``, ...) is refused with :class:`SecretInConfigError`
  unless it is the *name* of an environment variable (``OPENAI_API_KEY``) or empty — configs
  name where a secret lives, never the secret itself;
- the values of secret environment variables (the names given, plus every variable whose
  name looks like a credential) are replaced by ``[redacted:NAME]`` wherever they occur in
  the finished manifest, keys included.

The manifest's only timestamps are ``started_at`` and ``ended_at``; everything else is a
pure function of the inputs.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import re
import socket
import subprocess
import sys
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

from evalnoise.atomic import write_text
from evalnoise.formatting import jsonable

__all__ = [
    "PACKAGES",
    "SCHEMA",
    "TRIAL_ORDER_RULE",
    "SecretInConfigError",
    "build_manifest",
    "canonical_json",
    "check_config_secrets",
    "config_hash",
    "file_digest",
    "git_state",
    "package_versions",
    "scrub_secrets",
    "secret_env_names",
    "trial_order_record",
    "write_manifest",
]

SCHEMA = "evalnoise.manifest/1"

#: Distributions whose versions go in the manifest (None when not installed).
PACKAGES = (
    "evalnoise",
    "numpy",
    "scipy",
    "pandas",
    "pyarrow",
    "snakemake",
    "dvc",
    "docker",
    "altair",
    "vl-convert-python",
    "llama_cpp_python",
)

#: How the pipeline orders trials in time (issue 15: a drift of the machine or the model
#: server over the run must not masquerade as a difference between agents).
TRIAL_ORDER_RULE = (
    "blocked by trial block, seeded shuffle within shard: Snakemake prefers every shard "
    "(agent x resource profile x variant x task chunk) of trial block b to any shard of a later "
    "block (job priority), so every group has trials in every time block; within a "
    "shard, (task, trial) pairs run by ascending key = first 8 bytes (big-endian) of "
    'sha256 of the canonical JSON {"agent", "order_seed", "resource_profile", "task_id", '
    '"trial"} (sorted keys, no spaces, UTF-8; plus "variant", its key, in a shard of a '
    "non-neutral prompt or sampling variant), masked to 63 bits; retries are queued as "
    "their failed attempt ends. Recorded per trial as time_block (the block's first trial "
    "index) and run_order (the trial's place in its shard's order)."
)

#: Environment variable names that look like credentials.
SECRET_NAME = re.compile(
    r"(API_?KEY|ACCESS_?KEY|SECRET|TOKEN|PASSWORD|PASSWD|CREDENTIALS?|PRIVATE_?KEY)",
    re.IGNORECASE,
)
#: Config keys whose value must never be a literal credential.
SECRET_KEY = re.compile(
    r"(^|_)(api_?key|apikey|secret|secret_key|password|passwd|access_key|private_key|"
    r"access_token|auth_token|bearer_token|token)$",
    re.IGNORECASE,
)
_ENV_NAME = re.compile(r"^[A-Z_][A-Z0-9_]*$")
#: Secret values shorter than this are not scrubbed (they would redact ordinary text);
#: such short values are not credentials anyway.
MIN_SECRET_LENGTH = 6

_CHUNK = 1 << 20


class SecretInConfigError(ValueError):
    """A config holds what looks like a literal credential."""


def canonical_json(value: Any) -> str:
    """Sorted keys, no whitespace, UTF-8 text; NaN refused. The form that gets hashed."""
    return json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    )


def config_hash(config: Mapping[str, Any]) -> str:
    """SHA-256 hex digest of the config's canonical JSON."""
    return hashlib.sha256(canonical_json(config).encode("utf-8")).hexdigest()


def file_digest(path: str | os.PathLike[str]) -> tuple[str, int]:
    """(SHA-256 hex digest, size in bytes) of a file, read in 1 MiB chunks."""
    digest = hashlib.sha256()
    size = 0
    with open(path, "rb") as fh:
        while chunk := fh.read(_CHUNK):
            digest.update(chunk)
            size += len(chunk)
    return digest.hexdigest(), size


def check_config_secrets(config: Any, _path: str = "") -> None:
    """Raise :class:`SecretInConfigError` if a credential-named key holds a literal value.

    Allowed string values under such keys: empty, or an environment variable name (upper
    case letters, digits and underscores), e.g. ``api_key: OPENAI_API_KEY``. Non-strings
    (numbers such as ``max_token: 512``, null, nested mappings) are not credentials and pass;
    nested mappings and lists are checked in turn.
    """
    if isinstance(config, Mapping):
        for key, value in config.items():
            where = f"{_path}.{key}" if _path else str(key)
            if SECRET_KEY.search(str(key)) and isinstance(value, str | bytes):
                if value and not (isinstance(value, str) and _ENV_NAME.match(value)):
                    raise SecretInConfigError(
                        f"config key {where!r} holds a literal value; put the secret in an "
                        "environment variable and give its name instead"
                    )
            check_config_secrets(value, where)
    elif isinstance(config, list | tuple):
        for i, value in enumerate(config):
            check_config_secrets(value, f"{_path}[{i}]")


def secret_env_names(
    names: Iterable[str] = (), environ: Mapping[str, str] | None = None
) -> list[str]:
    """The given names plus every variable in ``environ`` whose name looks like a credential."""
    env = os.environ if environ is None else environ
    found = set(names) | {k for k in env if SECRET_NAME.search(k)}
    return sorted(found)


def scrub_secrets(
    value: Any, names: Iterable[str] = (), environ: Mapping[str, str] | None = None
) -> Any:
    """Replace every occurrence of a secret env var's value with ``[redacted:NAME]``.

    Applies to all strings in ``value`` (dict keys included), recursively. Longer secrets
    are replaced first, so one secret containing another is redacted whole.
    """
    env = os.environ if environ is None else environ
    secrets = sorted(
        (
            (env[n], n)
            for n in secret_env_names(names, env)
            if n in env and len(env[n]) >= MIN_SECRET_LENGTH
        ),
        key=lambda item: (-len(item[0]), item[1]),
    )
    if not secrets:
        return value

    def text(s: str) -> str:
        for secret, name in secrets:
            if secret in s:
                s = s.replace(secret, f"[redacted:{name}]")
        return s

    def walk(v: Any) -> Any:
        if isinstance(v, str):
            return text(v)
        if isinstance(v, Mapping):
            return {text(str(k)): walk(x) for k, x in v.items()}
        if isinstance(v, list | tuple):
            return [walk(x) for x in v]
        return v

    return walk(value)


def git_state(root: str | os.PathLike[str]) -> dict[str, Any]:
    """``{"commit": sha or None, "dirty": bool or None}``; None when git or a repo is absent.

    Dirty means ``git status --porcelain`` lists anything (modified, staged or untracked,
    ignored files excluded).
    """
    try:
        commit = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            timeout=30,
            check=True,
        ).stdout.strip()
        status = subprocess.run(
            ["git", "-C", str(root), "status", "--porcelain"],
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return {"commit": None, "dirty": None}
    return {"commit": commit or None, "dirty": bool(status.strip())}


def package_versions(packages: Sequence[str] = PACKAGES) -> dict[str, str | None]:
    out: dict[str, str | None] = {}
    for name in packages:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    return out


def trial_order_record(config: Mapping[str, Any], run_seed: int | None) -> dict[str, Any] | None:
    """The manifest's ``trial_order``: the order's seed (derived from the run seed:
    :func:`evalnoise.runner.seeds.order_seed`, the hash of ``{"purpose": "trial_order",
    "run_seed": ...}``) and :data:`TRIAL_ORDER_RULE`. None without a run seed or for
    imported trials (``trials_from``): their order is whatever their source did."""
    if run_seed is None or config.get("trials_from"):
        return None
    # the runner's own derivation, so the record can never disagree with what ran
    from evalnoise.runner.seeds import order_seed

    return {"seed": order_seed(run_seed), "rule": TRIAL_ORDER_RULE}


def _utc(value: datetime | str | None, name: str) -> str | None:
    if value is None:
        return None
    if isinstance(value, str):
        value = datetime.fromisoformat(value.replace("Z", "+00:00"))
    if not isinstance(value, datetime):
        raise TypeError(f"{name} must be a datetime, an ISO 8601 string or None")
    if value.tzinfo is None:
        raise ValueError(f"{name} must be timezone-aware (UTC), got a naive datetime")
    return value.astimezone(UTC).isoformat().replace("+00:00", "Z")


def _artifact_files(artifacts: Iterable[str | os.PathLike[str]], root: Path) -> list[Path]:
    files: set[Path] = set()
    for item in artifacts:
        path = Path(item)
        path = path if path.is_absolute() else root / path
        if path.is_dir():
            files.update(p for p in path.rglob("*") if p.is_file())
        elif path.is_file():
            files.add(path)
        else:
            raise FileNotFoundError(f"artifact {item} does not exist")
    return sorted(files)


def _relative(path: Path, root: Path) -> str:
    try:
        return path.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        raise ValueError(f"artifact {path} is outside the root {root}") from None


def build_manifest(
    *,
    config: Mapping[str, Any],
    run_seed: int | None,
    seed_rule: str,
    artifacts: Iterable[str | os.PathLike[str]],
    root: str | os.PathLike[str],
    started_at: datetime | str | None,
    ended_at: datetime | str | None,
    images: Mapping[str, str] | None = None,
    model_files: Mapping[str, str | os.PathLike[str]] | None = None,
    judge_template_hash: str | None = None,
    backend: str | None = None,
    secret_env: Iterable[str] = (),
    environ: Mapping[str, str] | None = None,
    machine: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The provenance record of one run, as a JSON-ready dict with secrets scrubbed.

    Parameters
    ----------
    config : the run's config (as loaded from YAML). Refused if it holds a literal secret.
    run_seed, seed_rule : the run seed and how each trial's seed derives from it; the
        trial order's seed derives from the run seed too (:func:`trial_order_record`).
    artifacts : files or directories (expanded recursively) to hash; relative paths are
        taken from ``root``, and every file must lie inside ``root``.
    root : the project root: git is asked about it and artifact paths are relative to it.
    started_at, ended_at : UTC start and end of the run (aware datetimes or ISO 8601
        strings); None when unknown.
    images : image name → digest.
    model_files : model name → file; each is hashed (SHA-256) and sized.
    judge_template_hash : hash of the LLM judge's prompt template, if a judge scored.
    backend : the trial backend (docker, kubernetes, local).
    secret_env : names of environment variables holding secrets; their values (and those of
        every variable whose name looks like a credential) are scrubbed from the manifest.
    environ : the environment to read secrets from (default ``os.environ``).
    machine : the machine and model runtime (:func:`evalnoise.machine.machine_info`);
        None → read from this machine.
    """
    from evalnoise.machine import machine_info

    check_config_secrets(config)
    root_path = Path(root)
    cfg = jsonable(dict(config))
    artifact_rows = []
    for path in _artifact_files(artifacts, root_path):
        digest, size = file_digest(path)
        artifact_rows.append({"path": _relative(path, root_path), "sha256": digest, "size": size})
    artifact_rows.sort(key=lambda row: row["path"])
    models = {}
    for name, path in sorted((model_files or {}).items()):
        digest, size = file_digest(path)
        models[str(name)] = {"file": Path(path).name, "sha256": digest, "size": size}
    manifest = {
        "schema": SCHEMA,
        "config": cfg,
        "config_sha256": config_hash(cfg),
        "run_seed": run_seed,
        "seed_rule": seed_rule,
        "trial_order": trial_order_record(config, run_seed),
        "git": git_state(root_path),
        "packages": package_versions(),
        "python": platform.python_version(),
        "images": {str(k): str(v) for k, v in sorted((images or {}).items())},
        "model_files": models,
        "judge_template_sha256": judge_template_hash,
        "host": {
            "hostname": socket.gethostname(),
            "platform": platform.platform(),
            "machine": platform.machine(),
            "cpu_count": os.cpu_count(),
            "executable": sys.executable,
        },
        "machine": dict(machine) if machine is not None else machine_info(),
        "backend": backend,
        "started_at": _utc(started_at, "started_at"),
        "ended_at": _utc(ended_at, "ended_at"),
        "artifacts": artifact_rows,
    }
    return scrub_secrets(manifest, secret_env, environ)


def write_manifest(path: str | os.PathLike[str], manifest: Mapping[str, Any]) -> None:
    """Write the manifest atomically as sorted, indented JSON with a trailing newline."""
    text = json.dumps(
        jsonable(manifest), indent=2, sort_keys=True, ensure_ascii=False, allow_nan=False
    )
    write_text(path, text + "\n")
