"""evalnoise archive / verify: deterministic, self-verifying evaluation archives."""

from __future__ import annotations

import argparse
import gzip
import io
import json
import os
import shutil
import subprocess
import tarfile
from pathlib import Path

import pytest

from evalnoise.archive import (
    MANIFEST_NAME,
    ArchiveError,
    collect_members,
    create_archive,
    parse_manifest,
    verify_archive,
)
from evalnoise.cli import archive_verify as archive_cli
from evalnoise.errors import InputError

FAKE_SECRET = "sk-test-5f3a9c1e7b2d4f6a8c0e"


def _project(root: Path) -> Path:
    (root / "config").mkdir(parents=True)
    (root / "config" / "config.yaml").write_text("trials_from: t.csv\nrun_seed: 3\n")
    res = root / "results"
    (res / "analysis").mkdir(parents=True)
    (res / "analysis" / "groups.json").write_text('{"groups": []}\n')
    (res / "report").mkdir()
    (res / "report" / "index.html").write_text("<html></html>\n")
    (res / "shard-0.parquet").write_bytes(os.urandom(3000))
    (res / ".groups.json.abc.tmp").write_text("in flight")
    (root / "dvc.lock").write_text("schema: '2.0'\n")
    return root


def _members(root: Path, **kw):
    return collect_members(
        config=root / "config" / "config.yaml",
        results=root / "results",
        dvc_lock=root / "dvc.lock",
        **kw,
    )


def _cli(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="evalnoise")
    archive_cli.add_parser(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    return args.run(args)


def _names(path: Path) -> list[str]:
    with tarfile.open(path, "r:gz") as tar:
        return tar.getnames()


def _rewrite(src: Path, dst: Path, edit) -> None:
    """Copy an archive member by member; ``edit(name, data)`` returns new data or None to drop."""
    with tarfile.open(src, "r:gz") as tin, tarfile.open(dst, "w:gz") as tout:
        for info in tin:
            data = tin.extractfile(info).read()
            new = edit(info.name, data)
            if new is None:
                continue
            info.size = len(new)
            tout.addfile(info, io.BytesIO(new))


def test_round_trip(tmp_path: Path) -> None:
    root = _project(tmp_path / "p")
    out = tmp_path / "eval.tar.gz"
    res = create_archive(out, _members(root), environ={})
    names = _names(out)
    assert names[0] == MANIFEST_NAME
    assert (
        names[1:]
        == sorted(names[1:])
        == [
            "config/config.yaml",
            "dvc.lock",
            "results/analysis/groups.json",
            "results/report/index.html",
            "results/shard-0.parquet",
        ]
    )
    check = verify_archive(out)
    assert check.ok and check.n_checked == 5 and check.lines() == []
    with tarfile.open(out, "r:gz") as tar:
        for info in tar:
            assert (info.mtime, info.uid, info.gid, info.uname, info.gname, info.mode) == (
                0,
                0,
                0,
                "",
                "",
                0o644,
            )
        for name in names[1:]:
            src = root / name if not name.startswith("config/") else root / "config/config.yaml"
            assert tar.extractfile(name).read() == src.read_bytes()
        manifest, problems = parse_manifest(tar.extractfile(MANIFEST_NAME).read())
    assert problems == [] and manifest == res.members


def test_manifest_works_with_sha256sum(tmp_path: Path) -> None:
    if shutil.which("sha256sum") is None:
        pytest.skip("sha256sum not installed")
    root = _project(tmp_path / "p")
    out = tmp_path / "eval.tar.gz"
    create_archive(out, _members(root), environ={})
    dest = tmp_path / "x"
    dest.mkdir()
    with tarfile.open(out, "r:gz") as tar:
        tar.extractall(dest, filter="data")
    done = subprocess.run(
        ["sha256sum", "-c", "--strict", MANIFEST_NAME], cwd=dest, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_identical_inputs_give_byte_identical_archives(tmp_path: Path) -> None:
    root = _project(tmp_path / "p")
    first = tmp_path / "a.tar.gz"
    create_archive(first, _members(root), environ={})
    for path in root.rglob("*"):  # other timestamps, same content
        os.utime(path, (1_000_000, 1_000_000))
    copy = tmp_path / "q"
    shutil.copytree(root, copy)  # other paths and inode order, same content
    second = tmp_path / "b.tar.gz"
    create_archive(second, _members(copy), environ={})
    assert first.read_bytes() == second.read_bytes()
    with gzip.open(first) as gz:
        gz.read(1)
        assert gz.mtime == 0
    (copy / "results" / "analysis" / "groups.json").write_text('{"groups": [1]}\n')
    third = tmp_path / "c.tar.gz"
    create_archive(third, _members(copy), environ={})
    assert third.read_bytes() != first.read_bytes()


def test_tampered_member_is_named(tmp_path: Path, capsys) -> None:
    root = _project(tmp_path / "p")
    good = tmp_path / "good.tar.gz"
    create_archive(good, _members(root), environ={})
    bad = tmp_path / "bad.tar.gz"
    target = "results/analysis/groups.json"
    _rewrite(good, bad, lambda n, d: b'{"groups": ["forged"]}\n' if n == target else d)
    res = verify_archive(bad)
    assert not res.ok
    assert [c[0] for c in res.changed] == [target]
    assert res.missing == res.extra == res.problems == ()
    assert _cli(["verify", str(bad)]) == 1
    out = capsys.readouterr().out
    assert f"changed: {target}" in out and "FAILED" in out
    assert _cli(["verify", str(good)]) == 0
    assert "OK: 5 members match MANIFEST" in capsys.readouterr().out


def test_missing_extra_and_duplicate_members(tmp_path: Path) -> None:
    root = _project(tmp_path / "p")
    good = tmp_path / "good.tar.gz"
    create_archive(good, _members(root), environ={})
    dropped = tmp_path / "dropped.tar.gz"
    _rewrite(good, dropped, lambda n, d: None if n == "dvc.lock" else d)
    assert verify_archive(dropped).missing == ("dvc.lock",)

    extra = tmp_path / "extra.tar.gz"
    with tarfile.open(good, "r:gz") as tin, tarfile.open(extra, "w:gz") as tout:
        for info in tin:
            tout.addfile(info, tin.extractfile(info))
        for name, data in (("results/sneaky.sh", b"rm\n"), ("dvc.lock", b"other\n")):
            added = tarfile.TarInfo(name)
            added.size = len(data)
            tout.addfile(added, io.BytesIO(data))
    res = verify_archive(extra)
    assert res.extra == ("results/sneaky.sh",)
    assert res.duplicates == ("dvc.lock",)


def test_unreadable_or_manifestless_archives_fail(tmp_path: Path, capsys) -> None:
    root = _project(tmp_path / "p")
    good = tmp_path / "good.tar.gz"
    create_archive(good, _members(root), environ={})
    truncated = tmp_path / "truncated.tar.gz"
    truncated.write_bytes(good.read_bytes()[:200])
    assert any("unreadable" in p for p in verify_archive(truncated).problems)
    assert _cli(["verify", str(truncated)]) == 1
    capsys.readouterr()
    bare = tmp_path / "bare.tar.gz"
    _rewrite(good, bare, lambda n, d: None if n == MANIFEST_NAME else d)
    res = verify_archive(bare)
    assert "the archive has no MANIFEST" in res.problems and not res.ok
    with pytest.raises(InputError, match="no such file"):
        _cli(["verify", str(tmp_path / "absent.tar.gz")])


def test_secret_values_are_never_archived(tmp_path: Path) -> None:
    root = _project(tmp_path / "p")
    (root / "results" / "report" / "log.txt").write_text(f"header: Bearer {FAKE_SECRET}\n")
    out = tmp_path / "eval.tar.gz"
    with pytest.raises(ArchiveError, match="EVALNOISE_TEST_API_KEY"):
        create_archive(out, _members(root), environ={"EVALNOISE_TEST_API_KEY": FAKE_SECRET})
    assert not out.exists()  # nothing half-written


def test_secret_split_across_read_chunks_is_found(tmp_path: Path) -> None:
    root = _project(tmp_path / "p")
    blob = b"x" * ((1 << 20) - 5) + FAKE_SECRET.encode() + b"y" * 10  # straddles 1 MiB
    (root / "results" / "big.bin").write_bytes(blob)
    with pytest.raises(ArchiveError, match=r"big\.bin"):
        create_archive(tmp_path / "o.tar.gz", _members(root), environ={"X_API_KEY": FAKE_SECRET})


def test_bad_inputs_are_refused(tmp_path: Path) -> None:
    root = _project(tmp_path / "p")
    with pytest.raises(ArchiveError, match="not a file"):
        collect_members(config=root / "nope.yaml", results=root / "results")
    with pytest.raises(ArchiveError, match="does not exist"):
        collect_members(config=root / "config/config.yaml", results=root / "nope")
    with pytest.raises(ArchiveError, match="unusable member name"):
        _members(root, extra={"../escape": b"x"})
    with pytest.raises(ArchiveError, match="may not be named"):
        _members(root, extra={"MANIFEST": b"x"})


def test_cli_archive_builds_a_manifest_when_the_run_left_none(
    tmp_path: Path, monkeypatch, capsys
) -> None:
    root = _project(tmp_path / "p")
    monkeypatch.chdir(root)
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
    assert _cli(["archive", "-o", "results/eval.tar.gz"]) == 0  # inside results: not packed
    out = capsys.readouterr().out
    assert out.startswith("wrote results/eval.tar.gz: 6 members + MANIFEST, sha256 ")
    names = _names(root / "results" / "eval.tar.gz")
    assert "manifest.json" in names and "results/eval.tar.gz" not in names
    assert not any(n.endswith(".tmp") for n in names)
    with tarfile.open(root / "results" / "eval.tar.gz", "r:gz") as tar:
        manifest = json.load(tar.extractfile("manifest.json"))
    assert manifest["run_seed"] == 3 and manifest["started_at"] is None
    assert manifest["config"] == {"trials_from": "t.csv", "run_seed": 3}
    assert manifest["git"] == {"commit": None, "dirty": None}
    # what the run's manifest would hash: the report comes after it
    assert [a["path"] for a in manifest["artifacts"]] == [
        "results/analysis/groups.json",
        "results/shard-0.parquet",
    ]
    # the same command again gives the same bytes
    first = (root / "results" / "eval.tar.gz").read_bytes()
    assert _cli(["archive", "-o", "results/eval.tar.gz"]) == 0
    assert (root / "results" / "eval.tar.gz").read_bytes() == first
    assert _cli(["verify", "results/eval.tar.gz"]) == 0


def _run_manifest(root: Path) -> None:
    """results/manifest.json as the pipeline's manifest rule writes it (scripts/manifest.py)."""
    from evalnoise.manifest import build_manifest, write_manifest
    from evalnoise.results_check import recorded_files

    manifest = build_manifest(
        config={"trials_from": "t.csv", "run_seed": 3},
        run_seed=3,
        seed_rule="r",
        artifacts=recorded_files(root / "results"),
        root=root,
        started_at=None,
        ended_at=None,
        machine={},
    )
    write_manifest(root / "results" / "manifest.json", manifest)


def test_cli_archive_uses_the_run_manifest(tmp_path: Path, monkeypatch, capsys) -> None:
    root = _project(tmp_path / "p")
    _run_manifest(root)
    (root / "results" / "logs").mkdir()
    (root / "results" / "logs" / "report.log").write_text("written after the manifest\n")
    (root / "results" / "health.json").write_text("{}\n")
    monkeypatch.chdir(root)
    assert _cli(["archive", "-o", str(tmp_path / "e.tar.gz")]) == 0
    names = _names(tmp_path / "e.tar.gz")
    assert "results/manifest.json" in names and "manifest.json" not in names
    assert "modifications.json" not in names
    assert _cli(["verify", str(tmp_path / "e.tar.gz")]) == 0
    assert "the archived results match the run's manifest (2 files)" in capsys.readouterr().out
    assert _cli(["verify", "--workspace", str(root)]) == 0


# -- results that differ from the run's manifest: refused, or archived as a modified run ----


def _tamper(root: Path, how: str) -> str:
    res = root / "results"
    if how == "changed":
        with open(res / "analysis" / "groups.json", "ab") as fh:
            fh.write(b" ")
        return "changed: results/analysis/groups.json (manifest sha256 "
    if how == "deleted":
        (res / "shard-0.parquet").unlink()
        return "deleted: results/shard-0.parquet (in the manifest, not on disk)"
    (res / "analysis" / "extra.csv").write_text("a\n1\n")
    return "added:   results/analysis/extra.csv (on disk, not in the manifest)"


@pytest.mark.parametrize("how", ["changed", "deleted", "added"])
def test_archive_refuses_results_that_differ_from_the_run_manifest(
    tmp_path: Path, monkeypatch, capsys, how: str
) -> None:
    root = _project(tmp_path / "p")
    _run_manifest(root)
    monkeypatch.chdir(root)
    assert _cli(["verify", "--workspace", "."]) == 0
    line = _tamper(root, how)
    out = tmp_path / "e.tar.gz"
    with pytest.raises(InputError) as err:
        _cli(["archive", "-o", str(out)])
    message = str(err.value)
    assert message.startswith(
        "results/manifest.json: 1 file(s) differ from the run's manifest; refusing to archive"
    )
    assert line in message
    assert not out.exists()
    capsys.readouterr()
    assert _cli(["verify", "--workspace", "."]) == 1
    assert line in capsys.readouterr().out

    # told to, it archives the modified run and records how it differs
    assert _cli(["archive", "--allow-modified", "-o", str(out)]) == 0
    assert f"modified run: {line}" in capsys.readouterr().out
    with tarfile.open(out, "r:gz") as tar:
        record = json.load(tar.extractfile("modifications.json"))
    assert record["reason"] == "archived with --allow-modified"
    assert sum(len(record[k]) for k in ("changed", "deleted", "added")) == 1
    assert _cli(["verify", str(out)]) == 0
    assert "declared in modifications.json" in capsys.readouterr().out

    # the same archive without its record, MANIFEST rewritten to match: consistent with
    # itself, but its results contradict the run's manifest it carries
    def drop_record(name: str, data: bytes) -> bytes | None:
        if name == "modifications.json":
            return None
        if name == MANIFEST_NAME:
            kept = [x for x in data.splitlines() if not x.endswith(b"modifications.json")]
            return b"".join(x + b"\n" for x in kept)
        return data

    bare = tmp_path / "bare.tar.gz"
    _rewrite(out, bare, drop_record)
    assert verify_archive(bare).ok
    assert _cli(["verify", str(bare)]) == 1
    printed = capsys.readouterr().out
    assert line in printed and "do not match the run's manifest.json" in printed


def test_verify_needs_an_archive_or_a_workspace(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="one of them"):
        _cli(["verify"])
    with pytest.raises(InputError, match="no run manifest"):
        _cli(["verify", "--workspace", str(tmp_path)])


def test_cli_archive_refuses_secret_configs_and_missing_inputs(tmp_path: Path, monkeypatch):
    root = _project(tmp_path / "p")
    monkeypatch.chdir(root)
    (root / "config" / "config.yaml").write_text(f"judge:\n  api_key: {FAKE_SECRET}\n")
    with pytest.raises(InputError, match="literal value"):
        _cli(["archive"])
    assert not (root / "evaluation.tar.gz").exists()
    with pytest.raises(InputError, match="no such file"):
        _cli(["archive", "--config", "missing.yaml"])
    (root / "config" / "config.yaml").write_text("a: 1\n")
    with pytest.raises(InputError, match="no such directory"):
        _cli(["archive", "--results", "nowhere"])


# -- in-flight writes: the writers' temporaries and the archive's exclusion are one rule ------


def _result_names(root: Path) -> list[str]:
    return [m.name for m in _members(root) if m.name.startswith("results/")]


KEPT = ["results/analysis/groups.json", "results/report/index.html", "results/shard-0.parquet"]


def test_a_shard_parquet_being_written_is_not_archived(tmp_path: Path, monkeypatch) -> None:
    """The shard's writer (runner.shard.write_parquet_atomic) names its temporary by the rule
    the archive excludes: an archive taken mid-write holds the finished files only."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from evalnoise.atomic import is_temporary
    from evalnoise.runner import shard

    root = _project(tmp_path / "p")
    target = root / "results" / "trials" / "a" / "1x" / "shard-0.parquet"
    seen: dict[str, object] = {}
    write_table = pq.write_table

    def write_then_archive(table, where, **kw):
        write_table(table, where, **kw)
        seen["tmp"] = Path(where)
        seen["names"] = _result_names(root)

    monkeypatch.setattr(shard.pq, "write_table", write_then_archive)
    shard.write_parquet_atomic(pa.table({"x": [1, 2]}), target)
    tmp = seen["tmp"]
    assert tmp.parent == target.parent and tmp != target
    assert is_temporary(tmp.relative_to(root / "results"))
    assert seen["names"] == KEPT  # the temporary (and its not-yet-there target) left out
    assert _result_names(root) == sorted([*KEPT, "results/trials/a/1x/shard-0.parquet"])


def test_a_directory_being_written_and_leftovers_are_not_archived(tmp_path: Path) -> None:
    """Files inside an atomic_directory in flight, a replaced directory on its way out, and a
    temporary an older shard writer left (``.<name>.tmp-<pid>``) are all left out."""
    from evalnoise.atomic import atomic_directory, atomic_open, remove_temporaries

    root = _project(tmp_path / "p")
    results = root / "results"
    (results / ".shard-1.parquet.tmp-4242").write_bytes(b"torn")  # before atomic.py
    with atomic_directory(results / "report") as tmp:
        (tmp / "index.html").write_text("<html>new</html>\n")
        (tmp / "charts").mkdir()
        (tmp / "charts" / "a.svg").write_text("<svg/>")
        with atomic_open(results / "analysis" / "groups.json") as fh:
            fh.write('{"groups": [1]}\n')
            assert _result_names(root) == KEPT  # the old report, the old groups.json
    assert _result_names(root) == sorted([*KEPT, "results/report/charts/a.svg"])
    assert (results / "report" / "index.html").read_text() == "<html>new</html>\n"
    removed = remove_temporaries(results)
    assert [p.name for p in removed] == [".groups.json.abc.tmp", ".shard-1.parquet.tmp-4242"]
