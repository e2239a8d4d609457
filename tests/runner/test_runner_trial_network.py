"""Environment trials on the network their task declares, against the real Docker engine.

Nothing leaves the machine: "the internet" is a local service container (the base image's
``python3 -m http.server``, serving a file and a PEP 503 package index) on an ``--internal``
network the test creates and removes; the trials join it as ``benchmark.network_name`` says.
The base image has no pip or curl, so the task's image adds a ``curl`` of a few lines of
Python (what the verifier calls, as Terminal-Bench verifiers call theirs), and the oracle
installs the package from the index as pip would lay it out: the wheel fetched through the
index page and unpacked into site-packages.
"""

from __future__ import annotations

import io
import logging
import tarfile
import time
import uuid
import zipfile

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


SERVICE = "index.internet"

CURL = """\
#!/usr/bin/python3
# a curl of this image: curl -fsS -o FILE URL (enough for the task's verifier)
import sys, urllib.request
args = sys.argv[1:]
out = args[args.index("-o") + 1] if "-o" in args else None
url = args[-1]
data = urllib.request.urlopen(url, timeout=10).read()
if out:
    open(out, "wb").write(data)
else:
    sys.stdout.buffer.write(data)
"""

DOCKERFILE = (
    "ARG BASE\nFROM ${BASE}\nWORKDIR /app\n"
    "COPY curl /usr/local/bin/curl\nRUN chmod 0755 /usr/local/bin/curl\n"
)

SOLVE = f"""\
python3 - <<'EOF'
import io, re, sys, sysconfig, urllib.parse, urllib.request, zipfile
index = "http://{SERVICE}:8000/simple/greeting/"
page = urllib.request.urlopen(index, timeout=10).read().decode()
href = re.search(r'href="([^"#]+[.]whl)', page).group(1)
wheel = urllib.request.urlopen(urllib.parse.urljoin(index, href), timeout=10).read()
zipfile.ZipFile(io.BytesIO(wheel)).extractall(sysconfig.get_paths()["purelib"])
print("installed", href)
EOF
"""

TEST = f"""\
set -e
curl -fsS -o /tmp/data.txt http://{SERVICE}:8000/data.txt
python3 - <<'EOF'
import greeting
ok = open("/tmp/data.txt").read().strip() == "the data" and greeting.hello() == "hi"
open("/logs/verifier/reward.txt", "w").write("1" if ok else "0")
EOF
"""


def _wheel() -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as wheel:
        wheel.writestr("greeting/__init__.py", "def hello():\n    return 'hi'\n")
        info = "greeting-1.0.dist-info/"
        wheel.writestr(info + "METADATA", "Metadata-Version: 2.1\nName: greeting\nVersion: 1.0\n")
        wheel.writestr(
            info + "WHEEL", "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\n"
        )
        wheel.writestr(info + "RECORD", "")
    return buffer.getvalue()


def _site_tar() -> bytes:
    files = {
        "srv/data.txt": b"the data\n",
        "srv/simple/index.html": b'<a href="greeting/">greeting</a>\n',
        "srv/simple/greeting/index.html": (
            b'<a href="../../packages/greeting-1.0-py3-none-any.whl">greeting-1.0</a>\n'
        ),
        "srv/packages/greeting-1.0-py3-none-any.whl": _wheel(),
    }
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mode = 0o644
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


@pytest.fixture
def internet(docker_engine, base_image):
    """An --internal network with the index service on it; yields the network's name."""
    api = docker_engine.api
    name = f"evalnoise-test-internet-{uuid.uuid4().hex[:8]}"
    network = api.create_network(name, driver="bridge", internal=True)["Id"]
    container = None
    try:
        container = api.create_container(
            base_image,
            command=["python3", "-m", "http.server", "8000", "--directory", "/srv"],
            host_config=api.create_host_config(network_mode=name),
            networking_config=api.create_networking_config(
                {name: api.create_endpoint_config(aliases=[SERVICE])}
            ),
        )["Id"]
        api.put_archive(container, "/", _site_tar())
        api.start(container)
        probe = "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8000/data.txt')"
        for _ in range(100):
            run = api.exec_create(container, ["python3", "-c", probe])
            api.exec_start(run["Id"])
            if api.exec_inspect(run["Id"])["ExitCode"] == 0:
                break
            time.sleep(0.1)
        else:
            pytest.fail("the index service did not answer")
        yield name
    finally:
        if container is not None:
            api.remove_container(container, force=True)
        api.remove_network(network)


def _backend(base_image, **choice):
    from evalnoise.runner.environment import EnvironmentBackend
    from evalnoise.runner.trial_network import NetworkChoice

    return EnvironmentBackend(base=base_image, network=NetworkChoice(**choice))


def _task(root, name, network_mode):
    folder = make_env_task(
        root, name, test_sh=TEST, solve_sh=SOLVE, dockerfile=DOCKERFILE, memory_mb=256
    )
    (folder / "environment" / "curl").write_text(CURL)
    toml = folder / "task.toml"
    toml.write_text(
        toml.read_text().replace('network_mode = "no-network"', f'network_mode = "{network_mode}"')
    )
    return folder


def _networks(engine, shard_id):
    from evalnoise.runner.docker_backend import SHARD_LABEL

    return engine.api.networks(filters={"label": f"{SHARD_LABEL}={shard_id}"})


def test_public_task_fetches_from_the_local_internet_and_scores(
    docker_engine, base_image, internet, tmp_path
):
    backend = _backend(base_image, name=internet)
    assert backend.name == f"docker-environment:network=as_declared:{internet}"
    folder = _task(tmp_path, "net-public", "public")
    row = MADE.trial(backend, folder, "oracle", shard_id="net-public")
    assert (row["status"], row["reward"]) == ("ok", 1.0), row["error"]
    assert row["network"] == f"named:{internet}"
    assert "installed ../../packages/greeting-1.0-py3-none-any.whl" in row["stdout_tail"]
    assert shard_containers(docker_engine, "net-public") == []
    assert docker_engine.api.networks(names=[internet])  # a named network is left alone


def test_same_task_without_network_is_a_verifier_error_with_its_cause(
    docker_engine, base_image, internet, tmp_path
):
    backend = _backend(base_image, name=internet)
    folder = _task(tmp_path, "net-sealed", "no-network")
    row = MADE.trial(backend, folder, "oracle", shard_id="net-sealed")
    assert (row["status"], row["phase"], row["reward"]) == ("verifier_error", "verifier", None)
    assert row["network"] == "none"
    assert "\n" not in row["error"]
    assert row["error"] == (
        "no reward file: the verifier wrote neither reward.json nor reward.txt; the trial had "
        "no network and its verifier fetches from it (tests/test.sh:3 (curl))"
    ), row["error"]


def test_offline_run_keeps_public_tasks_without_network(docker_engine, base_image, tmp_path):
    backend = _backend(base_image, mode="offline")
    assert backend.name == "docker-environment:network=offline"
    folder = _task(tmp_path, "net-offline", "public")
    row = MADE.trial(backend, folder, "oracle", shard_id="net-off")
    assert (row["status"], row["network"]) == ("verifier_error", "none")
    assert "the trial had no network and its verifier fetches from it" in row["error"]


def test_default_gives_a_network_of_its_own_internal_on_this_engine(
    docker_engine, base_image, tmp_path, caplog
):
    """This engine has no default bridge: the trial's own network is --internal, said once,
    created before the container and removed after it."""
    backend = _backend(base_image)
    assert backend.name == "docker-environment"
    assert not backend.networks.has_default_bridge()
    folder = make_env_task(
        tmp_path,
        "net-own",
        test_sh="""\
        ls /sys/class/net > /logs/verifier/interfaces.txt
        echo 1 > /logs/verifier/reward.txt
        cp /logs/verifier/interfaces.txt /logs/verifier/keep.txt
        """,
        solve_sh="getent hosts main > /logs/agent/main.txt && cat /logs/agent/main.txt\n",
        environment_toml="",
    )
    toml = folder / "task.toml"
    toml.write_text(toml.read_text().replace('network_mode = "no-network"\n', ""))  # public
    with caplog.at_level(logging.WARNING, logger="evalnoise.runner.trial_network"):
        first = MADE.trial(backend, folder, "oracle", shard_id="net-own")
        second = MADE.trial(backend, folder, "oracle", shard_id="net-own", trial=1)
    for row in (first, second):
        assert (row["status"], row["reward"], row["network"]) == ("ok", 1.0, "trial-internal")
        assert row["exit_code"] == 0, row["stdout_tail"]  # answers to `main` on its network
    notices = [r for r in caplog.records if "no route out of this machine" in r.getMessage()]
    assert len(notices) == 1
    assert _networks(docker_engine, "net-own") == []
    assert shard_containers(docker_engine, "net-own") == []


def test_cleanup_removes_a_killed_runs_networks(docker_engine, base_image):
    from evalnoise.runner.trial_network import TrialNetworks

    backend = _backend(base_image)
    network = TrialNetworks(docker_engine).open("public", "net-left")
    assert network.internal and network.label == "trial-internal"
    assert len(_networks(docker_engine, "net-left")) == 1
    assert backend.cleanup("net-left") == 1
    assert _networks(docker_engine, "net-left") == []
