"""Evaluation Cards checked against independent computations on the same raw trials.

Every card here is built from raw trials through the pipeline's public path (``read_trials``
→ ``analyze_frame`` → ``per_task_table`` → ``evaluation_card`` → ``card_markdown``, as
``build_report`` does, or by ``build_report`` itself), and its numbers are read back from the
card — its dict, its Markdown table, its reporting line and its limitations — and compared
with values that no evalnoise function computed:

- accuracy: numpy's mean of the task means;
- its task-clustered SE and CI: statsmodels, OLS of score on a constant with
  ``cov_type="cluster"`` (groups = task). evalnoise's default ``cluster_se="cr1"`` is the CR1
  sandwich, factor G/(G − 1)·(N − 1)/(N − K) with K = 1 (``stats/accuracy.py``), which is
  statsmodels' ``use_correction=True``; the card's interval uses the normal quantile, which is
  statsmodels' ``use_t=False``;
- ICC(1,1), ICC(1,k) and the F-based ICC CI: pingouin's ``intraclass_corr`` (task × trial);
- variance components, the plug-in ICC and the between-query SE: a one-way ANOVA in numpy;
- SE(ICC): Bonett's (2002) formula, evaluated at pingouin's ICC.

Numbers read from the card's text are compared within half a unit of the last digit shown
(a percentage with one decimal: 0.05 points), never looser.

Data: a real tau-bench excerpt (``data/tau_bench_gpt4o_airline.csv``, see
``data/README.md``), the bundled real GPQA Diamond example, and two seeded synthetic balanced
tables (partial credit; no task effect, so σ²_between < 0).
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pingouin as pg
import pytest
import statsmodels.api as sm

from evalnoise.analysis import analyze_frame, per_task_table
from evalnoise.report.cards import CardContext, evaluation_card
from evalnoise.report.cards_markdown import card_markdown
from evalnoise.trial_table import Columns, read_trials

# pingouin 0.7 calls DataFrame.dropna(inplace=True), which pandas now deprecates
pytestmark = pytest.mark.filterwarnings("ignore:The inplace keyword in DataFrame.dropna")

DATA = Path(__file__).parent / "data"
TAU_BENCH = DATA / "tau_bench_gpt4o_airline.csv"
CONFIDENCE = 0.95

CTX = CardContext(
    benchmark="independent check",
    infra_policy="as incorrect",
    backend="docker",
    resource_profile="1x",
    run_seed=1,
    seed_rule="sha256 of (run seed, agent, task, trial)",
)

# Rounding of the card's text: half a unit of the last digit shown (plus float noise).
EPS = 1e-12
PCT_1DP = 0.0005 + EPS  # a proportion printed as a percentage with one decimal
DP3 = 0.0005 + EPS  # .3f
DP2 = 0.005 + EPS  # .2f
NUM = r"(-?\d+(?:\.\d+)?(?:e[-+]?\d+)?)"
PCT = r"(-?\d+\.\d)%"


def g4_tolerance(value: float) -> float:
    """Half a unit in the 4th significant digit: the rounding of the card's ``.4g``."""
    if value == 0:
        return EPS
    return 0.5 * 10 ** (math.floor(math.log10(abs(value))) - 3) + EPS


# --- the independent reference ------------------------------------------------------------


def balanced_matrix(trials: pd.DataFrame) -> np.ndarray:
    """tasks × trials matrix of one group's scores; the design must be balanced."""
    counts = trials.groupby("task").size()
    assert counts.nunique() == 1, "the references below need a balanced design"
    ordered = trials.sort_values(["task", "trial"], kind="stable")
    return ordered["score"].to_numpy(float).reshape(len(counts), int(counts.iloc[0]))


def pingouin_icc(long: pd.DataFrame) -> pd.DataFrame:
    """pingouin's ICC table indexed by type, with its default 2-decimal CI rounding off."""
    saved = dict(pg.options)
    try:
        pg.options["round.column.CI95"] = None
        pg.options["round.column.CI95%"] = None
        table = pg.intraclass_corr(long, targets="task", raters="trial", ratings="score")
    finally:
        pg.options.clear()
        pg.options.update(saved)
    aliases = {"ICC(1,1)": "ICC1", "ICC(1,k)": "ICC1k"}  # pingouin ≥ 0.6 vs older names
    table = table.assign(Type=table["Type"].replace(aliases)).set_index("Type")
    return table.rename(columns={"CI95%": "CI95"})


def koo_li(icc: float) -> str:
    """Koo & Li (2016) reliability bands."""
    if icc < 0.5:
        return "poor"
    if icc < 0.75:
        return "moderate"
    if icc <= 0.9:
        return "good"
    return "excellent"


def reference(trials: pd.DataFrame) -> dict:
    """Every number of a card, computed from one group's raw trials without evalnoise."""
    y = balanced_matrix(trials)
    g, k = y.shape
    task_means = y.mean(axis=1)
    flat = y.ravel()
    task = np.repeat(np.arange(g), k)

    # accuracy and its task-clustered SE/CI: statsmodels CR1, normal quantile
    fit = sm.OLS(flat, np.ones_like(flat)).fit(
        cov_type="cluster",
        cov_kwds={"groups": task, "use_correction": True, "df_correction": True},
        use_t=False,
    )
    ci_low, ci_high = fit.conf_int(alpha=1 - CONFIDENCE)[0]
    # evalnoise truncates the interval to [0, 1], the range of a mean score (documented)
    ci_low, ci_high = max(ci_low, 0.0), min(ci_high, 1.0)

    # ICC(1,1), ICC(1,k) and the F-based CI: pingouin
    long = pd.DataFrame({"task": task, "trial": np.tile(np.arange(k), g), "score": flat})
    table = pingouin_icc(long)
    icc = float(table.at["ICC1", "ICC"])
    icc_ci = [float(v) for v in table.at["ICC1", "CI95"]]

    # one-way ANOVA by hand
    msb = k * np.sum((task_means - flat.mean()) ** 2) / (g - 1)
    msw = np.sum((y - task_means[:, None]) ** 2) / (g * (k - 1))
    var_task_means = np.var(task_means, ddof=1)

    # Bonett (2002): SE of the one-way ICC with k trials per task and n = g tasks
    bonett = math.sqrt(2 * (1 - icc) ** 2 * (1 + (k - 1) * icc) ** 2 / (k * (k - 1) * (g - 1)))
    return {
        "n_tasks": g,
        "trials_per_task": k,
        "n_obs": g * k,
        "accuracy": float(np.mean(task_means)),
        "statsmodels_mean": float(fit.params[0]),
        "se_clustered": float(fit.bse[0]),
        "ci_low": float(ci_low),
        "ci_high": float(ci_high),
        "icc": icc,
        "icc_ci_low": icc_ci[0],
        "icc_ci_high": icc_ci[1],
        "icc_k": float(table.at["ICC1k", "ICC"]),
        "icc_se": bonett,
        "interpretation": koo_li(icc),
        "sigma2_between": float((msb - msw) / k),
        "sigma2_within": float(msw),
        "icc_plugin": float(var_task_means / (var_task_means + msw)),
        "between_query_se": float(math.sqrt(var_task_means / g)),
    }


# --- the data and the cards ---------------------------------------------------------------


def _synthetic_partial_credit(path: Path) -> Path:
    """12 tasks × 6 trials of partial credit (quarters), a task effect plus trial noise."""
    rng = np.random.default_rng(20260316)
    p = rng.uniform(0.15, 0.85, size=12)
    rows = [
        {"task_id": f"t{t:02d}", "trial": j, "score": float(np.clip(np.round(4 * s) / 4, 0, 1))}
        for t in range(12)
        for j, s in enumerate(p[t] + rng.normal(0.0, 0.2, size=6))
    ]
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


def _synthetic_no_task_effect(path: Path) -> Path:
    """40 tasks × 3 coin-flip trials: tasks differ less than trial noise (σ²_between < 0)."""
    rng = np.random.default_rng(0)
    scores = (rng.random((40, 3)) < 0.5).astype(int)
    rows = [
        {"task_id": f"t{t:02d}", "trial": j, "score": int(scores[t, j])}
        for t in range(40)
        for j in range(3)
    ]
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


def build_cards(frame: pd.DataFrame) -> list[tuple[dict, dict, str]]:
    """(independent reference, card, Markdown) per group; the card built as ``build_report``
    builds it, the reference from the same group's raw trials."""
    per_task = per_task_table(frame)
    out = []
    for rec in analyze_frame(frame, confidence=CONFIDENCE):
        group = str(rec["group"])
        counts = per_task.loc[per_task["group"].astype(str) == group, "n"].astype(int).tolist()
        card = evaluation_card(rec, CTX, trials_per_task=counts)
        trials = frame[frame["group"].astype(str) == group]
        out.append((reference(trials), card, card_markdown(card)))
    return out


DATASETS = ("tau-bench", "gpqa-example", "synthetic-partial-credit", "synthetic-no-task-effect")


@pytest.fixture(scope="module")
def cards(tmp_path_factory: pytest.TempPathFactory, example_frame: pd.DataFrame) -> dict:
    tmp = tmp_path_factory.mktemp("independent")
    frames = {
        "tau-bench": read_trials(TAU_BENCH, Columns(task="task_id", trial="trial", score="reward")),
        "gpqa-example": example_frame,
        "synthetic-partial-credit": read_trials(_synthetic_partial_credit(tmp / "pc.csv")),
        "synthetic-no-task-effect": read_trials(_synthetic_no_task_effect(tmp / "nt.csv")),
    }
    return {name: build_cards(frame) for name, frame in frames.items()}


def _cases(cards: dict, name: str) -> list[tuple[dict, dict, str]]:
    assert cards[name], f"no card for {name}"
    return cards[name]


# --- the card's dict ----------------------------------------------------------------------


@pytest.mark.parametrize("name", DATASETS)
def test_card_metrics_match_independent_libraries(cards, name) -> None:
    for ref, card, _ in _cases(cards, name):
        m, t = card["metrics"], card["trials"]
        assert (t["n_tasks"], t["n_trials_total"]) == (ref["n_tasks"], ref["n_obs"])
        assert t["per_task_min"] == t["per_task_max"] == ref["trials_per_task"]
        assert ref["statsmodels_mean"] == pytest.approx(ref["accuracy"], rel=1e-12)
        expected = {
            "accuracy": ref["accuracy"],
            "accuracy_se_clustered": ref["se_clustered"],
            "accuracy_ci_low": ref["ci_low"],
            "accuracy_ci_high": ref["ci_high"],
            "icc": ref["icc"],
            "icc_ci_low": ref["icc_ci_low"],
            "icc_ci_high": ref["icc_ci_high"],
            "icc_k": ref["icc_k"],
            "icc_se": ref["icc_se"],
            "sigma2_between": ref["sigma2_between"],
            "sigma2_within": ref["sigma2_within"],
            "icc_plugin": ref["icc_plugin"],
            "between_query_se": ref["between_query_se"],
        }
        got = {key: m[key] for key in expected}
        assert got == pytest.approx(expected, rel=1e-9, abs=1e-12), name
        assert m["icc_interpretation"] == ref["interpretation"]


# --- the card's Markdown ------------------------------------------------------------------


def _row(md: str, field: str) -> str:
    found = re.findall(rf"^\| {re.escape(field)} \| (.*) \|$", md, flags=re.M)
    assert len(found) == 1, (field, md)
    return found[0]


def _floats(pattern: str, text: str) -> list[float]:
    match = re.fullmatch(pattern, text)
    assert match, (pattern, text)
    return [float(x) for x in match.groups()]


@pytest.mark.parametrize("name", DATASETS)
def test_markdown_numbers_match_independent_libraries(cards, name) -> None:
    for ref, _, md in _cases(cards, name):
        k, g = ref["trials_per_task"], ref["n_tasks"]
        assert _row(md, "Trials & seeds").startswith(
            f"{k} trials per task × {g} tasks = {g * k} trials;"
        )

        acc, lo, hi, se = _floats(
            rf"{PCT} \(95% CI \[{PCT}, {PCT}\], task-clustered SE {NUM}\)",
            _row(md, "Accuracy"),
        )
        assert acc / 100 == pytest.approx(ref["accuracy"], abs=PCT_1DP)
        assert lo / 100 == pytest.approx(ref["ci_low"], abs=PCT_1DP)
        assert hi / 100 == pytest.approx(ref["ci_high"], abs=PCT_1DP)
        assert se == pytest.approx(ref["se_clustered"], abs=DP3)

        icc_row = _row(md, "ICC")
        icc, icc_lo, icc_hi, icc_se = _floats(
            rf"{NUM} \(ICC\(1,1\), one-way random effects; 95% CI \[{NUM}, {NUM}\], "
            rf"SE {NUM}; \w+\)",
            icc_row,
        )
        assert icc == pytest.approx(ref["icc"], abs=DP3)
        assert icc_lo == pytest.approx(ref["icc_ci_low"], abs=DP3)
        assert icc_hi == pytest.approx(ref["icc_ci_high"], abs=DP3)
        assert icc_se == pytest.approx(ref["icc_se"], abs=DP3)
        assert icc_row.endswith(f"; {ref['interpretation']})")

        s2b, s2w, plugin = _floats(
            rf"σ²_between {NUM}, σ²_within {NUM}; plug-in ICC \(paper eq\. 6–7\) {NUM}",
            _row(md, "Variance components"),
        )
        assert s2b == pytest.approx(ref["sigma2_between"], abs=g4_tolerance(s2b))
        assert s2w == pytest.approx(ref["sigma2_within"], abs=g4_tolerance(s2w))
        assert plugin == pytest.approx(ref["icc_plugin"], abs=DP3)

        (bq,) = _floats(NUM, _row(md, "Between-query SE"))
        assert bq == pytest.approx(ref["between_query_se"], abs=DP3)


REPORTING_LINE = (
    rf"{PCT} ± {PCT} \(95% CI \[{PCT}, {PCT}\]\) \| ICC {NUM} \[{NUM}, {NUM}\] (\w+) "
    rf"\| between-query SE {NUM}"
)


def check_reporting_line(line: str, ref: dict) -> None:
    match = re.fullmatch(REPORTING_LINE, line)
    assert match, line
    acc, half, lo, hi, icc, icc_lo, icc_hi = map(float, match.groups()[:7])
    interpretation, bq = match.group(8), float(match.group(9))
    assert acc / 100 == pytest.approx(ref["accuracy"], abs=PCT_1DP)
    assert half / 100 == pytest.approx((ref["ci_high"] - ref["ci_low"]) / 2, abs=PCT_1DP)
    assert lo / 100 == pytest.approx(ref["ci_low"], abs=PCT_1DP)
    assert hi / 100 == pytest.approx(ref["ci_high"], abs=PCT_1DP)
    assert icc == pytest.approx(ref["icc"], abs=DP3)
    assert icc_lo == pytest.approx(ref["icc_ci_low"], abs=DP2)  # printed with 2 decimals
    assert icc_hi == pytest.approx(ref["icc_ci_high"], abs=DP2)
    assert interpretation == ref["interpretation"]
    assert bq == pytest.approx(ref["between_query_se"], abs=DP3)


@pytest.mark.parametrize("name", DATASETS)
def test_reporting_line_matches_independent_libraries(cards, name) -> None:
    for ref, card, md in _cases(cards, name):
        check_reporting_line(card["reporting_line"], ref)
        block = re.search(r"^```\n(.*)\n```$", md, flags=re.M)
        assert block and block.group(1) == card["reporting_line"]


# --- the limitations the numbers trigger ----------------------------------------------------


def check_limitations(found: list[str], ref: dict) -> None:
    """Each computed limitation is present exactly when the independent numbers call for
    it, and the numbers it quotes match them."""
    text = "\n".join(found)
    half = (ref["icc_ci_high"] - ref["icc_ci_low"]) / 2
    imprecise = [x for x in found if x.startswith("ICC CI wider than ± 0.06")]
    assert bool(imprecise) == (ref["icc_se"] > 0.03 or half > 0.06), text
    if imprecise:
        se, quoted_half = _floats(
            rf"ICC CI wider than ± 0\.06 \(SE {NUM}, CI ± {NUM}; guideline SE ≤ 0\.03\): "
            r"more tasks or trials needed for a precise ICC",
            imprecise[0],
        )
        assert se == pytest.approx(ref["icc_se"], abs=DP3)
        assert quoted_half == pytest.approx(half, abs=DP3)

    few = f"fewer than 8 trials per task ({ref['trials_per_task']})"
    assert (few in text) == (ref["trials_per_task"] < 8), text

    poor = re.search(rf"ICC poor \({NUM} < 0\.5\)", text)
    assert bool(poor) == (ref["icc"] < 0.5), text
    if poor:
        assert float(poor.group(1)) == pytest.approx(ref["icc"], abs=DP3)

    negative = re.search(rf"negative σ²_between estimate \({NUM}\)", text)
    assert bool(negative) == (ref["sigma2_between"] < 0), text
    if negative:
        s2b = float(negative.group(1))
        assert s2b == pytest.approx(ref["sigma2_between"], abs=g4_tolerance(s2b))

    small = f"small sample: {ref['n_tasks']} tasks (< 30)"
    assert (small in text) == (ref["n_tasks"] < 30), text


@pytest.mark.parametrize("name", DATASETS)
def test_limitations_follow_the_independent_numbers(cards, name) -> None:
    for ref, card, md in _cases(cards, name):
        check_limitations(card["limitations"], ref)
        listed = md.split("## Limitations\n\n", 1)[1].splitlines()
        assert listed == [f"- {x}" for x in card["limitations"]]


def test_the_data_cover_each_limitation(cards) -> None:
    """The datasets above exercise both sides of every numeric limitation."""
    refs = [ref for name in DATASETS for ref, _, _ in _cases(cards, name)]
    assert any(r["sigma2_between"] < 0 for r in refs)
    assert any(r["sigma2_between"] > 0 for r in refs)
    assert any(r["icc"] < 0.5 for r in refs) and any(r["icc"] >= 0.5 for r in refs)
    assert any(r["n_tasks"] < 30 for r in refs) and any(r["n_tasks"] >= 30 for r in refs)
    assert any(r["trials_per_task"] < 8 for r in refs)


# --- the cards build_report wrote ---------------------------------------------------------


def test_written_cards_match_independent_libraries(built_report, example_frame) -> None:
    """The example report's card files (JSON and Markdown), against the raw example trials."""
    out, _ = built_report
    written = sorted((out / "cards").glob("*.json"))
    assert len(written) == example_frame["group"].nunique() == 2
    for path in written:
        card = json.loads(path.read_text(encoding="utf-8"))
        md = path.with_suffix(".md").read_text(encoding="utf-8")
        ref = reference(example_frame[example_frame["group"] == card["agent"]["name"]])
        got = {
            "accuracy": card["metrics"]["accuracy"],
            "se_clustered": card["metrics"]["accuracy_se_clustered"],
            "icc": card["metrics"]["icc"],
            "icc_ci_low": card["metrics"]["icc_ci_low"],
            "icc_ci_high": card["metrics"]["icc_ci_high"],
        }
        assert got == pytest.approx({k: ref[k] for k in got}, rel=1e-9, abs=1e-12)
        block = re.search(r"^```\n(.*)\n```$", md, flags=re.M)
        assert block, md
        check_reporting_line(block.group(1), ref)
        check_limitations(card["limitations"], ref)
