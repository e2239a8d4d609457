"""Child process of :func:`evalnoise.runner.task_images.ensure_task_image`: one image build.

Run as ``python -m evalnoise.runner._build_worker '<json request>'`` with the request's
``context``, ``tag``, ``buildargs`` and ``labels``. Streams the engine's build log to stdout
and exits 0 when the image was built, 1 when the build failed. The parent kills this process
at the build deadline; the engine then sees the client go away and cancels the build (the
reason the build is not run in the parent's own thread, which could not be interrupted).
"""

from __future__ import annotations

import json
import sys


def main(argv: list[str]) -> int:
    """Build the image the JSON request in ``argv[0]`` describes; 0 if built, else 1."""
    import docker

    request = json.loads(argv[0])
    client = docker.from_env(timeout=None)
    out = sys.stdout
    failed = None
    for chunk in client.api.build(
        path=request["context"],
        tag=request["tag"],
        buildargs=request["buildargs"],
        labels=request["labels"],
        pull=False,
        rm=True,
        forcerm=True,
        network_mode="none",
        decode=True,
    ):
        if "stream" in chunk:
            out.write(str(chunk["stream"]))
        elif "error" in chunk:
            failed = str(chunk["error"])
            out.write(f"ERROR: {failed}\n")
        elif "status" in chunk:
            out.write(f"{chunk['status']}\n")
        out.flush()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
