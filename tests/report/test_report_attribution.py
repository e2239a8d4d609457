"""The report's "Where the noise comes from" section and the cards' policy-sensitivity line
(the verdict; the accuracy under each policy is the multiverse table's column):
real content from a synthetic run with known sources of noise (conftest.attribution_trials),
and a missing or invalid attribution artifact said in the report, never a crash."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import pandas as pd
import pytest

from evalnoise.attribution import attribution_for_trials, read_attribution
from evalnoise.formatting import dumps
from evalnoise.report import ReportInputs, build_report
from evalnoise.report.attribution_section import ATTRIBUTION_NOT_GIVEN
from evalnoise.report.health import NOT_A_MEASUREMENT_LABEL

# as in conftest.py (the example's agents, the failure run's, the synthetic run's needy tasks)
NANO = "openai/gpt-5-nano-2025-08-07"
MINI = "openai/gpt-5.4-mini-2026-03-17"
HEALTHY, CRASHY = "healthy-agent", "crashy-agent"
NEEDY = ("task-002", "task-003", "task-004")


def section(index: str) -> str:
    start = index.index('<section id="attribution">')
    return index[start : index.index("</section>", start)]


def part(text: str, anchor: str) -> str:
    """From heading ``anchor`` to the next h3."""
    start = text.index(f'<h3 id="{anchor}">')
    end = text.find("<h3 ", start + 1)
    return text[start : end if end > 0 else len(text)]


def rows(html_table: str) -> list[list[str]]:
    """The text of every cell, row by row."""
    out = []
    for tr in re.findall(r"<tr[^>]*>(.*?)</tr>", html_table, re.S):
        cells = re.findall(r"<t[dh][^>]*>(.*?)</t[dh]>", tr, re.S)
        out.append([re.sub(r"<[^>]+>", "", c).strip() for c in cells])
    return out


def test_the_section_shows_the_synthetic_run(built_report, synthetic_attribution) -> None:
    out, files = built_report
    index = (out / "index.html").read_text(encoding="utf-8")
    text = section(index)
    assert '<a href="#attribution">Where the noise comes from</a>' in index
    assert "attribution-problems" not in text and "attribution-missing" not in text

    # policy sensitivity: one row per agent × profile, the 1x mini group moved beyond its CI;
    # the accuracy under each policy is not restated (the multiverse table's column is it)
    policy_part = part(text, "policy-sensitivity")
    policy = rows(policy_part)
    assert policy[0][1:] == [
        "declared",
        "largest shift",
        "CI half-width",
        "choice moves the result",
        "accuracy under each policy",
    ]
    by_group = {r[0]: r for r in policy[1:]}
    assert set(by_group) == {f"{a} @ {p}" for a in (NANO, MINI) for p in ("1x", "3x")}
    mini = synthetic_attribution.summary[f"{MINI}@1x"]
    assert by_group[f"{MINI} @ 1x"][2] == f"{100 * mini['policy_max_shift']:.1f} pts"
    assert by_group[f"{MINI} @ 1x"][3] == f"{100 * mini['policy_half_width']:.1f} pts"
    assert by_group[f"{MINI} @ 1x"][4] == "YES" and by_group[f"{NANO} @ 1x"][4] == "no"
    assert not re.search(r"\d%", policy_part)  # no accuracy of any policy
    # the pointer: to the group's multiverse table where the report has one (the 1x cards)
    assert 'href="#multiverse-openai-gpt-5.4-mini-2026-03-17__1x"' in policy_part
    assert by_group[f"{NANO} @ 1x"][5] == "the infra policy column of its multiverse table"
    assert by_group[f"{NANO} @ 3x"][5] == "not shown: the report has no multiverse for this group"

    # resource-sensitive tasks: the chart, and the tasks whose need sits between the limits
    resource = part(text, "resource-sensitivity")
    assert 'data-chart="resource_sensitivity"' in resource
    assert (out / "resource_sensitivity.html") in files and (
        out / "resource_sensitivity.png"
    ) in files
    table = rows(resource)
    assert table[0][-3:] == ["exact McNemar p", "q (BH)", "singled out"]
    singled = {(r[0], r[1]): r[-1] for r in table[1:] if r[-1] != "no"}
    for agent in (NANO, MINI):
        for task in NEEDY:
            assert "need between the limits" in singled[(f"{agent}: 1x vs 3x", task)]
    frame = synthetic_attribution.resource
    for _, r in frame[frame["significant"]].iterrows():
        assert "q ≤ 0.05" in singled[(f"{r['agent']}: 1x vs 3x", r["task_id"])]
    row = next(r for r in table[1:] if r[:2] == [f"{NANO}: 1x vs 3x", NEEDY[0]])
    first = frame[(frame["agent"] == NANO) & (frame["task_id"] == NEEDY[0])].iloc[0]
    assert row[3:5] == [f"{100 * first['accuracy_a']:.1f}%", f"{100 * first['accuracy_b']:.1f}%"]

    # flaky tasks: every group lists its checks; the OOM-killed tasks flagged with evidence
    flaky = part(text, "flaky-tasks")
    assert flaky.count("<code>infra_concentration</code>") == 4
    assert flaky.count("not run: no rescores given") == 4
    assert "infra outcomes concentrate on this task" in flaky
    assert "No task flagged by the checks that ran (infra_concentration, time_block, host)" in flaky

    # the infrastructure share of variance with its CI, one line per group
    share = part(text, "infra-share")
    lines = re.findall(r"infrastructure share of variance [^<]*", share)
    assert len(lines) == 4
    for line in lines:
        assert re.match(r"infrastructure share of variance \d+\.\d% \[\d+\.\d%, \d+\.\d%\]", line)
        assert "4 time blocks, 2 hosts" in line and "drift" in line


def test_the_chart_draws_what_the_table_lists(built_report) -> None:
    out, _ = built_report
    page = (out / "resource_sensitivity.html").read_text(encoding="utf-8")
    for task in NEEDY:
        assert f'"task_id":"{task}"' in page
    assert "Content-Security-Policy" in page


def test_cards_carry_the_policy_sensitivity_line(built_report, synthetic_attribution) -> None:
    out, _ = built_report
    cards = json.loads((out / "cards.json").read_text(encoding="utf-8"))["cards"]
    by_agent = {c["agent"]["name"]: c for c in cards}
    mini = by_agent[MINI]["policy_sensitivity"]
    assert mini["moves_result"] is True and mini["not_computed"] is None
    assert [p["policy"] for p in mini["policies"]] == ["as_incorrect", "exclude", "retry"]
    assert [p["moved"] for p in mini["policies"]] == [False, True, False]
    summary = synthetic_attribution.summary[f"{MINI}@1x"]
    assert mini["policies"][1]["accuracy"] == summary["policy"][1]["mean"]
    md = (out / "cards" / "openai-gpt-5.4-mini-2026-03-17__1x.md").read_text(encoding="utf-8")
    line = next(x for x in md.splitlines() if x.startswith("| Infra policy sensitivity |"))
    assert "the choice moves the result: YES" in line and "multiverse table" in line
    # the verdict only: the accuracies under the policies are the multiverse's column
    assert "exclude" not in line and not re.search(r"\d%", line)
    nano = by_agent[NANO]["policy_sensitivity"]
    assert nano["moves_result"] is False
    index = (out / "index.html").read_text(encoding="utf-8")
    assert index.count("<th>Infra policy sensitivity</th>") == 2


def test_without_attribution_the_section_says_not_computed(example_inputs, tmp_path) -> None:
    only = {k: example_inputs[k] for k in ("groups", "card_context")}
    build_report(tmp_path, ReportInputs.of(**only))
    index = (tmp_path / "index.html").read_text(encoding="utf-8")
    assert html.escape(ATTRIBUTION_NOT_GIVEN) in section(index)
    assert not (tmp_path / "resource_sensitivity.html").exists()
    cards = json.loads((tmp_path / "cards.json").read_text(encoding="utf-8"))["cards"]
    assert all(c["policy_sensitivity"] is None for c in cards)
    assert "Infra policy sensitivity" not in index


def _stage_files(tables, root: Path) -> tuple[Path, Path, Path]:
    """The attribution stage's three files, as scripts/attribution.py writes them."""
    root.mkdir(parents=True, exist_ok=True)
    summary, resource, flaky = (
        root / "attribution.json",
        root / "resource_sensitivity.parquet",
        root / "flaky_tasks.csv",
    )
    summary.write_text(dumps(tables.summary) + "\n", encoding="utf-8")
    tables.resource.to_parquet(resource, index=False)
    tables.flaky.to_csv(flaky, index=False, float_format="%.6g")
    return summary, resource, flaky


def test_a_missing_or_invalid_artifact_is_reported(
    example_inputs, synthetic_attribution, tmp_path
) -> None:
    only = {k: example_inputs[k] for k in ("groups", "card_context")}
    summary, resource, flaky = _stage_files(synthetic_attribution, tmp_path / "analysis")
    # read back intact: the same section as from the tables themselves
    build_report(
        tmp_path / "ok",
        ReportInputs.of(attribution=read_attribution(summary, resource, flaky), **only),
    )
    intact = section((tmp_path / "ok" / "index.html").read_text(encoding="utf-8"))
    assert "attribution-problems" not in intact and "infra outcomes concentrate" in intact

    flaky.unlink()
    resource.write_bytes(b"PAR1 truncated")
    build_report(
        tmp_path / "broken",
        ReportInputs.of(attribution=read_attribution(summary, resource, flaky), **only),
    )
    text = section((tmp_path / "broken" / "index.html").read_text(encoding="utf-8"))
    assert 'id="attribution-problems"' in text
    assert f"{flaky}: missing" in text and f"{resource}: invalid" in text
    # what the summary holds is still shown; the parts of the lost files say they are lost
    assert '<td class="moved"><strong>YES</strong></td>' in part(text, "policy-sensitivity")
    assert "The per-task table (resource_sensitivity.parquet) is not available" in text
    assert "the flagged-task table (flaky_tasks.csv) is not available" in text
    assert not (tmp_path / "broken" / "resource_sensitivity.html").exists()

    summary.write_text("{not json", encoding="utf-8")
    build_report(
        tmp_path / "gone",
        ReportInputs.of(attribution=read_attribution(summary, resource, flaky), **only),
    )
    index = (tmp_path / "gone" / "index.html").read_text(encoding="utf-8")
    assert f"{summary}: invalid" in section(index)
    cards = json.loads((tmp_path / "gone" / "cards.json").read_text(encoding="utf-8"))["cards"]
    for card in cards:
        why = card["policy_sensitivity"]["not_computed"]
        assert why.startswith("no attribution record for this group") and "invalid" in why


def test_records_that_do_not_hold_what_the_stage_writes(
    example_inputs, synthetic_attribution, tmp_path
) -> None:
    only = {k: example_inputs[k] for k in ("groups", "card_context")}
    nano = dict(synthetic_attribution.summary[f"{NANO}@1x"], flaky_checks=["not a record"])
    garbage = {
        "summary": {
            f"{NANO}@1x": nano,
            f"{MINI}@1x": "text",
            f"{MINI}@3x": {"policy": "not a list"},
            "_resource": [{"agent": NANO}],
        },
        "resource": pd.DataFrame({"agent": [NANO]}),
        "flaky": None,
    }
    build_report(tmp_path, ReportInputs.of(attribution=garbage, **only))
    text = section((tmp_path / "index.html").read_text(encoding="utf-8"))
    assert f"Unreadable attribution record(s), not shown: {MINI}@1x, {MINI}@3x" in text
    assert "resource table: invalid (lacks column(s) profile_a" in text
    assert "The flaky tasks could not be shown: the attribution results are invalid" in text
    policy = part(text, "policy-sensitivity")
    assert "<strong>YES</strong>" not in policy and f"{NANO} @ 1x" in policy
    assert "1 unreadable resource comparison record(s)" in text
    cards = json.loads((tmp_path / "cards.json").read_text(encoding="utf-8"))["cards"]
    by_agent = {c["agent"]["name"]: c["policy_sensitivity"] for c in cards}
    assert by_agent[NANO]["moves_result"] is False
    assert by_agent[MINI]["not_computed"].startswith("invalid attribution record")


def test_invalid_groups_are_struck_in_the_section(failure_inputs, tmp_path) -> None:
    """A group that is not a measurement of the agent: its policy numbers and variance share
    are struck through and labelled, as everywhere else in the report."""
    groups = [f"{CRASHY}@3x", f"{HEALTHY}@3x"]
    trials = []
    for group in groups:
        agent, profile = group.split("@")
        for t in range(6):
            for k in range(4):
                crashed = agent == CRASHY
                trials.append(
                    {
                        "agent": agent,
                        "resource_profile": profile,
                        "task_id": f"q{t:02d}",
                        "trial": k,
                        "status": "agent_error" if crashed else ("timeout" if k == 0 else "ok"),
                        "score": 0.0 if crashed else (None if k == 0 else float((t + k) % 2)),
                    }
                )
    tables = attribution_for_trials(pd.DataFrame(trials))
    build_report(tmp_path, ReportInputs.of(attribution=tables, **failure_inputs))
    text = section((tmp_path / "index.html").read_text(encoding="utf-8"))
    policy = part(text, "policy-sensitivity")
    crashy = next(tr for tr in re.findall(r"<tr.*?</tr>", policy, re.S) if CRASHY in tr)
    assert crashy.count('<s class="nm">') >= 3 and NOT_A_MEASUREMENT_LABEL in crashy
    healthy = next(tr for tr in re.findall(r"<tr.*?</tr>", policy, re.S) if HEALTHY in tr)
    assert "<s " not in healthy
    assert f"{CRASHY} @ 3x — {NOT_A_MEASUREMENT_LABEL}" in part(text, "flaky-tasks")
    # no timestamps in these trials: the share says why it is missing
    share = part(text, "infra-share")
    assert "infrastructure share of variance: not computed (no timestamps" in share


@pytest.mark.parametrize("bad", ["text", 3])
def test_attribution_of_the_wrong_type_is_refused(example_inputs, tmp_path, bad) -> None:
    only = {k: example_inputs[k] for k in ("groups", "card_context")}
    with pytest.raises(TypeError, match="attribution"):
        build_report(tmp_path, ReportInputs.of(attribution=bad, **only))
