"""The LLM judge against a real llama-cpp-python server (SmolLM2-135M).

SmolLM2-135M is a poor judge; these tests check parsing of its real replies, the cache,
and the error semantics — not its accuracy. The first tests use the plain-text path
(``structured="text"``): ``SHORT_TEMPLATE`` is a prompt the tiny model often (not always)
answers in the ``Decision: ...`` format, so both outcomes occur. The structured path
(constrained decoding, the default) is tested at the end: every reply parses.
"""

from __future__ import annotations

import pandas as pd
import pytest

from evalnoise.models import ChatClient, LlamaServer
from evalnoise.schema import SCORES
from evalnoise.scorers import JudgeCache, LLMJudge, agreement, parse_decision, score_trials
from evalnoise.scorers.judge import JUDGE_ERROR, OK, SKIPPED_INFRA

SHORT_TEMPLATE = (
    "Ground Truth Answer: {target}\nPredicted Answer: {predicted_answer}\n"
    'If they are the same, reply exactly "Decision: TRUE". If they differ, '
    'reply exactly "Decision: FALSE".'
)

ITEMS = [
    ("What is 347 + 589?", "936", "936"),
    ("What is 347 + 589?", "1627", "936"),
    ("Who wrote Hamlet?", "William Shakespeare", "Shakespeare"),
    ("What is 12 * 3?", "35", "36"),
    ("Capital of France?", "Paris", "Paris"),
    ("Capital of Italy?", "Milan", "Rome"),
]


def _client(server: LlamaServer, **kwargs) -> ChatClient:
    return ChatClient(server.base_url, server.model, timeout=60, **kwargs)


def _judge(server, cache=None, **kwargs) -> LLMJudge:
    kwargs.setdefault("template", SHORT_TEMPLATE)
    kwargs.setdefault("max_tokens", 40)
    kwargs.setdefault("structured", "text")
    return LLMJudge(_client(server), cache=cache, **kwargs)


def _consistent(result) -> None:
    """The result says exactly what parsing its real reply says — never a silent FALSE."""
    assert len(result.replies) == 1
    verdict, _, _ = parse_decision(result.replies[0])
    if verdict is None:
        assert result.status == JUDGE_ERROR and result.correct is None
        assert "unparseable judge reply" in result.explanation
    else:
        assert result.status == OK and result.correct is verdict


def test_judge_parses_real_replies(llama_server):
    judge = _judge(llama_server)
    results = [judge.judge(q, p, t) for q, p, t in ITEMS]
    for result in results:
        assert result.replies[0].strip()  # a real reply came back
        _consistent(result)
    assert any(r.status == OK for r in results)
    assert judge.calls == len(ITEMS)


def test_paper_template_replies_are_parsed_or_errors(llama_server):
    judge = _judge(
        llama_server, template=LLMJudge.__init__.__kwdefaults__["template"], max_tokens=64
    )
    for q, p, t in ITEMS[:2]:
        _consistent(judge.judge(q, p, t))


def test_cache_hit_on_rerun(llama_server, tmp_path):
    cache_path = tmp_path / "judge.sqlite"
    before = llama_server.request_count()
    first = _judge(llama_server, cache=cache_path)
    run1 = [first.judge(q, p, t) for q, p, t in ITEMS]
    assert llama_server.request_count() - before == len(ITEMS) == first.client.requests_sent
    n_ok = sum(r.status == OK for r in run1)
    assert len(JudgeCache(cache_path)) == n_ok  # errors are not cached
    first.close()

    before = llama_server.request_count()
    second = _judge(llama_server, cache=cache_path)
    run2 = [second.judge(q, p, t) for q, p, t in ITEMS]
    # only the previous errors were asked again; every success came from the cache
    assert second.calls == len(ITEMS) - n_ok
    assert llama_server.request_count() - before == second.client.requests_sent == second.calls
    for a, b in zip(run1, run2, strict=True):
        if a.status == OK:
            assert b.cached == 1 and (b.correct, b.status) == (a.correct, a.status)
    # a different template is a different cache entry
    third = _judge(llama_server, cache=cache_path, template=SHORT_TEMPLATE + "\n")
    third.judge(*ITEMS[0])
    assert third.calls == 1


def _trials(items, statuses=None) -> tuple[pd.DataFrame, pd.DataFrame]:
    tasks = pd.DataFrame(
        {
            "task_id": [f"t{i}" for i in range(len(items))],
            "question": [q for q, _, _ in items],
            "answer": [t for _, _, t in items],
        }
    )
    trials = pd.DataFrame(
        {
            "agent": "a",
            "resource_profile": "1x",
            "task_id": tasks["task_id"],
            "trial": 0,
            "attempt": 1,
            "status": statuses or ["ok"] * len(items),
            "prediction": [p for _, p, _ in items],
        }
    )
    return trials, tasks


def test_killed_server_gives_judge_errors_and_rerun_fills_them(tmp_path):
    pytest.importorskip("llama_cpp")
    cache_path = tmp_path / "judge.sqlite"
    trials, tasks = _trials(ITEMS)
    with LlamaServer(log_path=str(tmp_path / "a.log")) as server:
        judge = LLMJudge(
            _client(server, max_retries=1, backoff_s=0.05),
            template=SHORT_TEMPLATE,
            max_tokens=40,
            cache=cache_path,
            structured="text",
        )

        def kill_after_two(done, total):
            if done == 2:
                server.kill()

        first = score_trials(
            trials, tasks, "judge", judge=judge, progress=kill_after_two
        ).to_pandas()
        assert not server.alive()
    assert first["judge_status"].iloc[2:].eq(JUDGE_ERROR).all()
    assert first["correct"].iloc[2:].isna().all()  # never a silent FALSE
    # the first call after the kill finds it refused on every attempt; the server is then
    # known dead and the rest fail at once, without a request (issue 21.4)
    assert "cannot reach" in first["judge_explanation"].iloc[2]
    assert first["judge_explanation"].iloc[3:].str.contains("known dead").all()
    errors_before = int(first["judge_status"].eq(JUDGE_ERROR).sum())

    with LlamaServer(log_path=str(tmp_path / "b.log")) as server:  # a new port
        judge = LLMJudge(_client(server), template=SHORT_TEMPLATE, max_tokens=40, cache=cache_path)
        second = score_trials(trials, tasks, "judge", judge=judge).to_pandas()
        assert judge.calls == errors_before == server.request_count()
    assert not second["judge_explanation"].str.contains("cannot reach|known dead").any()
    kept = first["judge_status"].eq(OK)
    pd.testing.assert_series_equal(second.loc[kept, "correct"], first.loc[kept, "correct"])
    assert second["judge_status"].eq(OK).sum() > first["judge_status"].eq(OK).sum()


def test_infra_outcomes_and_empty_answers_are_never_sent(llama_server):
    items = [ITEMS[0]] * 6
    trials, tasks = _trials(
        items, ["timeout", "oom_killed", "infra_error", "agent_error", "ok", "ok"]
    )
    trials.loc[4, "prediction"] = None
    trials.loc[5, "prediction"] = "   "
    before = llama_server.request_count()
    judge = _judge(llama_server)
    table = score_trials(trials, tasks, "judge", judge=judge)
    assert table.schema == SCORES
    out = table.to_pandas()
    assert llama_server.request_count() == before and judge.calls == 0
    assert out["judge_status"].tolist()[:3] == [SKIPPED_INFRA] * 3
    assert out["correct"].iloc[:3].isna().all() and out["score"].iloc[:3].isna().all()
    assert out["correct"].iloc[3:].tolist() == [False, False, False]
    assert out["judge_status"].iloc[4:].tolist() == ["no_prediction"] * 2


def test_repeated_judging_reports_agreement_and_reuses_samples(llama_server, tmp_path):
    cache_path = tmp_path / "judge.sqlite"
    judge = _judge(llama_server, cache=cache_path, samples=3, sample_temperature=0.7)
    results = [judge.judge(q, p, t) for q, p, t in ITEMS]
    assert judge.calls == 3 * len(ITEMS)
    for r in results:
        assert len(r.votes) == 3
        if r.status == OK:
            n_true = sum(r.votes)
            assert r.correct is (n_true >= 2)
        else:
            assert r.correct is None
    # distinct seeds at temperature > 0: the samples really differ somewhere
    assert any(len(set(r.replies)) > 1 for r in results)
    summary = agreement(results)
    cached_ok = sum(v is not None for r in results for v in r.votes)
    assert summary.samples == 3
    assert summary.parse_rate == pytest.approx(cached_ok / (3 * len(ITEMS)))
    assert summary.n_items == 0 or 0 <= summary.pairwise <= 1
    assert len(JudgeCache(cache_path)) == cached_ok
    print(
        f"\njudge self-agreement (k=3, T=0.7): parse rate {summary.parse_rate:.2f}; over "
        f"{summary.n_items} items with >= 2 parsed samples: pairwise {summary.pairwise:.2f}, "
        f"modal {summary.modal:.2f}, unanimous {summary.unanimous:.2f}; judge_error "
        f"{sum(r.status == JUDGE_ERROR for r in results)}/{len(results)}"
    )

    # raising k to 5 pays only for the samples not cached yet
    more = _judge(llama_server, cache=cache_path, samples=5, sample_temperature=0.7)
    [more.judge(q, p, t) for q, p, t in ITEMS]
    assert more.calls == 5 * len(ITEMS) - cached_ok


def test_judge_configuration_errors(llama_server):
    with pytest.raises(ValueError, match="target"):
        _judge(llama_server, template="no variables here")
    with pytest.raises(ValueError, match="temperature"):
        _judge(llama_server, samples=3, sample_temperature=0.0)


# -- structured verdicts (constrained decoding): the default --------------------------------


def _generated_items(n_per_level: int = 4):
    """Generated arithmetic tasks with right and wrong answers in three phrasings."""
    import random

    from evalnoise.tasks.generated import generate_tasks

    rng = random.Random(0)
    items = []
    for _, task in generate_tasks(n_per_level, seed=0).iterrows():
        right = rng.random() < 0.5
        answer = task["answer"] if right else str(int(float(task["answer"])) + rng.randint(1, 9))
        phrase = rng.choice(["The answer is {}.", "{}", "Let me compute... so it is {}"])
        items.append((task["question"], phrase.format(answer), task["answer"], right))
    return items


#: Items per level by mode. A verdict call cost ~4.5 CPU s here, five times an extraction
#: (measured with prompts evaluated one token at a time: the paper's template leaves ~85
#: prompt tokens after the cached prefix, then a 20-40 token explanation; replies end well
#: under ``max_tokens``). Verdict mode claims only that every constrained reply parses: 6
#: items still cover the three levels, right and wrong answers and the three phrasings.
#: Extract mode keeps 12: its accuracy bound (>= 80 %) needs the sample.
PER_LEVEL = {"verdict": 2, "extract": 4}


@pytest.mark.parametrize("mode", ["verdict", "extract"])
def test_structured_replies_always_parse(llama_server, mode):
    judge = LLMJudge(_client(llama_server), mode=mode, max_tokens=96)
    items = _generated_items(PER_LEVEL[mode])
    assert {right for *_, right in items} == {True, False}
    results = [judge.judge(q, p, t) for q, p, t, _ in items]
    # llama-cpp-python's server honours the json_object + schema form
    assert judge.form == "json_object_schema"
    assert [r.status for r in results] == [OK] * len(items)
    if mode == "extract":
        # the model only reads the number out; the comparison is exact, in code
        agree = sum(r.correct is right for r, (*_, right) in zip(results, items, strict=True))
        assert agree >= 0.8 * len(items)
        assert not any(
            r.correct and not right for r, (*_, right) in zip(results, items, strict=True)
        )


def test_openai_json_schema_form_is_refused_by_llama_cpp(llama_server):
    """What the auto mode works around: the OpenAI form gives HTTP 500 on this server."""
    from evalnoise.models.client import ChatError
    from evalnoise.scorers.judge import response_format

    client = _client(llama_server, max_retries=0)
    with pytest.raises(ChatError) as info:
        client.complete("Say TRUE.", response_format=response_format("json_schema"))
    assert info.value.status == 500
