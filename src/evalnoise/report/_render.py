"""Render Vega-Lite charts to files that need nothing from the network.

HTML: one self-contained page per chart. The Vega, Vega-Lite and vega-embed JavaScript is
inlined from ``vl_convert.javascript_bundle`` (the bundle altair's ``save(inline=True)``
uses); the spec is inlined as JSON with ``<``, ``>``, ``&`` escaped, so a task or agent name
containing ``</script>`` cannot end the script element early. A Content-Security-Policy
forbids every fetch, so a chart that tried to load something would fail loudly in the
browser console instead of silently reaching out. The vega-embed action menu (which links to
the online Vega editor) is turned off.

PNG: rendered by vl-convert (no browser), in this process or, for a whole report, in a
thread started with it or in worker processes (:class:`PngRenderer`). Both outputs are pure
functions of the spec, so rebuilding a report from the same inputs gives byte-identical
files.
"""

from __future__ import annotations

import contextlib
import functools
import html
import json
import os
import queue
import shutil
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

import vl_convert as vlc

from evalnoise.atomic import atomic_open
from evalnoise.report.vegalite import VL_VERSION
from evalnoise.user_cache import cache_dir

if TYPE_CHECKING:
    import altair as alt

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

    vl-convert bundles it anew on every call (seconds, in every report job); it is a function
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
    """An altair chart's Vega-Lite spec, validated against the schema (for the charts of
    :mod:`evalnoise.report.charts`, which are the report's specs,
    :mod:`evalnoise.report.specs`, loaded into altair; the report itself uses the specs).

    Altair refuses a dataset of more than 5,000 rows by default; the charts bound their own
    data (:data:`evalnoise.report.chart_tables.PER_TASK_POINTS`), so a big run's chart is
    drawn, not refused."""
    import altair as alt

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


def png_spec(spec: dict[str, Any]) -> dict[str, Any]:
    """The spec as the PNG renders it: without ARIA attributes (``config.aria: false``).

    Vega writes an ``aria-label`` naming every field of every mark into the SVG it hands the
    rasterizer (5,000 points: a megabyte of labels); a picture has no use for them and its
    pixels are the same, byte for byte, without them."""
    return {**spec, "config": {**spec.get("config", {}), "aria": False}}


def write_chart(
    spec: dict[str, Any],
    out_dir: Path,
    stem: str,
    title: str,
    *,
    png: PngRenderer | None = None,
    picture: bool = True,
) -> list[Path]:
    """Write ``<stem>.html`` (offline) and ``<stem>.png`` of a Vega-Lite spec atomically.

    Returns the paths written. ``spec`` comes from :func:`chart_spec`. With ``png`` the PNG
    is handed to that renderer's workers and exists once the renderer is closed; without, it
    is rendered here; ``picture=False`` writes the HTML only.
    """
    html_path = out_dir / f"{stem}.html"
    png_path = out_dir / f"{stem}.png"
    with atomic_open(html_path) as fh:
        fh.write(chart_page(title, spec))
    if not picture:
        return [html_path]
    if png is not None:
        png.submit(spec, png_path)
        return [html_path, png_path]
    data = vlc.vegalite_to_png(png_spec(spec), scale=PNG_SCALE, vl_version=VL_VERSION)
    with atomic_open(png_path, "wb") as fh:
        fh.write(data)
    return [html_path, png_path]


def png_workers() -> int:
    """Worker processes a report renders its PNGs in: one per CPU left idle beside the
    report's own thread and its rendering thread (:class:`PngRenderer`), judged by the
    1-minute load average, at most 2 — and none unless two are idle: one worker process
    renders no more at once than the rendering thread does, and pays its own interpreter and
    imports on top. vl-convert releases the GIL while it renders, so the thread already
    renders beside the report's own work; a second V8 engine (a second process) only pays
    off when two more CPUs are idle. On a loaded 2-core machine (load 8-10) the report took
    longer with one worker process than without
    (benchmarks/results/analysis-imported-100000-a2-fastanalysis-pngworker.md)."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        cpus = os.cpu_count() or 1
    try:
        load = os.getloadavg()[0]
    except OSError:
        load = float(cpus)
    idle = int(cpus - load)
    workers = max(0, min(2, idle - 1))
    return workers if workers >= 2 else 0


class _RenderThread:
    """Renders PNGs in a thread of this process, in submission order.

    Started with the report: its first render (a one-point chart, :data:`_png.WARM_UP_SPEC`)
    starts vl-convert's V8 engine and Vega-Lite compiler while the report builds its cards
    and charts. vl-convert releases the GIL while it renders, so the report's own work goes
    on beside it. :meth:`close` waits for every PNG and returns the
    problems: each chart whose rendering raised, by name."""

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue[tuple[dict[str, Any], Path] | None] = queue.SimpleQueue()
        self._errors: list[str] = []
        self._cancelled = threading.Event()
        self._thread = threading.Thread(target=self._run, name="evalnoise-png", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        from evalnoise.report._png import WARM_UP_SPEC

        with contextlib.suppress(Exception):  # a broken engine fails each chart, named
            vlc.vegalite_to_svg(WARM_UP_SPEC, vl_version=VL_VERSION)
        while (job := self._jobs.get()) is not None:
            spec, png_path = job
            if self._cancelled.is_set():
                continue
            try:
                data = vlc.vegalite_to_png(png_spec(spec), scale=PNG_SCALE, vl_version=VL_VERSION)
                with atomic_open(png_path, "wb") as fh:
                    fh.write(data)
            except Exception as exc:  # named by close(), which fails the report
                self._errors.append(f"{Path(png_path).name}: {type(exc).__name__}: {exc}")

    def submit(self, spec: dict[str, Any], png_path: Path) -> None:
        self._jobs.put((spec, png_path))

    def close(self, *, cancel: bool = False) -> list[str]:
        """Wait for the PNGs submitted (``cancel``: only the one being rendered)."""
        if cancel:
            self._cancelled.set()
        self._jobs.put(None)
        self._thread.join()
        return self._errors


class PngRenderer:
    """Renders charts' PNGs in worker processes (:mod:`evalnoise.report._png`).

    Started at the beginning of a report, the workers start their V8 engines while the
    report builds its cards and charts; each :meth:`submit` goes to the worker with the
    least spec text queued (a chart's cost grows with its data), so with two workers the
    big per-question chart and the small ones render at once. :meth:`close` waits for every
    PNG and raises ``RuntimeError`` naming each chart that was not written (its error, or
    the worker's exit status and last output). Used as a context manager it closes on
    success and stops its workers on an error. ``workers=0`` renders in a thread of this
    process (:class:`_RenderThread`), started at once; the default is :func:`png_workers`.
    """

    def __init__(self, workers: int | None = None) -> None:
        self.workers = png_workers() if workers is None else int(workers)
        # the workers' spec and reply files; rendering in this process needs none
        self._tmp = Path(tempfile.mkdtemp(prefix="evalnoise-png-")) if self.workers else None
        self._queued: list[int] = []
        self._pending: list[list[str]] = []
        self._procs: list[subprocess.Popen[str]] = []
        self._stderr: list[IO[str]] = []
        self._n = 0
        self._thread = _RenderThread() if not self.workers else None
        env = dict(os.environ)
        # the workers import this evalnoise, wherever it was imported from
        package_root = str(Path(__file__).resolve().parents[2])
        env["PYTHONPATH"] = os.pathsep.join(
            p for p in [package_root, env.get("PYTHONPATH", "")] if p
        )
        try:
            for i in range(self.workers):
                err = open(self._tmp / f"worker-{i}.err", "w+", encoding="utf-8")
                self._stderr.append(err)
                replies = self._tmp / f"worker-{i}.replies"
                self._procs.append(
                    subprocess.Popen(
                        [
                            sys.executable,
                            "-m",
                            "evalnoise.report._png",
                            VL_VERSION,
                            str(PNG_SCALE),
                            str(replies),
                        ],
                        stdin=subprocess.PIPE,
                        stdout=subprocess.DEVNULL,
                        stderr=err,
                        text=True,
                        env=env,
                    )
                )
                self._queued.append(0)
                self._pending.append([])
        except BaseException:
            self._stop()
            raise

    def submit(self, spec: dict[str, Any], png_path: Path) -> None:
        """Render ``spec`` (from :func:`chart_spec`) to ``png_path``."""
        if self._thread is not None:
            self._thread.submit(spec, png_path)
            return
        text = json.dumps(png_spec(spec))
        spec_file = self._tmp / f"spec-{self._n}.json"
        self._n += 1
        spec_file.write_text(text, encoding="utf-8")
        i = min(range(len(self._procs)), key=self._queued.__getitem__)
        self._queued[i] += len(text)
        self._pending[i].append(str(png_path))
        stdin = self._procs[i].stdin
        assert stdin is not None
        try:
            stdin.write(json.dumps({"spec": str(spec_file), "png": str(png_path)}) + "\n")
            stdin.flush()
        except BrokenPipeError:
            pass  # the worker died: close() names its charts and its output

    def close(self) -> None:
        """Wait for every submitted PNG; raise ``RuntimeError`` naming the ones not written."""
        problems = []
        if self._thread is not None:
            thread, self._thread = self._thread, None
            problems += thread.close()
        try:
            for i, (proc, pending, err) in enumerate(
                zip(self._procs, self._pending, self._stderr, strict=True)
            ):
                assert proc.stdin is not None
                with contextlib.suppress(BrokenPipeError):
                    proc.stdin.close()
                code = proc.wait()
                replies_file = self._tmp / f"worker-{i}.replies"
                text = replies_file.read_text("utf-8") if replies_file.exists() else ""
                replies = [json.loads(line) for line in text.splitlines() if line.strip()]
                done = {r["png"]: r["error"] for r in replies}
                for path in pending:
                    if path not in done:
                        err.seek(0)
                        tail = err.read()[-2000:].strip()
                        problems.append(
                            f"{Path(path).name}: the PNG worker exited ({code}) before "
                            f"rendering it: {tail or 'no output'}"
                        )
                    elif done[path] is not None:
                        problems.append(f"{Path(path).name}: {done[path]}")
        finally:
            self._stop()
        if problems:
            raise RuntimeError("PNG rendering failed: " + "; ".join(problems))

    def _stop(self) -> None:
        if self._thread is not None:  # an error in the report: its PNGs are not wanted
            thread, self._thread = self._thread, None
            thread.close(cancel=True)
        for proc in self._procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            if proc.stdin is not None:
                with contextlib.suppress(OSError):
                    proc.stdin.close()
        for err in self._stderr:
            err.close()
        self._procs, self._stderr = [], []
        if self._tmp is not None:
            shutil.rmtree(self._tmp, ignore_errors=True)

    def __enter__(self) -> PngRenderer:
        return self

    def __exit__(self, kind: Any, value: Any, traceback: Any) -> None:
        if kind is None:
            self.close()
        else:
            self._stop()
