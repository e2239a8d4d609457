"""Task images against the real Docker engine: built once per build context, a cache hit
when the tag exists, rebuilt when the context changes, the build timeout, a failed build's
log tail, and prebuilt images used as they are."""

from __future__ import annotations

import time

import pytest
from env_helpers import make_env_task

from evalnoise.runner.task_images import (
    TaskImageCache,
    ensure_task_image,
    repository_name,
    task_image_tag,
)
from evalnoise.tasks.harbor_folders import load_harbor_task

pytestmark = pytest.mark.docker


def task_with(tmp_path, name, dockerfile, **options):
    folder = make_env_task(tmp_path, name, test_sh="true\n", dockerfile=dockerfile, **options)
    return load_harbor_task(folder, public_network="offline")


def test_repository_names():
    assert repository_name("acme/Hello World") == "evalnoise-task-acme-hello-world"
    assert repository_name("..") == "evalnoise-task-task"


def test_build_then_cache_hit_then_rebuild_on_change(docker_engine, base_image, tmp_path):
    marker = f"cache-{time.time_ns()}"  # a context no earlier run has built
    dockerfile = f"ARG BASE\nFROM ${{BASE}}\nRUN echo {marker} > /marker\n"
    task = task_with(tmp_path, "cached", dockerfile)
    first = ensure_task_image(task, base=base_image, client=docker_engine)
    assert first.ok and first.built and first.source == "dockerfile"
    base_id = docker_engine.images.get(base_image).id
    assert first.tag == task_image_tag(task, base_id, {"BASE": base_image})
    assert first.tag.startswith("evalnoise-task-test-cached:")
    labels = docker_engine.images.get(first.tag).labels
    assert labels["evalnoise.task"] == "test/cached" and labels["evalnoise.base"] == base_image

    again = ensure_task_image(task, base=base_image, client=docker_engine)
    assert (again.ok, again.built, again.tag, again.image_id) == (
        True,
        False,
        first.tag,
        first.image_id,
    )

    (task.build_context / "extra.txt").write_text("a new file in the context")
    changed = load_harbor_task(task.folder, public_network="offline")
    rebuilt = ensure_task_image(changed, base=base_image, client=docker_engine)
    assert rebuilt.ok and rebuilt.built and rebuilt.tag != first.tag

    other_args = ensure_task_image(
        changed, base=base_image, client=docker_engine, build_args={"BASE": base_image, "X": "1"}
    )
    assert other_args.ok and other_args.tag not in (first.tag, rebuilt.tag)
    for image in (first, rebuilt, other_args):  # unique contexts: do not pile them up
        docker_engine.images.remove(image.tag, force=True)


def test_failed_build_keeps_the_log_tail(docker_engine, base_image, tmp_path):
    dockerfile = "ARG BASE\nFROM ${BASE}\nRUN echo boom-marker-7 && exit 3\n"
    image = ensure_task_image(task_with(tmp_path, "broken", dockerfile), base=base_image)
    assert not image.ok and image.image_id is None
    assert "failed" in image.error
    assert "boom-marker-7" in image.log_tail
    assert "boom-marker-7" in image.failure_text()


def test_build_timeout(docker_engine, base_image, tmp_path):
    dockerfile = f"ARG BASE\nFROM ${{BASE}}\nRUN echo {time.time_ns()} && sleep 120\n"
    task = task_with(tmp_path, "slowbuild", dockerfile)
    t0 = time.monotonic()
    image = ensure_task_image(task, base=base_image, client=docker_engine, timeout_s=3)
    assert time.monotonic() - t0 < 15
    assert not image.ok and "exceeded build_timeout_sec (3 s)" in image.error
    # the engine cancelled the build: its RUN container goes away
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        running = [
            c for c in docker_engine.api.containers() if "sleep 120" in str(c.get("Command", ""))
        ]
        if not running:
            break
        time.sleep(0.5)
    assert not running


def test_prebuilt_docker_image_used_as_is(docker_engine, base_image, tmp_path):
    folder = make_env_task(
        tmp_path,
        "prebuilt",
        test_sh="true\n",
        environment_toml=f'docker_image = "{base_image}"\n',
    )
    task = load_harbor_task(folder, public_network="offline")
    image = ensure_task_image(task, client=docker_engine)
    assert (image.ok, image.tag, image.source, image.built) == (
        True,
        base_image,
        "docker_image",
        False,
    )


def test_missing_base_image(docker_engine, tmp_path):
    task = task_with(tmp_path, "nobase", "ARG BASE\nFROM ${BASE}\n")
    image = ensure_task_image(task, base="evalnoise-base:does-not-exist", client=docker_engine)
    assert not image.ok and "base image" in image.error


def test_cache_builds_once_per_task(docker_engine, base_image, tmp_path):
    task = task_with(tmp_path, "once", "ARG BASE\nFROM ${BASE}\nRUN echo once\n")
    cache = TaskImageCache(client=docker_engine, base=base_image)
    first = cache.get(task)
    assert cache.get(task) is first
