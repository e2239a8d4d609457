"""The verifier's reward files, read as Harbor reads them — and stricter where Harbor reads a
failure as a number.

After ``tests/test.sh`` ran, the verifier's reward is in ``/logs/verifier/reward.json`` (a flat
JSON object of named numbers; it wins when both files exist) or
``/logs/verifier/reward.txt`` (one number) — Harbor 0.25's ``Verifier.verify``. Harbor raises
``RewardFileNotFoundError``, ``RewardFileEmptyError`` or ``VerifierOutputParseError`` for a
missing, empty or non-numeric reward; so does :func:`parse_rewards` (as a problem text),
and it also rejects what Harbor lets through: a reward outside [0, 1], a boolean (JSON
``true`` is a Python int), a bare number or an empty object in ``reward.json``, and a file that
is not a regular file. A problem is a ``verifier_error`` of the trial, never a reward of 0.

:func:`scoring_reward` picks the reward that scores from the named ones.
"""

from __future__ import annotations

import json
import math
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REWARD_JSON = "reward.json"
REWARD_TXT = "reward.txt"
#: A reward file larger than this is not a reward (and is not read whole).
MAX_REWARD_BYTES = 64 * 1024
#: The reward key Harbor's own metrics read.
DEFAULT_REWARD_KEY = "reward"


@dataclass(frozen=True)
class Rewards:
    """The named rewards of one verifier run (``values``), or why there are none
    (``problem``); ``source`` is the file they came from."""

    values: dict[str, float] | None
    problem: str | None
    source: str | None = None

    def to_json(self) -> str | None:
        """Canonical JSON of the named rewards (sorted keys), None without rewards."""
        if self.values is None:
            return None
        return json.dumps(self.values, sort_keys=True, separators=(",", ":"))


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def _in_range(name: str, value: float) -> str | None:
    if not 0.0 <= value <= 1.0:
        return f"reward {name!r} = {value!r} is outside [0, 1]"
    return None


def parse_reward_json(data: bytes) -> Rewards:
    """``reward.json``'s bytes: a non-empty flat object of finite numbers in [0, 1]."""
    if not data.strip():
        return Rewards(None, f"{REWARD_JSON} is empty", REWARD_JSON)
    try:
        obj = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        return Rewards(None, f"{REWARD_JSON} is not valid JSON: {exc}"[:300], REWARD_JSON)
    if not isinstance(obj, dict) or not obj:
        return Rewards(
            None,
            f"{REWARD_JSON} must be a non-empty object of named numbers, got "
            f"{json.dumps(obj)[:80]}",
            REWARD_JSON,
        )
    values = {}
    for key, raw in obj.items():
        value = _number(raw)
        if value is None:
            return Rewards(
                None,
                f"{REWARD_JSON}: reward {key!r} is not a finite number: {json.dumps(raw)[:80]}",
                REWARD_JSON,
            )
        problem = _in_range(key, value)
        if problem:
            return Rewards(None, f"{REWARD_JSON}: {problem}", REWARD_JSON)
        values[str(key)] = value
    return Rewards(values, None, REWARD_JSON)


def parse_reward_txt(data: bytes) -> Rewards:
    """``reward.txt``'s bytes: one finite number in [0, 1] (surrounding whitespace allowed,
    as Python's ``float`` allows it), named ``reward``."""
    if not data.strip():
        return Rewards(None, f"{REWARD_TXT} is empty", REWARD_TXT)
    try:
        value = float(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return Rewards(
            None,
            f"{REWARD_TXT} is not a number: {data[:80].decode('utf-8', 'replace')!r}",
            REWARD_TXT,
        )
    if not math.isfinite(value):
        return Rewards(None, f"{REWARD_TXT} holds a non-finite number {value!r}", REWARD_TXT)
    problem = _in_range(DEFAULT_REWARD_KEY, value)
    if problem:
        return Rewards(None, f"{REWARD_TXT}: {problem}", REWARD_TXT)
    return Rewards({DEFAULT_REWARD_KEY: value}, None, REWARD_TXT)


def _read_regular(path: Path) -> tuple[bytes | None, str | None]:
    """(bytes, None); (None, None) when absent; (None, problem) when it is not a regular file
    or too large. Opened without following symlinks: the agent could have planted one."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError:
        return None, None
    except OSError as exc:  # ELOOP: a symlink
        return None, f"{path.name} is not a regular file ({exc.strerror})"
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return None, f"{path.name} is not a regular file"
        if info.st_size > MAX_REWARD_BYTES:
            return None, f"{path.name} is larger than {MAX_REWARD_BYTES} bytes"
        return os.read(fd, MAX_REWARD_BYTES + 1), None
    finally:
        os.close(fd)


def read_rewards(verifier_dir: str | os.PathLike[str]) -> Rewards:
    """The rewards a verifier left in ``verifier_dir`` (the host side of /logs/verifier):
    ``reward.json`` if it exists, else ``reward.txt``, else a problem."""
    directory = Path(verifier_dir)
    data, problem = _read_regular(directory / REWARD_JSON)
    if problem:
        return Rewards(None, problem, REWARD_JSON)
    if data is not None:
        return parse_reward_json(data)
    data, problem = _read_regular(directory / REWARD_TXT)
    if problem:
        return Rewards(None, problem, REWARD_TXT)
    if data is not None:
        return parse_reward_txt(data)
    return Rewards(
        None, f"no reward file: the verifier wrote neither {REWARD_JSON} nor {REWARD_TXT}"
    )


def scoring_reward(
    values: dict[str, float], key: str | None = None
) -> tuple[float | None, str | None]:
    """``(reward, problem)``: the named reward that scores.

    ``key`` given: that one (a problem if absent). ``key`` None: ``reward`` if present (the
    name ``reward.txt`` gets and Harbor's metrics read), else the only one, else a problem
    asking for the key to be declared.
    """
    if key is not None:
        if key in values:
            return values[key], None
        return None, f"the scoring reward {key!r} is not among the rewards {sorted(values)}"
    if DEFAULT_REWARD_KEY in values:
        return values[DEFAULT_REWARD_KEY], None
    if len(values) == 1:
        return next(iter(values.values())), None
    return None, (
        f"{len(values)} named rewards {sorted(values)} and none is called 'reward': declare "
        "which one scores"
    )
