#!/usr/bin/env bash
# Build the evalnoise base image offline: evalnoise-base:<hash of base.toml + script version>.
#
#   debootstrap --variant=minbase --include=<packages> <suite> DIR   (cached as a tarball
#   under ~/.cache/evalnoise/base/, or $EVALNOISE_CACHE_DIR)
#   tar -C DIR -c . | docker import - evalnoise-base:<hash>
#
# A no-op when the tag exists; re-imports the cached tarball when only the image is gone.
# The logic lives in evalnoise.runner.base_image.build_base_image (also `evalnoise image build`);
# this script only makes sure an engine answers and calls it. Prints the tag.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
python=${PYTHON:-$repo/.venv/bin/python}
"$repo/tools/docker-engine.sh"
EVALNOISE_BASE_INPUTS=$here PYTHONPATH=$repo/src${PYTHONPATH:+:$PYTHONPATH} \
    exec "$python" -m evalnoise image build "$@"
