"""Reading the verifier's reward files: Harbor's rules, and stricter where Harbor reads a
failure as a number. Each case writes real files, as a verifier would."""

from __future__ import annotations

import os

import pytest

from evalnoise.runner.rewards import (
    MAX_REWARD_BYTES,
    parse_reward_json,
    parse_reward_txt,
    read_rewards,
    scoring_reward,
)


def verifier_dir(tmp_path, **files: bytes):
    for name, data in files.items():
        (tmp_path / name.replace("_", ".")).write_bytes(data)
    return tmp_path


@pytest.mark.parametrize(
    ("text", "value"),
    [(b"1", 1.0), (b"0\n", 0.0), (b" 0.25 \n", 0.25), (b"1e-1", 0.1), (b"1.0", 1.0)],
)
def test_reward_txt_one_number(tmp_path, text, value):
    rewards = read_rewards(verifier_dir(tmp_path, reward_txt=text))
    assert (rewards.values, rewards.problem, rewards.source) == (
        {"reward": value},
        None,
        "reward.txt",
    )


def test_reward_json_wins_over_txt(tmp_path):
    rewards = read_rewards(
        verifier_dir(tmp_path, reward_txt=b"0", reward_json=b'{"reward": 1, "style": 0.5}')
    )
    assert rewards.values == {"reward": 1.0, "style": 0.5}
    assert rewards.source == "reward.json"
    assert rewards.to_json() == '{"reward":1.0,"style":0.5}'


@pytest.mark.parametrize(
    ("files", "problem"),
    [
        ({}, "no reward file"),
        ({"reward_txt": b""}, "reward.txt is empty"),
        ({"reward_txt": b" \n"}, "reward.txt is empty"),
        ({"reward_txt": b"pass"}, "reward.txt is not a number"),
        ({"reward_txt": b"nan"}, "non-finite"),
        ({"reward_txt": b"inf"}, "non-finite"),
        ({"reward_txt": b"1.5"}, "outside [0, 1]"),
        ({"reward_txt": b"-0.1"}, "outside [0, 1]"),
        ({"reward_txt": b"0.5 0.5"}, "not a number"),
        ({"reward_json": b""}, "reward.json is empty"),
        ({"reward_json": b"{"}, "not valid JSON"),
        ({"reward_json": b"0.7"}, "non-empty object"),
        ({"reward_json": b"{}"}, "non-empty object"),
        ({"reward_json": b"[1]"}, "non-empty object"),
        ({"reward_json": b'{"reward": "1"}'}, "not a finite number"),
        ({"reward_json": b'{"reward": true}'}, "not a finite number"),
        ({"reward_json": b'{"reward": null}'}, "not a finite number"),
        ({"reward_json": b'{"reward": {"a": 1}}'}, "not a finite number"),
        ({"reward_json": b'{"reward": NaN}'}, "not a finite number"),
        ({"reward_json": b'{"reward": 1e309}'}, "not a finite number"),
        ({"reward_json": b'{"a": 0.5, "b": 2}'}, "reward 'b' = 2.0 is outside [0, 1]"),
        ({"reward_json": b'{"a": 1}', "reward_txt": b"1"}, None),  # json wins; valid
        ({"reward_json": b"{oops", "reward_txt": b"1"}, "not valid JSON"),  # json still wins
    ],
)
def test_invalid_rewards_are_problems_never_numbers(tmp_path, files, problem):
    rewards = read_rewards(verifier_dir(tmp_path, **files))
    if problem is None:
        assert rewards.problem is None
        return
    assert rewards.values is None and rewards.to_json() is None
    assert problem in rewards.problem


def test_reward_files_that_are_not_regular_files(tmp_path):
    secret = tmp_path / "secret"
    secret.write_text("1")
    (tmp_path / "logs").mkdir()
    os.symlink(secret, tmp_path / "logs" / "reward.txt")
    rewards = read_rewards(tmp_path / "logs")
    assert rewards.values is None and "not a regular file" in rewards.problem
    (tmp_path / "dir").mkdir()
    (tmp_path / "dir" / "reward.json").mkdir()
    assert "not a regular file" in read_rewards(tmp_path / "dir").problem


def test_oversized_reward_file(tmp_path):
    rewards = read_rewards(verifier_dir(tmp_path, reward_txt=b"1" + b" " * MAX_REWARD_BYTES))
    assert "larger than" in rewards.problem


def test_parsers_directly():
    assert parse_reward_txt(b"0.5").values == {"reward": 0.5}
    assert parse_reward_json(b'{"x": 0}').values == {"x": 0.0}


@pytest.mark.parametrize(
    ("values", "key", "expected"),
    [
        ({"reward": 0.5, "other": 1.0}, None, (0.5, None)),
        ({"only": 0.25}, None, (0.25, None)),
        ({"a": 1.0, "b": 0.0}, "b", (0.0, None)),
    ],
)
def test_scoring_reward(values, key, expected):
    assert scoring_reward(values, key) == expected


def test_scoring_reward_problems():
    reward, problem = scoring_reward({"a": 1.0, "b": 0.0})
    assert reward is None and "declare which one scores" in problem
    reward, problem = scoring_reward({"a": 1.0}, "b")
    assert reward is None and "'b' is not among the rewards ['a']" in problem
