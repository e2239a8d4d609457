"""The run manifest: hashes, provenance fields, and that no secret ever gets in."""

from __future__ import annotations

import hashlib
import json
import subprocess
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest

from evalnoise.manifest import (
    PACKAGES,
    TRIAL_ORDER_RULE,
    SecretInConfigError,
    build_manifest,
    canonical_json,
    check_config_secrets,
    config_hash,
    git_state,
    scrub_secrets,
    write_manifest,
)

FAKE_SECRET = "sk-test-5f3a9c1e7b2d4f6a8c0e"
START = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
END = START + timedelta(hours=2)


def _tree(root: Path) -> None:
    (root / "results" / "analysis").mkdir(parents=True)
    (root / "results" / "analysis" / "groups.json").write_text('{"a": 1}\n')
    (root / "results" / "b.csv").write_text("x\n1\n")
    (root / "model.gguf").write_bytes(b"\x00GGUF" * 1000)


def _build(root: Path, **overrides):
    kwargs = dict(
        config={"trials_from": "x.csv", "analysis": {"confidence": 0.95}},
        run_seed=42,
        seed_rule="sha256 of (run_seed, agent, task_id, trial)",
        artifacts=[root / "results"],
        root=root,
        started_at=START,
        ended_at=END,
        environ={},
    )
    kwargs.update(overrides)
    return build_manifest(**kwargs)


def test_trial_order_seed_and_rule(tmp_path: Path) -> None:
    from evalnoise.runner.seeds import order_seed

    _tree(tmp_path)
    m = _build(tmp_path, config={"run_seed": 42})
    assert m["trial_order"] == {"seed": order_seed(42), "rule": TRIAL_ORDER_RULE}
    assert m["trial_order"]["rule"].startswith("blocked by trial block, seeded shuffle")
    # imported trials ran in whatever order their source chose; no run seed, no order
    assert _build(tmp_path)["trial_order"] is None
    assert _build(tmp_path, config={}, run_seed=None)["trial_order"] is None


def test_config_hash_is_canonical() -> None:
    a = {"b": [1, 2], "a": {"y": "é", "x": 0.5}}
    b = {"a": {"x": 0.5, "y": "é"}, "b": [1, 2]}
    assert config_hash(a) == config_hash(b)
    assert canonical_json(a) == '{"a":{"x":0.5,"y":"é"},"b":[1,2]}'
    assert config_hash(a) == hashlib.sha256(canonical_json(a).encode()).hexdigest()
    assert config_hash({**a, "c": None}) != config_hash(a)
    with pytest.raises(ValueError):
        canonical_json({"x": float("nan")})


def test_manifest_fields(tmp_path: Path) -> None:
    _tree(tmp_path)
    m = _build(
        tmp_path,
        images={"agent": "sha256:" + "1" * 64},
        model_files={"qwen": tmp_path / "model.gguf"},
        judge_template_hash="abc123",
        backend="docker",
    )
    assert m["schema"] == "evalnoise.manifest/1"
    assert m["config"] == {"trials_from": "x.csv", "analysis": {"confidence": 0.95}}
    assert m["config_sha256"] == config_hash(m["config"])
    assert m["run_seed"] == 42 and m["seed_rule"].startswith("sha256")
    assert m["started_at"] == "2026-01-02T03:04:05Z" and m["ended_at"] == "2026-01-02T05:04:05Z"
    assert m["images"] == {"agent": "sha256:" + "1" * 64}
    model = (tmp_path / "model.gguf").read_bytes()
    assert m["model_files"] == {
        "qwen": {
            "file": "model.gguf",
            "sha256": hashlib.sha256(model).hexdigest(),
            "size": len(model),
        }
    }
    assert m["judge_template_sha256"] == "abc123" and m["backend"] == "docker"
    assert list(m["packages"]) == list(PACKAGES)
    assert m["packages"]["numpy"] and m["packages"]["pandas"]
    assert m["host"]["hostname"]
    assert [a["path"] for a in m["artifacts"]] == [
        "results/analysis/groups.json",
        "results/b.csv",
    ]
    groups = (tmp_path / "results/analysis/groups.json").read_bytes()
    assert m["artifacts"][0] == {
        "path": "results/analysis/groups.json",
        "sha256": hashlib.sha256(groups).hexdigest(),
        "size": len(groups),
    }
    json.dumps(m, allow_nan=False)


def test_timestamps_are_utc(tmp_path: Path) -> None:
    _tree(tmp_path)
    plus2 = timezone(timedelta(hours=2))
    m = _build(tmp_path, started_at=START.astimezone(plus2), ended_at="2026-01-02T07:04:05+02:00")
    assert m["started_at"] == "2026-01-02T03:04:05Z" and m["ended_at"] == "2026-01-02T05:04:05Z"
    with pytest.raises(ValueError, match="timezone-aware"):
        _build(tmp_path, started_at=datetime(2026, 1, 1))
    assert _build(tmp_path, started_at=None, ended_at=None)["started_at"] is None


def test_artifacts_must_exist_and_lie_inside_root(tmp_path: Path) -> None:
    _tree(tmp_path)
    with pytest.raises(FileNotFoundError):
        _build(tmp_path, artifacts=[tmp_path / "nope"])
    outside = tmp_path.parent / f"{tmp_path.name}-outside.txt"
    outside.write_text("x")
    try:
        with pytest.raises(ValueError, match="outside the root"):
            _build(tmp_path, artifacts=[outside])
    finally:
        outside.unlink()


def test_same_inputs_same_manifest_file(tmp_path: Path) -> None:
    _tree(tmp_path)
    write_manifest(tmp_path / "m1.json", _build(tmp_path))
    write_manifest(tmp_path / "m2.json", _build(tmp_path))
    one = (tmp_path / "m1.json").read_bytes()
    assert one == (tmp_path / "m2.json").read_bytes() and one.endswith(b"\n")
    assert list(json.loads(one)) == sorted(json.loads(one))


@pytest.mark.parametrize(
    "config",
    [
        {"api_key": FAKE_SECRET},
        {"models": {"judge": {"openai_api_key": FAKE_SECRET}}},
        {"agents": [{"name": "a", "hf_token": "hf_abcdefghijkl"}]},
        {"db": {"password": "hunter22"}},
    ],
)
def test_literal_secrets_in_config_are_refused(config, tmp_path: Path) -> None:
    with pytest.raises(SecretInConfigError, match="literal value"):
        check_config_secrets(config)
    _tree(tmp_path)
    with pytest.raises(SecretInConfigError):
        _build(tmp_path, config=config)


def test_env_var_names_and_non_strings_are_allowed() -> None:
    check_config_secrets(
        {
            "api_key": "OPENAI_API_KEY",
            "judge": {"api_key_env": "JUDGE_KEY", "api_key": None, "password": ""},
            "max_token": 512,
            "tokens": "plenty",
        }
    )


def test_secret_env_values_are_scrubbed_everywhere(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("EVALNOISE_TEST_API_KEY", FAKE_SECRET)
    monkeypatch.setenv("MY_SERVICE_CRED", "s3cr3t-value-xyz")
    _tree(tmp_path)
    (tmp_path / "results" / FAKE_SECRET).write_text("a file named after the secret")
    m = build_manifest(
        config={
            "notes": f"endpoint https://x/?k={FAKE_SECRET}",
            "api_key": "EVALNOISE_TEST_API_KEY",
        },
        run_seed=1,
        seed_rule="rule",
        artifacts=[tmp_path / "results"],
        root=tmp_path,
        started_at=START,
        ended_at=END,
        images={FAKE_SECRET: "digest-s3cr3t-value-xyz"},
        backend=f"docker {FAKE_SECRET}",
        secret_env=["MY_SERVICE_CRED"],  # name does not look like a secret: declared
    )
    text = json.dumps(m)
    assert FAKE_SECRET not in text and "s3cr3t-value-xyz" not in text
    assert "[redacted:EVALNOISE_TEST_API_KEY]" in m["config"]["notes"]
    assert m["images"] == {"[redacted:EVALNOISE_TEST_API_KEY]": "digest-[redacted:MY_SERVICE_CRED]"}
    assert "results/[redacted:EVALNOISE_TEST_API_KEY]" in [a["path"] for a in m["artifacts"]]
    # the name of the variable is not a secret and stays
    assert m["config"]["api_key"] == "EVALNOISE_TEST_API_KEY"


def test_scrub_replaces_longer_secrets_first() -> None:
    env = {"A_TOKEN": "abcdef", "B_TOKEN": "abcdefghij"}
    assert scrub_secrets(["xabcdefghijx", "abcdef"], environ=env) == [
        "x[redacted:B_TOKEN]x",
        "[redacted:A_TOKEN]",
    ]
    # too short to be a credential: left alone rather than redacting ordinary text
    assert scrub_secrets("yes", environ={"X_TOKEN": "yes"}) == "yes"


def _git(root: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", "-C", str(root), *args],
        check=True,
        capture_output=True,
    )


def test_git_commit_and_dirty_flag(tmp_path: Path) -> None:
    if subprocess.run(["git", "--version"], capture_output=True).returncode != 0:
        pytest.skip("git is not installed")
    _git(tmp_path, "init", "-q")
    (tmp_path / "a.txt").write_text("1")
    _git(tmp_path, "add", "a.txt")
    _git(tmp_path, "commit", "-q", "-m", "one")
    head = subprocess.run(
        ["git", "-C", str(tmp_path), "rev-parse", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    assert git_state(tmp_path) == {"commit": head, "dirty": False}
    (tmp_path / "a.txt").write_text("2")
    assert git_state(tmp_path) == {"commit": head, "dirty": True}


def test_no_git_gives_nulls(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path.parent))
    assert git_state(tmp_path) == {"commit": None, "dirty": None}  # not a repository
    monkeypatch.setenv("PATH", str(tmp_path))  # no git binary at all
    assert git_state(tmp_path) == {"commit": None, "dirty": None}
