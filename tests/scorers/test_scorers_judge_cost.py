"""What the LLM judge cost per trial (judge_calls, judge_cached, judge tokens), against the
real llama-cpp-python server: calls that reached the server are counted, cache hits are free
and counted apart, trials never sent cost a measured 0, other scorers leave the columns null."""

from __future__ import annotations

import pandas as pd

from evalnoise.models import ChatClient
from evalnoise.schema import SCORES
from evalnoise.scorers import LLMJudge, score_trials

COST = ["judge_calls", "judge_cached", "judge_prompt_tokens", "judge_completion_tokens"]
TASKS = pd.DataFrame({"task_id": ["a"], "question": ["What is 2 + 2?"], "answer": ["4"]})
MAX_TOKENS = 32


def _trials() -> pd.DataFrame:
    rows = [
        ("ok", "The answer is 4."),
        ("ok", "It is 5."),
        ("ok", "   "),  # empty: never sent
        ("timeout", None),
        ("agent_error", None),
    ]
    return pd.DataFrame(
        [
            {
                "agent": "chat",
                "resource_profile": "1x",
                "task_id": "a",
                "trial": i,
                "attempt": 1,
                "status": status,
                "prediction": prediction,
            }
            for i, (status, prediction) in enumerate(rows)
        ]
    )


def _judge(server, cache) -> LLMJudge:
    client = ChatClient(server.base_url, server.model, timeout=60)
    # one structured form, fixed: no first-call probing, so requests == judgements
    return LLMJudge(
        client,
        cache=cache,
        mode="extract",
        structured="json_object_schema",
        samples=2,
        sample_temperature=0.7,
        max_tokens=MAX_TOKENS,
    )


def test_judge_cost_columns(llama_server, tmp_path):
    cache = tmp_path / "judge.sqlite"
    before = llama_server.request_count()
    judge = _judge(llama_server, cache)
    table = score_trials(_trials(), TASKS, "judge", judge=judge)
    judge.close()
    assert table.schema.equals(SCORES)
    out = table.to_pandas()[COST]
    sent = out.iloc[:2]
    assert sent["judge_calls"].tolist() == [2, 2] and sent["judge_cached"].tolist() == [0, 0]
    assert (sent["judge_prompt_tokens"] > 0).all()
    assert (sent["judge_completion_tokens"] > 0).all()
    assert (sent["judge_completion_tokens"] <= 2 * MAX_TOKENS).all()
    # the calls counted are exactly the requests the server saw
    assert llama_server.request_count() - before == sent["judge_calls"].sum() == judge.calls
    # an empty answer, an infra outcome, an agent error: not sent, a measured zero
    assert out.iloc[2:].to_numpy().tolist() == [[0, 0, 0, 0]] * 3

    # rescoring answers every sample from the cache: free, and counted as such
    before = llama_server.request_count()
    again = _judge(llama_server, cache)
    rescored = score_trials(_trials(), TASKS, "judge", judge=again).to_pandas()[COST]
    again.close()
    assert llama_server.request_count() == before
    assert rescored.iloc[:2].to_numpy().tolist() == [[0, 2, 0, 0]] * 2


def test_other_scorers_ask_no_judge():
    table = score_trials(_trials(), TASKS, "numeric")
    assert table.schema.equals(SCORES)
    assert table.to_pandas()[COST].isna().all().all()
