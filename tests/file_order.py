"""The order in which test files start: the longest first.

tools/test.sh runs files in parallel workers (pytest-xdist, ``--dist loadfile``): each file
runs whole on one worker, in the order the files are collected. pytest-xdist's default
reorders the files by *number of tests*, so the files of one long test (test_e2e.py,
test_effective_config.py, the pipeline tests of a few minutes each) were handed out last and
the suite waited on them at the end while the other workers idled. Started first, they run
beside the many short files instead: the longest-processing-time-first rule for scheduling
independent jobs on parallel machines, whose makespan is within 4/3 of the optimum (Graham,
"Bounds on multiprocessing timing anomalies", SIAM J. Appl. Math. 17, 1969).

A file's cost is its tests' duration in the last run that measured it (pytest's cache,
written at the end of every run that has a cache), else :data:`MEASURED_S` (seconds, from a
full ``CI=true tools/test.sh`` run on 2 cores), else a guess from its markers. The order only
decides when a file starts; which tests run and what they assert is unchanged.
"""

from __future__ import annotations

from collections import defaultdict

import pytest

CACHE_KEY = "evalnoise/file_seconds"

#: Seconds per file (setup + call + teardown of its tests) in a full CI run on 2 cores with
#: 4 workers: the suite's slowest files. A file not listed and not in the cache is guessed.
MEASURED_S = {
    "tests/pipeline/test_e2e.py": 245.0,
    "tests/pipeline/test_slurm.py": 235.0,
    "tests/pipeline/test_kill_resume.py": 230.0,
    "tests/compat/test_terminus2_equivalence.py": 145.0,
    "tests/pipeline/test_pipeline_profiles.py": 130.0,
    "tests/compat/test_harbor_examples.py": 115.0,
    "tests/scorers/test_scorers_judge_live.py": 105.0,
    "tests/pipeline/test_engine_outage_pipeline.py": 105.0,
    "tests/pipeline/test_health.py": 100.0,
    "tests/pipeline/test_growth.py": 95.0,
    "tests/pipeline/test_variants_pipeline.py": 80.0,
    "tests/pipeline/test_judge_stage.py": 80.0,
    "tests/pipeline/test_effective_config.py": 80.0,
    "tests/report/test_report_charts.py": 80.0,
    "tests/pipeline/test_dependencies.py": 75.0,
    "tests/pipeline/test_environment_pipeline.py": 65.0,
}
#: The guess for a file nobody measured: a test marked ``docker`` or ``slow`` runs containers
#: or a pipeline (tens of seconds); any other test is pure Python.
GUESS_SLOW_S = 20.0
GUESS_FAST_S = 0.05


def module_of(item: pytest.Item) -> str:
    return item.nodeid.split("::", 1)[0]


def guess(items: list[pytest.Item]) -> float:
    slow = sum(1 for i in items if i.get_closest_marker("slow") or i.get_closest_marker("docker"))
    return slow * GUESS_SLOW_S + (len(items) - slow) * GUESS_FAST_S


def costs(items: list[pytest.Item], cached: dict[str, float]) -> dict[str, float]:
    """Each file's expected seconds: the cache, else :data:`MEASURED_S`, else the guess."""
    by_module: dict[str, list[pytest.Item]] = defaultdict(list)
    for item in items:
        by_module[module_of(item)].append(item)
    return {
        module: cached.get(module, MEASURED_S.get(module, guess(module_items)))
        for module, module_items in by_module.items()
    }


def longest_first(items: list[pytest.Item], cost: dict[str, float]) -> list[pytest.Item]:
    """``items`` with their files in decreasing cost (ties: collection order); the tests of a
    file keep their order."""
    rank = {module: i for i, module in enumerate(dict.fromkeys(map(module_of, items)))}
    return sorted(items, key=lambda item: (-cost[module_of(item)], rank[module_of(item)]))


class FileTimes:
    """Sums each file's test durations as reports arrive (in the controller under xdist)
    and stores them in pytest's cache at the end, for the next run's order."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = defaultdict(float)

    @pytest.hookimpl
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self.seconds[report.nodeid.split("::", 1)[0]] += report.duration

    @pytest.hookimpl
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        cache = getattr(session.config, "cache", None)
        if cache is None or not self.seconds:
            return
        known = dict(cache.get(CACHE_KEY, {}))
        known.update({k: round(v, 2) for k, v in self.seconds.items()})
        cache.set(CACHE_KEY, known)


def cached_seconds(config: pytest.Config) -> dict[str, float]:
    cache = getattr(config, "cache", None)
    return dict(cache.get(CACHE_KEY, {})) if cache is not None else {}
