"""Images built offline: the base image's input hash, its cache, agent images."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from container_output import run_output
from model_stack import require

from evalnoise.runner import base_image as base_image_module
from evalnoise.runner.base_image import BASE_IMAGE_REPOSITORY, load_base_inputs

REPO_INPUTS = Path(__file__).resolve().parents[2] / "images" / "base"


def write_inputs(path: Path, packages, suite="bookworm", mirror="http://deb.debian.org/debian"):
    path.mkdir(parents=True, exist_ok=True)
    quoted = ", ".join(f'"{p}"' for p in packages)
    (path / "base.toml").write_text(
        f'suite = "{suite}"\nvariant = "minbase"\nmirror = "{mirror}"\npackages = [{quoted}]\n'
    )
    return path


def test_the_repository_inputs_include_what_agents_need():
    inputs = load_base_inputs(REPO_INPUTS)
    # tmux: Harbor's Terminus-2 drives the task's shell through it (issue 37)
    assert {"python3", "libgomp1", "ca-certificates", "tmux"} <= set(inputs.packages)
    assert (inputs.suite, inputs.variant) == ("bookworm", "minbase")
    assert base_image_module.base_image_tag(REPO_INPUTS) == inputs.tag
    assert (
        inputs.tag.startswith(BASE_IMAGE_REPOSITORY + ":") and len(inputs.tag.split(":")[1]) == 12
    )


def test_tag_changes_exactly_when_an_input_changes(tmp_path):
    tag = lambda p: load_base_inputs(p).tag  # noqa: E731
    a = tag(write_inputs(tmp_path / "a", ["python3", "libgomp1"]))
    assert tag(write_inputs(tmp_path / "b", ["libgomp1", "python3", "python3"])) == a  # order
    assert (
        tag(
            write_inputs(
                tmp_path / "c", ["python3", "libgomp1"], mirror="http://ftp.de.debian.org/debian"
            )
        )
        == a
    )  # mirror
    assert tag(write_inputs(tmp_path / "d", ["python3"])) != a
    assert tag(write_inputs(tmp_path / "e", ["python3", "libgomp1"], suite="trixie")) != a


def test_script_version_is_an_input(tmp_path, monkeypatch):
    path = write_inputs(tmp_path, ["python3"])
    before = load_base_inputs(path).tag
    monkeypatch.setattr(
        base_image_module, "BUILD_SCRIPT_VERSION", base_image_module.BUILD_SCRIPT_VERSION + 1
    )
    assert load_base_inputs(path).tag != before


def test_bad_inputs(tmp_path):
    (tmp_path / "base.toml").write_text('suite = "bookworm"\npackges = ["x"]\n')
    with pytest.raises(ValueError, match="packges"):
        load_base_inputs(tmp_path)
    with pytest.raises(FileNotFoundError):
        load_base_inputs(tmp_path / "nowhere")


def test_cache_dir_defaults(monkeypatch, tmp_path):
    monkeypatch.setenv("EVALNOISE_CACHE_DIR", str(tmp_path / "c"))
    assert base_image_module.default_cache_dir() == tmp_path / "c"
    monkeypatch.delenv("EVALNOISE_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "x"))
    assert base_image_module.default_cache_dir() == tmp_path / "x" / "evalnoise"


@pytest.mark.docker
def test_building_an_existing_base_image_is_a_fast_no_op(docker_engine, base_image):
    t0 = time.monotonic()
    assert base_image_module.build_base_image(client=docker_engine) == base_image
    assert time.monotonic() - t0 < 5
    image = docker_engine.images.get(base_image)
    assert image.labels["evalnoise.base.inputs"] == base_image.split(":")[1]


@pytest.mark.docker
def test_a_cached_root_filesystem_is_imported_without_debootstrap(
    docker_engine, base_image, tmp_path, monkeypatch
):
    """A new tag whose tarball is cached is imported, never debootstrapped."""
    digest = base_image.split(":")[1]
    cached = base_image_module.default_cache_dir() / "base" / f"{digest}.tar"
    require(cached.exists(), "the base image was not built on this machine (no cached tarball)")
    inputs = write_inputs(
        tmp_path / "inputs", ["python3", "libgomp1", "ca-certificates", "evalnoise-test-marker"]
    )
    new = load_base_inputs(inputs)
    cache = tmp_path / "cache"
    (cache / "base").mkdir(parents=True)
    os.symlink(cached, cache / "base" / f"{new.input_hash()}.tar")
    monkeypatch.setenv("PATH", str(tmp_path / "empty-path"))  # no debootstrap to fall back on
    try:
        tag = base_image_module.build_base_image(
            client=docker_engine, inputs_dir=inputs, cache_dir=cache
        )
        assert tag == new.tag
        assert run_output(docker_engine, tag, ["python3", "-c", "print(6 * 7)"]).strip() == "42"
    finally:
        try:
            docker_engine.images.remove(new.tag, force=True)
        except Exception:
            pass


@pytest.mark.docker
def test_agent_image_builds_need_a_local_base_and_a_dockerfile(docker_engine, tmp_path):
    (tmp_path / "Dockerfile").write_text("ARG BASE\nFROM ${BASE}\n")
    with pytest.raises(LookupError, match="not in the engine"):
        base_image_module.build_agent_image(
            tmp_path, "evalnoise-test-agent:x", "evalnoise-base:nope", client=docker_engine
        )
    with pytest.raises(FileNotFoundError):
        base_image_module.build_agent_image(
            tmp_path / "empty",
            "evalnoise-test-agent:x",
            "evalnoise-base:nope",
            client=docker_engine,
        )


@pytest.mark.docker
def test_agent_image_is_built_from_the_base(docker_engine, base_image, probe_image):
    image = docker_engine.images.get(probe_image)
    assert image.labels["evalnoise.base"] == base_image
    base = docker_engine.images.get(base_image)
    assert image.attrs["RootFS"]["Layers"][0] == base.attrs["RootFS"]["Layers"][0]


@pytest.mark.docker
def test_the_base_image_runs_tmux_offline(docker_engine, base_image):
    """Terminus-2's terminal: a detached tmux session in a container without a network."""
    out = docker_engine.containers.run(
        base_image,
        ["bash", "-c", "tmux new-session -d -s t 'sleep 5' && tmux has-session -t t && tmux -V"],
        network_mode="none",
        remove=True,
    )
    assert out.decode().startswith("tmux 3.")
