"""A process that renders Vega-Lite specs to PNG files with vl-convert (no altair).

vl-convert holds the GIL while it renders, and its first call in a process starts a V8
engine, which is slow; a report renders every PNG after that start, one after the
other. :class:`evalnoise.report._render.PngRenderer` runs this module in worker processes
started when the report begins, so the engine starts and the PNGs render while the report
builds its cards and charts (two workers render two charts at once) — when CPUs are idle
for them (:func:`evalnoise.report._render.png_workers`).

Protocol, one JSON object a line: the worker reads ``{"spec": FILE, "png": PATH}`` on
stdin (the spec as a JSON file, so a line stays short and a write to the pipe never waits
for a render), renders it with ``vegalite_to_png(spec, scale, vl_version)`` (both from the
command line), writes ``PATH`` atomically and appends ``{"png": PATH, "error": null}`` (or
the error's text) to the file REPLIES, which the parent reads once the worker has exited: a
reply never waits for the parent to read it (a pipe the parent read only at the end filled
after a few hundred charts, and the worker then stopped reading its input — a deadlock). It
exits at the end of its input.

    python -m evalnoise.report._png VL_VERSION SCALE REPLIES
"""

from __future__ import annotations

import json
import sys

import vl_convert as vlc

from evalnoise.atomic import atomic_open

#: Rendered once at start: the V8 engine and the Vega-Lite compiler start before any job.
WARM_UP_SPEC = {"data": {"values": [{"x": 0}]}, "mark": "point", "encoding": {"x": {"field": "x"}}}


def render(spec_file: str, png_path: str, *, vl_version: str, scale: float) -> None:
    """Render the Vega-Lite spec in ``spec_file`` (JSON) to ``png_path``, atomically."""
    with open(spec_file, encoding="utf-8") as fh:
        spec = json.load(fh)
    png = vlc.vegalite_to_png(spec, scale=scale, vl_version=vl_version)
    with atomic_open(png_path, "wb") as fh:
        fh.write(png)


def main(argv: list[str] | None = None) -> int:
    vl_version, scale, replies_path = (argv if argv is not None else sys.argv[1:])[:3]
    vlc.vegalite_to_svg(WARM_UP_SPEC, vl_version=vl_version)
    with open(replies_path, "a", encoding="utf-8") as replies:
        for line in sys.stdin:
            if not line.strip():
                continue
            job = json.loads(line)
            try:
                render(job["spec"], job["png"], vl_version=vl_version, scale=float(scale))
                error = None
            except Exception as exc:  # reported to the parent, which names the chart and fails
                error = f"{type(exc).__name__}: {exc}"
            replies.write(json.dumps({"png": job["png"], "error": error}) + "\n")
            replies.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
