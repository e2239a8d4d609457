"""Render altair charts to files that need nothing from the network.

HTML: one self-contained page per chart. The Vega, Vega-Lite and vega-embed JavaScript is
inlined from ``vl_convert.javascript_bundle`` (the bundle altair's ``save(inline=True)``
uses); the spec is inlined as JSON with ``<``, ``>``, ``&`` escaped, so a task or agent name
containing ``</script>`` cannot end the script element early. A Content-Security-Policy
forbids every fetch, so a chart that tried to load something would fail loudly in the
browser console instead of silently reaching out. The vega-embed action menu (which links to
the online Vega editor) is turned off.

PNG: rendered by vl-convert (no browser). Both outputs are pure functions of the spec, so
rebuilding a report from the same inputs gives byte-identical files.
"""

from __future__ import annotations

import contextlib
import functools
import html
import json
from pathlib import Path
from typing import Any

import altair as alt
import vl_convert as vlc

from evalnoise.atomic import atomic_open
from evalnoise.user_cache import cache_dir

#: Vega-Lite version of the bundled JavaScript and of PNG rendering: the one altair emits.
VL_VERSION = "v" + "_".join(alt.SCHEMA_VERSION.lstrip("v").split(".")[:2])

#: Options passed to vega-embed. ``actions: false`` removes the menu that links online.
EMBED_OPTIONS: dict[str, Any] = {"actions": False, "renderer": "svg"}

#: Pages may run their own inline scripts and Vega's compiled expressions, show inline and
#: local images, and load nothing else.
CSP = (
    "default-src 'none'; script-src 'unsafe-inline' 'unsafe-eval'; "
    "style-src 'unsafe-inline'; img-src 'self' data:; frame-src 'self'"
)

PNG_SCALE = 2.0


@functools.cache
def vega_bundle() -> str:
    """The vega + vega-lite + vega-embed bundle, defining ``window.vegaEmbed``.

    vl-convert bundles it anew on every call (1–2 s, in every report job); it is a function
    of vl-convert's version and the Vega-Lite version alone, so it is kept in the user cache
    (:func:`evalnoise.user_cache.cache_dir`) under both, written atomically."""
    cached = cache_dir() / "vega" / f"bundle-{vlc.__version__}-{VL_VERSION}.js"
    try:
        bundle = cached.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        bundle = ""
    if "vegaEmbed" not in bundle:  # absent, or not a bundle (edited by hand): bundle again
        bundle = vlc.javascript_bundle(vl_version=VL_VERSION)
        with contextlib.suppress(OSError):  # a read-only cache: bundle every time
            cached.parent.mkdir(parents=True, exist_ok=True)
            with atomic_open(cached) as fh:
                fh.write(bundle)
    if "</script" in bundle.lower():  # would end the inline <script> element early
        raise RuntimeError("the vl-convert JavaScript bundle contains '</script'")
    return bundle


def script_json(value: Any) -> str:
    """JSON that is safe inside an HTML ``<script>`` element."""
    text = json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    for raw, escaped in (
        ("&", "\\u0026"),
        ("<", "\\u003c"),
        (">", "\\u003e"),
        ("\u2028", "\\u2028"),
        ("\u2029", "\\u2029"),
    ):
        text = text.replace(raw, escaped)
    return text


def chart_spec(chart: alt.TopLevelMixin) -> dict[str, Any]:
    """The chart's Vega-Lite spec, validated against the schema.

    Altair refuses a dataset of more than 5,000 rows by default; the charts bound their own
    data (:data:`evalnoise.report.charts.PER_TASK_POINTS`), so a big run's report is drawn,
    not refused."""
    with alt.data_transformers.enable("default", max_rows=None):
        return chart.to_dict(validate=True)


def embed_script(div_id: str, spec: dict[str, Any]) -> str:
    """A ``<script>`` body rendering ``spec`` into ``#div_id``; errors go to the console."""
    return (
        f"vegaEmbed({json.dumps('#' + div_id)}, {script_json(spec)}, "
        f"{script_json(EMBED_OPTIONS)}).catch(function (e) {{ console.error(e); }});"
    )


def page_head(title: str, style: str) -> str:
    """The head of every page of the report (index and chart pages): UTF-8, the Content
    Security Policy :data:`CSP` (nothing is fetched: the page works offline), no favicon
    request, the title, ``style``, and the Vega bundle inline; the ``<body>`` opens with
    the title as ``<h1>``."""
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="{CSP}">
<link rel="icon" href="data:,">
<title>{html.escape(title)}</title>
<style>{style}</style>
<script>
{vega_bundle()}
</script>
</head>
<body>
<h1>{html.escape(title)}</h1>"""


def chart_page(title: str, spec: dict[str, Any]) -> str:
    """A complete, self-contained HTML page showing one chart."""
    return f"""{page_head(title, "body { font-family: sans-serif; margin: 1.5em; }")}
<div id="chart" class="chart"></div>
<script>
{embed_script("chart", spec)}
</script>
</body>
</html>
"""


def write_chart(spec: dict[str, Any], out_dir: Path, stem: str, title: str) -> list[Path]:
    """Write ``<stem>.html`` (offline) and ``<stem>.png`` of a Vega-Lite spec atomically.

    Returns both paths. ``spec`` comes from :func:`chart_spec`.
    """
    html_path = out_dir / f"{stem}.html"
    png_path = out_dir / f"{stem}.png"
    with atomic_open(html_path) as fh:
        fh.write(chart_page(title, spec))
    png = vlc.vegalite_to_png(spec, scale=PNG_SCALE, vl_version=VL_VERSION)
    with atomic_open(png_path, "wb") as fh:
        fh.write(png)
    return [html_path, png_path]
