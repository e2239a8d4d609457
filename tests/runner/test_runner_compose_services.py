"""A task's extra services (environment/docker-compose.yaml) around its trial, with the real
``docker compose`` v2 and the real engine: a key-value service built from the base image that
the agent must query, a service that fails to start, and a ``docker-compose.yml`` that is only
a file of the build context (as in Harbor)."""

from __future__ import annotations

import textwrap

import pytest
from env_helpers import MadeImages, make_env_task
from runner_helpers import shard_containers

pytestmark = pytest.mark.docker

MADE = MadeImages()


@pytest.fixture(scope="module", autouse=True)
def _remove_made_images():
    """The task images this module's trials built are removed when it is done."""
    yield
    if MADE.tags:
        import docker

        MADE.remove(docker.from_env())


KV_SERVER = """\
import http.server, os

class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        value = {"/health": "ok", "/secret": os.environ["SECRET"]}.get(self.path)
        self.send_response(200 if value else 404)
        self.end_headers()
        self.wfile.write((value or "").encode())

http.server.HTTPServer(("", 8080), Handler).serve_forever()
"""

DOCKERFILE = "ARG BASE\nFROM ${BASE}\nWORKDIR /app\nCOPY kv.py /opt/kv.py\n"

PROBE = "import urllib.request as u; u.urlopen('http://127.0.0.1:8080/health')"
COMPOSE = """\
services:
  main:
    environment:
      - FROM_COMPOSE=yes
    cap_add: [NET_ADMIN]
    depends_on:
      kv:
        condition: service_healthy
  kv:
    image: ${MAIN_IMAGE_NAME}
    command: ["python3", "/opt/kv.py"]
    environment:
      SECRET: swordfish
    healthcheck:
      test: ["CMD", "python3", "-c", "{PROBE}"]
      interval: 1s
      retries: 30
""".replace("{PROBE}", PROBE)

ASK_KV = """\
echo "$FROM_COMPOSE" > /app/main-env.txt
python3 -c "import urllib.request as u
print(u.urlopen('http://kv:8080/secret').read().decode(), end='')" \\
    > /app/answer.txt
"""

CHECK_ANSWER = """\
if [ "$(cat /app/answer.txt)" = swordfish ] && [ "$(cat /app/main-env.txt)" = yes ]; then
    echo 1
else
    echo 0
fi > /logs/verifier/reward.txt
"""


def _compose():
    from evalnoise.runner.compose_services import compose_command

    command = compose_command()
    assert command is not None, "no docker compose v2 (tools/install-harbor.sh installs one)"
    return command


def _networks(engine, shard_id):
    from evalnoise.runner.docker_backend import SHARD_LABEL

    return engine.api.networks(filters={"label": f"{SHARD_LABEL}={shard_id}"})


def _task(root, name, compose, *, solve=ASK_KV, test=CHECK_ANSWER):
    folder = make_env_task(
        root, name, test_sh=test, solve_sh=solve, dockerfile=DOCKERFILE, memory_mb=256
    )
    (folder / "environment" / "kv.py").write_text(KV_SERVER)
    (folder / "environment" / "docker-compose.yaml").write_text(textwrap.dedent(compose))
    return folder


def test_agent_queries_the_tasks_own_service(env_backend, docker_engine, tmp_path):
    _compose()
    folder = _task(tmp_path, "svc-kv", COMPOSE)
    row = MADE.trial(env_backend, folder, "oracle", shard_id="svc-ok")
    assert (row["status"], row["reward"]) == ("ok", 1.0), (row["error"], row["stdout_tail"])
    # main's environment in the file is applied; a key the runner's container does not take
    # is named, never silently dropped
    assert row["error"] == "keys of main in the task's compose file not applied: cap_add"
    # a no-network task with services: an internal network of its own, no route out
    assert row["network"] == "trial-internal"
    assert shard_containers(docker_engine, "svc-ok") == []
    assert (
        docker_engine.api.containers(all=True, filters={"label": "com.docker.compose.service=kv"})
        == []
    )
    assert _networks(docker_engine, "svc-ok") == []
    # the null agent does not ask: the service alone scores nothing
    null = MADE.trial(env_backend, folder, "null", shard_id="svc-null")
    assert (null["status"], null["reward"]) == ("ok", 0.0)


def test_a_service_that_dies_is_an_infra_error_naming_it(env_backend, docker_engine, tmp_path):
    _compose()
    broken = COMPOSE.replace(
        'command: ["python3", "/opt/kv.py"]', 'command: ["python3", "-c", "raise SystemExit(3)"]'
    )
    folder = _task(tmp_path, "svc-dies", broken)
    row = MADE.trial(env_backend, folder, "oracle", shard_id="svc-dies")
    assert (row["status"], row["phase"]) == ("infra_error", "setup")
    assert "the task's service(s) failed to start or become healthy: kv (exited" in row["error"]
    assert "\n" not in row["error"]
    assert shard_containers(docker_engine, "svc-dies") == []
    assert _networks(docker_engine, "svc-dies") == []


def test_a_service_that_would_leave_the_trials_network_is_refused(env_backend, tmp_path):
    _compose()
    leaky = COMPOSE + "    network_mode: host\n"
    folder = _task(tmp_path, "svc-leaky", leaky)
    row = MADE.trial(env_backend, folder, "oracle", shard_id="svc-host")
    assert (row["status"], row["phase"]) == ("infra_error", "setup")
    assert "service 'kv': network_mode 'host'" in row["error"]


def test_compose_yml_is_a_file_of_the_build_context(env_backend, tmp_path):
    """The shape of the 5 formerly refused real tasks: docker-compose.yml beside the
    Dockerfile, copied into the image; no services run."""
    folder = make_env_task(
        tmp_path,
        "svc-yml",
        test_sh="""\
        if grep -q 'image: postgres' /app/docker-compose.yml; then echo 1; else echo 0; fi \\
            > /logs/verifier/reward.txt
        """,
        solve_sh="true\n",
        dockerfile="ARG BASE\nFROM ${BASE}\nWORKDIR /app\nCOPY docker-compose.yml /app/\n",
    )
    (folder / "environment" / "docker-compose.yml").write_text(
        "services:\n  db:\n    image: postgres:16\n"
    )
    row = MADE.trial(env_backend, folder, "oracle", shard_id="svc-yml")
    assert (row["status"], row["reward"], row["network"]) == ("ok", 1.0, "none")
