"""Segv agent for the runner's tests: reads its task, then dies of SIGSEGV.

A real fault, not an exit status: the process kills itself with the signal, so whoever
waits for it sees "killed by signal 11" — the container's init (docker-init, tini) reports
it as exit code 128 + 11 = 139, the local backend records the same. No core file is written
(RLIMIT_CORE = 0): a core dump would only slow the crash down and fill the scratch space.
Standard library only; runs in the base image and on the host (local backend).
"""

import json
import os
import resource
import signal
import sys


def main():
    with open(os.environ["EVALNOISE_TASK_FILE"]) as handle:
        json.load(handle)  # it got as far as reading the task, like a real agent
    print("loading a native library built for another CPU...", file=sys.stderr, flush=True)
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    signal.signal(signal.SIGSEGV, signal.SIG_DFL)  # faulthandler or a runtime may catch it
    os.kill(os.getpid(), signal.SIGSEGV)
    sys.exit("still alive after SIGSEGV")  # not reached


if __name__ == "__main__":
    main()
