"""``evalnoise archive`` and ``evalnoise verify``: one verifiable file per evaluation.

``archive`` packs the config, ``dvc.lock`` (if present), the run manifest and every file
under the results directory into a deterministic ``tar.gz`` with a ``MANIFEST`` of SHA-256
hashes (:mod:`evalnoise.archive`). The run manifest is ``<results>/manifest.json`` when the
pipeline wrote one; otherwise a manifest is built at archive time
(:func:`evalnoise.manifest.build_manifest`, with null start/end times, so identical inputs
still give identical archives) and stored as ``manifest.json``.

Before it packs anything, ``archive`` checks ``results/`` against the run's manifest
(:func:`evalnoise.results_check.check_results`) and refuses, naming every changed, deleted
and added file, unless ``--allow-modified`` is given: the archive then carries the differences
as ``modifications.json``.

``verify`` recomputes every member's hash: exit 0 when all match ``MANIFEST``, 1 otherwise,
listing what is missing, extra or changed; it also checks the archived ``results/`` against
the archived ``manifest.json`` (a difference the archive does not declare in
``modifications.json`` fails). ``verify --workspace DIR`` checks ``DIR/results`` against
``DIR/results/manifest.json`` instead.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import yaml

from evalnoise.archive import (
    ArchiveError,
    collect_members,
    create_archive,
    read_members,
    verify_archive,
)
from evalnoise.errors import InputError
from evalnoise.manifest import SecretInConfigError, build_manifest, check_config_secrets
from evalnoise.results_check import (
    check_results,
    compare_digests,
    recorded_digests,
    recorded_files,
)

ARCHIVE_HELP = "pack config, manifest, results and dvc.lock into one verifiable tar.gz"
VERIFY_HELP = "check every member of an evaluation archive against its MANIFEST"

#: The seed rule recorded when the manifest is built after the run, by ``archive``.
UNRECORDED_SEED_RULE = "not recorded: manifest built by `evalnoise archive` after the run"
#: The member that records how an archive's results differ from its run's manifest.
MODIFICATIONS_NAME = "modifications.json"


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "archive",
        help=ARCHIVE_HELP,
        description=ARCHIVE_HELP + ". Same inputs, byte-identical archive.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    p.add_argument("--config", default="config/config.yaml", help="the run's config file")
    p.add_argument("--results", default="results", help="directory of the run's artifacts")
    p.add_argument("--dvc-lock", default="dvc.lock", help="dvc.lock to include, if it exists")
    p.add_argument("-o", "--output", default="evaluation.tar.gz", help="archive to write")
    p.add_argument(
        "--allow-modified",
        action="store_true",
        help="archive results that differ from the run's manifest; the archive records how "
        f"({MODIFICATIONS_NAME})",
    )
    p.set_defaults(run=run_archive)

    v = subparsers.add_parser("verify", help=VERIFY_HELP, description=VERIFY_HELP + ".")
    v.add_argument("archive", nargs="?", help="an archive written by `evalnoise archive`")
    v.add_argument(
        "--workspace",
        metavar="DIR",
        help="check DIR/results against DIR/results/manifest.json instead of an archive",
    )
    v.set_defaults(run=run_verify)


def _load_config(path: Path) -> dict[str, Any]:
    if not path.is_file():
        raise InputError("no such file", path=str(path))
    try:
        config = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise InputError(f"not valid YAML: {first}", path=str(path)) from exc
    if not isinstance(config, dict):
        raise InputError("the config is not a mapping", path=str(path))
    try:
        check_config_secrets(config)
    except SecretInConfigError as exc:
        raise InputError(str(exc), path=str(path)) from exc
    return config


def _load_manifest(path: Path) -> dict[str, Any]:
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError(f"not a readable run manifest: {exc}", path=str(path)) from exc
    if not isinstance(manifest, dict) or not isinstance(manifest.get("artifacts"), list):
        raise InputError("not a run manifest (no 'artifacts' list)", path=str(path))
    return manifest


def _display(results: Path) -> str:
    return results.as_posix().rstrip("/") or "."


def _root_for(results: Path) -> Path:
    """The project root artifact paths are relative to: the working directory, or the
    results directory's parent when the results lie elsewhere."""
    cwd = Path.cwd().resolve()
    res = results.resolve()
    return cwd if res.is_relative_to(cwd) else res.parent


def run_archive(args: argparse.Namespace) -> int:
    config_path, results = Path(args.config), Path(args.results)
    output = Path(args.output)
    config = _load_config(config_path)
    if not results.is_dir():
        raise InputError("no such directory", path=str(results))
    extra: dict[str, bytes] = {}
    run_manifest = results / "manifest.json"
    if run_manifest.is_file():
        check = check_results(
            results, _load_manifest(run_manifest), root=_root_for(results), exclude=[output]
        )
        if not check.ok:
            lines = check.lines(_display(results))
            if not args.allow_modified:
                raise InputError(
                    f"{len(lines)} file(s) differ from the run's manifest; refusing to archive "
                    "(--allow-modified archives them and records the differences):\n  "
                    + "\n  ".join(lines),
                    path=str(run_manifest),
                )
            record = {"reason": "archived with --allow-modified", **check.record()}
            extra[MODIFICATIONS_NAME] = (
                json.dumps(record, indent=2, sort_keys=True) + "\n"
            ).encode()
            for line in lines:
                print(f"modified run: {line}")
    else:
        manifest = build_manifest(
            config=config,
            run_seed=config.get("run_seed"),
            seed_rule=UNRECORDED_SEED_RULE,
            artifacts=recorded_files(results, exclude=[output]),
            root=_root_for(results),
            started_at=None,
            ended_at=None,
            backend=config.get("backend"),
        )
        text = json.dumps(manifest, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
        extra["manifest.json"] = text.encode("utf-8")
    dvc_lock = Path(args.dvc_lock)
    try:
        members = collect_members(
            config=config_path,
            results=results,
            dvc_lock=dvc_lock if dvc_lock.is_file() else None,
            extra=extra,
            exclude=[output],
        )
        res = create_archive(output, members)
    except ArchiveError as exc:
        raise InputError(str(exc), path=str(output)) from exc
    print(f"wrote {output}: {len(res.members)} members + MANIFEST, sha256 {res.sha256}")
    return 0


def run_verify(args: argparse.Namespace) -> int:
    if (args.archive is None) == (args.workspace is None):
        raise InputError("give an archive or --workspace DIR (one of them)")
    if args.workspace is not None:
        return _verify_workspace(Path(args.workspace))
    path = Path(args.archive)
    if not path.is_file():
        raise InputError("no such file", path=str(path))
    res = verify_archive(path)
    for line in res.lines():
        print(line)
    if not res.ok:
        print(f"FAILED: {path} does not match its MANIFEST")
        return 1
    print(f"OK: {res.n_checked} members match MANIFEST")
    return _verify_archived_results(path, res.digests)


def _verify_archived_results(path: Path, digests: dict[str, str]) -> int:
    """The archived results/ against the archived manifest.json; differences pass only
    when the archive declares exactly them in modifications.json."""
    texts = read_members(path, ("results/manifest.json", "manifest.json", MODIFICATIONS_NAME))
    manifest_text = texts.get("results/manifest.json", texts.get("manifest.json"))
    if manifest_text is None:
        print(f"note: {path} holds no run manifest: only its MANIFEST was checked")
        return 0
    try:
        manifest = json.loads(manifest_text)
        declared = json.loads(texts.get(MODIFICATIONS_NAME, b"null"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        print(f"FAILED: {path}: manifest.json or {MODIFICATIONS_NAME} is not JSON: {exc}")
        return 1
    actual = {
        name.removeprefix("results/"): digest
        for name, digest in digests.items()
        if name.startswith("results/")
    }
    check = compare_digests(recorded_digests(manifest), actual)
    if check.ok:
        print(f"OK: the archived results match the run's manifest ({check.n_checked} files)")
        return 0
    lines = check.lines()
    if isinstance(declared, dict) and all(declared.get(k) == v for k, v in check.record().items()):
        for line in lines:
            print(f"modified run (declared in {MODIFICATIONS_NAME}): {line}")
        print(f"OK: {path} is an archive of a modified run; its {MODIFICATIONS_NAME} names them")
        return 0
    for line in lines:
        print(line)
    print(f"FAILED: the results in {path} do not match the run's manifest.json")
    return 1


def _verify_workspace(workspace: Path) -> int:
    results = workspace / "results"
    manifest = results / "manifest.json"
    if not manifest.is_file():
        raise InputError("no run manifest (run the pipeline first)", path=str(manifest))
    check = check_results(results, _load_manifest(manifest), root=workspace)
    for line in check.lines(_display(results)):
        print(line)
    if check.ok:
        print(f"OK: {check.n_checked} files under {results} match {manifest}")
        return 0
    print(f"FAILED: {results} does not match {manifest}")
    return 1
