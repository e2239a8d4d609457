"""``python -S -E snakemake_fork_client.py SOCKET SNAKEMAKE [ARGS...]``: run ``SNAKEMAKE ARGS``
as a fork of the server on ``SOCKET`` (snakemake_forks.py) with this process's working
directory, environment and standard streams; exit as that run exits. Standard library only."""

import json
import os
import signal
import socket
import struct
import sys


def main() -> None:
    path, argv = sys.argv[1], sys.argv[2:]
    connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    connection.connect(path)
    payload = json.dumps({"argv": argv, "cwd": os.getcwd(), "env": dict(os.environ)}).encode()
    socket.send_fds(connection, [struct.pack("!Q", len(payload))], [0, 1, 2])
    connection.sendall(payload)
    replies = connection.makefile("rb")
    pid = json.loads(replies.readline())["pid"]
    for number in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(number, lambda received, _frame: os.kill(pid, received))
    line = replies.readline()
    if not line:
        sys.exit("snakemake_fork_client: the server's monitor went away without an exit code")
    code = int(line)
    if code < 0:  # ended by a signal: end by the same one
        signal.signal(-code, signal.SIG_DFL)
        os.kill(os.getpid(), -code)
    sys.exit(code)


if __name__ == "__main__":
    main()
