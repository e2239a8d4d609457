"""Harbor's ``separate`` verifier: a fresh container, the agent's files copied in.

Harbor 0.25 (``harbor/trial/trial.py``, ``_run_separate_verifier``) starts a new
environment of the verifier's image and uploads the agent's collected artifacts to their
original paths, each passed through tarfile's ``data`` filter. Here:
:func:`clone_container` creates the verifier's container with the agent container's settings
(resources, network, capabilities, the verifier's log mount) but the verifier's image;
:func:`separate_copies` says what is copied — the task's declared ``artifacts``, else its
working directory; :func:`copy_paths` copies them through the engine's archive API,
sanitized as Harbor does (no device files, no setuid/setgid bits, no links leaving the copy).
Which image and which artifacts a task declares: :mod:`evalnoise.tasks.verifier_setup`.
"""

from __future__ import annotations

import io
import tarfile
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import PurePosixPath
from typing import Any

from evalnoise.runner.verifier_integrity import path_stat

__all__ = ["clone_container", "copy_paths", "separate_copies"]


def copy_paths(api: Any, source: str, target: str, paths: Iterable[str]) -> list[str]:
    """Copy each container path of ``source`` to the same path in ``target``, sanitized
    (tarfile's ``data`` filter: regular files, directories and links that stay inside the
    copy; no setuid/setgid bits, no device files); returns notes on what was skipped."""
    import docker.errors

    notes: list[str] = []
    for path in paths:
        try:
            stream, _ = api.get_archive(source, path)
        except docker.errors.NotFound:
            notes.append(f"{path}: not in the agent's container, not copied")
            continue
        with tempfile.SpooledTemporaryFile(max_size=32 << 20) as spool:
            for chunk in stream:
                spool.write(chunk)
            spool.seek(0)
            clean = io.BytesIO()
            refused = 0
            with (
                tarfile.open(fileobj=spool, mode="r|") as tin,
                tarfile.open(fileobj=clean, mode="w") as tout,
            ):
                for info in tin:
                    try:
                        filtered = tarfile.data_filter(info, "/nonexistent-copy-root")
                    except tarfile.FilterError:
                        refused += 1
                        continue
                    # the filter's mode (no setuid/setgid, no group/other write), the
                    # owner kept: a non-root verifier may need the agent user's files
                    mode = info.mode if filtered.mode is None else filtered.mode
                    safe = info.replace(mode=mode & 0o1777, deep=False)
                    data = tin.extractfile(info) if info.isfile() else None
                    tout.addfile(safe, data)
            if refused:
                notes.append(f"{path}: {refused} unsafe entries not copied")
            parent = str(PurePosixPath(path).parent)
            _ensure_dir(api, target, parent)
            api.put_archive(target, parent, clean.getvalue())
    return notes


def _ensure_dir(api: Any, container: str, path: str) -> None:
    """Create the missing part of ``path`` in the container through the archive API (the
    directories that exist are left as they are)."""
    existing = PurePosixPath(path)
    missing: list[str] = []
    while str(existing) != "/" and path_stat(api, container, str(existing)) is None:
        missing.insert(0, existing.name)
        existing = existing.parent
    if not missing:
        return
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        for i in range(1, len(missing) + 1):
            info = tarfile.TarInfo("/".join(missing[:i]))
            info.type, info.mode = tarfile.DIRTYPE, 0o755
            archive.addfile(info)
    api.put_archive(container, str(existing), buffer.getvalue())


def clone_container(
    api: Any, source: str, image: str, name: str, env: Mapping[str, str] | None
) -> str:
    """A new container like ``source`` (its host config: resources, network, capabilities,
    the verifier's log mount; its labels, working directory and idle main command) but of
    ``image``, with the trial's ``env``, started; the agent's log mount is left out.
    Returns its id."""
    info = api.inspect_container(source)
    config, host = info.get("Config") or {}, dict(info.get("HostConfig") or {})
    host["Mounts"] = [
        m for m in host.get("Mounts") or [] if m.get("Target") != "/logs/agent"
    ] or None
    created = api.create_container(
        image=image,
        entrypoint=config.get("Entrypoint"),
        command=config.get("Cmd") or [],
        name=name,
        labels=config.get("Labels"),
        environment=dict(env) if env else None,
        user=config.get("User") or "0:0",
        working_dir=config.get("WorkingDir") or None,
        host_config=host,
        network_disabled=bool(config.get("NetworkDisabled")),
    )["Id"]
    api.start(created)
    return created


def separate_copies(
    api: Any, agent: str, declared: Iterable[str], workdir: str | None
) -> list[str]:
    """What a separate verifier gets of the agent's container: the declared artifacts, else
    the working directory (the task's, else the agent container's); empty when neither."""
    declared = list(declared)
    if declared:
        return declared
    where = workdir or (api.inspect_container(agent).get("Config") or {}).get("WorkingDir")
    return [where] if where and where != "/" else []
