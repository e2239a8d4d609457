"""Probe agent for the runner's tests: follows the evalnoise agent contract.

The question is a JSON object naming an operation:
  {"op": "answer", "value": V}        write {"answer": V} to EVALNOISE_OUTPUT
  {"op": "stdout_answer", "value": V} print {"answer": V} as the last JSON line of stdout only
  {"op": "alloc", "mb": N}            allocate N MiB and touch every page, then answer
                                      (with "hold_s": S, hold it S seconds before answering)
  {"op": "sleep", "s": S}             sleep S seconds, then answer
  {"op": "crash"}                     exit with status 3 (or {"code": N})
  {"op": "no_answer"}                 exit 0 without answering
  {"op": "http", "port": P}           GET http://127.0.0.1:P/ and answer what happened
  {"op": "echo_env", "name": N}       print env var N on stdout and stderr and answer it
  {"op": "spawn_sleep", "pidfile": F} start a child `sleep 600`, write its pid to F, sleep
  {"op": "oom_until", "attempt": A, "mb": N}  allocate N MiB while EVALNOISE_ATTEMPT < A,
                                      answer "survived" from attempt A on
  {"op": "introspect"}                answer a JSON report of the sandbox it runs in
  {"op": "record", "record": R}       write the JSON object R as the answer record (e.g. with
                                      a "usage"); with "code": N, then exit with status N
Standard library only; runs in the base image and on the host (local backend).
"""

import json
import os
import subprocess
import sys
import time
import urllib.request


def answer(value):
    with open(os.environ["EVALNOISE_OUTPUT"], "w") as handle:
        json.dump({"answer": value}, handle)


CGROUP_FILES = [
    "memory/memory.limit_in_bytes",
    "memory/memory.soft_limit_in_bytes",
    "memory/memory.memsw.limit_in_bytes",
    "cpu/cpu.shares",
    "cpu/cpu.cfs_quota_us",
    "cpu/cpu.cfs_period_us",
    "pids/pids.max",
    "memory.max",
    "memory.low",
    "memory.swap.max",
    "cpu.max",
    "cpu.weight",
    "pids.max",
]


def cgroup_limits():
    """The limits the kernel applies to this container (cgroup v1 or v2 namespace view)."""
    out = {}
    for name in CGROUP_FILES:
        try:
            with open("/sys/fs/cgroup/" + name) as handle:
                out[name] = handle.read().strip()
        except OSError:
            pass
    return out


def allocate(mb):
    block = bytearray(mb * 1024 * 1024)
    for i in range(0, len(block), 4096):
        block[i] = 1
    return block


def introspect(task):
    report = {"uid": os.getuid(), "gid": os.getgid(), "cwd": os.getcwd()}
    try:
        open("/evalnoise-probe-write-test", "w").close()
        report["root_writable"] = True
    except OSError:
        report["root_writable"] = False
    try:
        with open(os.path.join(os.environ.get("TMPDIR", "/tmp"), "probe"), "w") as handle:
            handle.write("x")
        report["tmp_writable"] = True
    except OSError:
        report["tmp_writable"] = False
    try:
        with open("/proc/self/status") as handle:
            for line in handle:
                if line.startswith(("CapEff:", "NoNewPrivs:")):
                    key, value = line.split(":", 1)
                    report[key] = value.strip()
    except OSError:
        pass
    try:
        report["pid1"] = open("/proc/1/cmdline", "rb").read().split(b"\0")[0].decode()
    except OSError:
        report["pid1"] = None
    try:
        with open(os.environ["EVALNOISE_TASK_FILE"], "a"):
            report["task_file_writable"] = True
    except OSError:
        report["task_file_writable"] = False
    report["cgroup"] = cgroup_limits()
    report["env"] = {k: v for k, v in os.environ.items() if k.startswith("EVALNOISE_")}
    report["task"] = task
    report["interfaces"] = (
        sorted(os.listdir("/sys/class/net")) if os.path.isdir("/sys/class/net") else None
    )
    report["loopback"] = loopback_works()
    return report


def loopback_works():
    """Whether a connection to a socket listening on 127.0.0.1 in this sandbox succeeds."""
    import socket

    try:
        with socket.socket() as server:
            server.bind(("127.0.0.1", 0))
            server.listen()
            with socket.create_connection(server.getsockname(), timeout=5):
                return True
    except OSError as exc:
        return f"{type(exc).__name__}: {exc}"


def main():
    with open(os.environ["EVALNOISE_TASK_FILE"]) as handle:
        task = json.load(handle)
    command = json.loads(task["question"])
    op = command["op"]
    if op == "answer":
        answer(command["value"])
    elif op == "stdout_answer":
        print("thinking...")
        print(json.dumps({"answer": command["value"]}))
        print("done")
    elif op == "alloc":
        block = allocate(command["mb"])
        time.sleep(command.get("hold_s", 0))
        del block
        answer(f"allocated {command['mb']}")
    elif op == "oom_until":
        if int(os.environ["EVALNOISE_ATTEMPT"]) < command["attempt"]:
            allocate(command["mb"])
        answer("survived")
    elif op == "sleep":
        time.sleep(command["s"])
        answer("slept")
    elif op == "crash":
        print("about to crash", file=sys.stderr)
        sys.exit(command.get("code", 3))
    elif op == "no_answer":
        print("I have nothing to say")
    elif op == "http":
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{command['port']}/", timeout=3) as r:
                answer("reached:" + r.read().decode())
        except OSError as exc:
            answer(f"unreachable:{type(exc).__name__}")
    elif op == "echo_env":
        value = os.environ.get(command["name"], "")
        print(f"the secret is {value}")
        print(f"stderr says {value}", file=sys.stderr)
        answer(value)
    elif op == "spawn_sleep":
        child = subprocess.Popen(["sleep", "600"])
        with open(command["pidfile"], "w") as handle:
            handle.write(str(child.pid))
        time.sleep(600)
    elif op == "introspect":
        answer(introspect(task))
    elif op == "record":
        with open(os.environ["EVALNOISE_OUTPUT"], "w") as handle:
            json.dump(command["record"], handle)
        sys.exit(command.get("code", 0))
    else:
        sys.exit(f"unknown op {op!r}")


if __name__ == "__main__":
    main()
