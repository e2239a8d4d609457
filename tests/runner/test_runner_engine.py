"""What both Docker backends share of the engine (evalnoise.runner.engine): removing a trial's
container when the trial ends, and the notes a trial row's ``error`` collects."""

from __future__ import annotations

import pytest

from evalnoise.runner.engine import join_notes, one_line, remove_trial_container


def test_join_notes_keeps_the_notes_given():
    assert join_notes(None, None) is None
    assert join_notes("", None) is None
    assert join_notes("a", None, "b") == "a; b"
    assert join_notes(None, "container not removed: x") == "container not removed: x"


@pytest.mark.docker
def test_a_trial_container_is_removed_with_its_volumes(docker_engine, base_image):
    api = docker_engine.api
    created = api.create_container(base_image, command=["true"], volumes=["/scratch"])
    container_id = created["Id"]
    volumes = [
        m["Name"]
        for m in api.inspect_container(container_id)["Mounts"]
        if m.get("Type") == "volume"
    ]
    assert volumes  # the anonymous volume /scratch
    assert remove_trial_container(api, container_id) is None
    assert not api.containers(all=True, filters={"id": container_id})
    assert not [v for v in api.volumes()["Volumes"] or [] if v["Name"] in volumes]
    # already gone (a cleanup got there first): not a problem, no note
    assert remove_trial_container(api, container_id) is None


def test_a_container_the_engine_cannot_remove_is_a_note_not_an_exception(tmp_path):
    import docker

    # a real client of an engine that does not answer (no socket at that path; the API
    # version given, so the client does not ask for it): the removal fails as it does when
    # the engine goes away at the end of a trial
    socket = tmp_path / "no-engine.sock"
    gone = docker.APIClient(base_url=f"unix://{socket}", version="1.41", timeout=5)
    note = remove_trial_container(gone, "0123456789ab")
    assert note is not None and note.startswith("container not removed: ")
    assert note == one_line(note) and len(note) <= len("container not removed: ") + 200
