"""Harbor's separate verifier: which image, which files; what cannot be honoured is named."""

from __future__ import annotations

import pytest
from test_tasks_harbor import make_task, problems_of, toml_with

from evalnoise.tasks.harbor_folders import load_harbor_task
from evalnoise.tasks.verifier_setup import SHARED, VerifierSetup


def test_shared_is_the_default(tmp_path):
    task = load_harbor_task(make_task(tmp_path, toml=toml_with(verifier="timeout_sec = 5.0")))
    assert task.verifier == SHARED and not task.verifier.separate


def test_separate_on_the_task_image_with_declared_artifacts(tmp_path):
    toml = 'artifacts = ["/app/out.txt", {source = "/data/", destination = "d"}]\n' + toml_with(
        verifier='environment_mode = "separate"'
    )
    task = load_harbor_task(make_task(tmp_path, toml=toml))
    assert task.verifier == VerifierSetup(mode="separate", artifacts=("/app/out.txt", "/data"))


def test_separate_image_from_tests_dockerfile_or_verifier_environment(tmp_path):
    folder = make_task(tmp_path, "a", toml_with(verifier='environment_mode = "separate"'))
    (folder / "tests" / "Dockerfile").write_text("ARG BASE\nFROM ${BASE}\n")
    assert load_harbor_task(folder).verifier.dockerfile
    # a [verifier.environment] table implies separate; its image wins over tests/Dockerfile
    folder = make_task(
        tmp_path,
        "b",
        toml_with(verifier="timeout_sec = 5.0", verifier_environment='docker_image = "v:1"'),
    )
    (folder / "tests" / "Dockerfile").write_text("FROM scratch\n")
    setup = load_harbor_task(folder).verifier
    assert setup.separate and setup.docker_image == "v:1" and not setup.dockerfile


@pytest.mark.parametrize(
    ("artifacts", "problem"),
    [
        ('["out.txt"]', "artifacts[0]: source 'out.txt' must be an absolute container path"),
        ('[{source = "/x", service = "db"}]', "artifacts[0]: collected from service 'db'"),
        ('["/a/../etc"]', "artifacts[0]: source '/a/../etc' must not contain '..'"),
        ('"/x"', "artifacts: must be a list"),
    ],
)
def test_artifacts_that_cannot_be_copied_are_named(tmp_path, artifacts, problem):
    toml = f"artifacts = {artifacts}\n" + toml_with(verifier='environment_mode = "separate"')
    (found,) = problems_of(make_task(tmp_path, toml=toml))
    assert found.startswith(problem)
