"""``evalnoise image``: container images built offline (``image build``: the base image;
``image build-agent``: an agent image on it).

Register with :func:`add_parser` (sets ``run``, the convention of :mod:`evalnoise.cli`);
:mod:`evalnoise.runner.base_image` does the work. The one entry point and its one error handler
are :func:`evalnoise.cli.main` (``evalnoise image build``, ``python -m evalnoise image
build``).
"""

from __future__ import annotations

import argparse

from evalnoise._extras import require

HELP = "build container images offline (the base image, agent images)"


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """Register ``image`` (``image build``, ``image build-agent``)."""
    configure(subparsers.add_parser("image", help=HELP, description=HELP + "."))


def configure(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="image_command", metavar="IMAGE_COMMAND", required=True)
    b = sub.add_parser(
        "build",
        help="build evalnoise-base:<hash> (debootstrap + docker import; cached)",
        description="Build the base image offline from images/base/base.toml: debootstrap a "
        "Debian root filesystem (cached under ~/.cache/evalnoise) and docker "
        "import it as evalnoise-base:<hash of the inputs>. A no-op when that tag "
        "exists. Prints the tag.",
    )
    b.add_argument(
        "--inputs",
        default=None,
        help="directory holding base.toml (default: $EVALNOISE_BASE_INPUTS, else images/base "
        "of the evalnoise checkout)",
    )
    b.add_argument(
        "--cache-dir",
        default=None,
        help="root filesystem cache (default: $EVALNOISE_CACHE_DIR or ~/.cache/evalnoise)",
    )
    b.add_argument("--force", action="store_true", help="rebuild even if cached")
    b.set_defaults(run=_image_build)
    a = sub.add_parser(
        "build-agent",
        help="build an agent image FROM the base image (offline)",
        description="docker build CONTEXT (whose Dockerfile starts with ARG BASE / FROM "
        "${BASE}) with BASE set to the base image; never pulls, no network in "
        "RUN steps. Prints the image id.",
    )
    a.add_argument("context", help="build context directory with a Dockerfile")
    a.add_argument("--tag", required=True, help="image tag to give the agent image")
    a.add_argument(
        "--base", default=None, help="base image (default: build/find evalnoise-base:<hash>)"
    )
    a.set_defaults(run=_image_build_agent)


def _image_build(args: argparse.Namespace) -> int:
    require("docker", "evalnoise image build")
    from evalnoise.runner.base_image import build_base_image

    print(build_base_image(inputs_dir=args.inputs, cache_dir=args.cache_dir, force=args.force))
    return 0


def _image_build_agent(args: argparse.Namespace) -> int:
    require("docker", "evalnoise image build-agent")
    from evalnoise.runner.base_image import build_agent_image, build_base_image

    base = args.base or build_base_image()
    print(build_agent_image(args.context, args.tag, base))
    return 0
