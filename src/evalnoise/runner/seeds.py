"""Trial seeds and the trial order: pure, stable functions of the run seed.

``trial_seed`` hashes the canonical JSON object
``{"agent": ..., "run_seed": ..., "task_id": ..., "trial": ...}`` (sorted keys, no spaces,
UTF-8) with SHA-256 and keeps the first 8 bytes, big-endian, masked to **63 bits** — a
non-negative int64, the ``seed`` column's type. Adding tasks, trials, agents or resource
profiles never changes an existing trial's seed; the resource profile is deliberately not an
input, so the same trial under two resource profiles gets the same seed (a paired design).

**Variants.** A trial run under a prompt or sampling variant (:mod:`evalnoise.runner.variant`)
adds the variant's key to the record, ``{..., "variant": key}``: every variant of a trial has
its own seed, and adding a variant never changes another's. The neutral variant (key ``""``)
adds nothing, so its seeds are those of a run without variants.

Agents whose RNG takes a 32-bit seed use :func:`seed32` (the low 31 bits: non-negative in
any signed or unsigned 32-bit type, and never llama.cpp's ``0xFFFFFFFF`` "random seed"
sentinel). The agent contract passes both (``seed``, ``seed32``).

**Trial order.** A shard runs its (task, trial) pairs in a seeded random order
(:func:`trial_order`), so that a drift of the machine or the model server over a shard's
run cannot line up with the task or trial index. The order's seed (:func:`order_seed`) is
the run seed's own hash under a purpose label, ``{"purpose": "trial_order", "run_seed":
...}``: it is recorded in the manifest, and it shares nothing with the trial seeds, so the
order never changes what a trial does. Each pair's place comes from its own key
(:func:`order_key`: the hash of the order seed, agent, resource profile, task and trial);
the shard sorts its pairs by key. That is a uniformly random permutation, the same in every
checkout and on every resume, and a shard that grows (more tasks in its chunk, more trials
in its block) keeps its old pairs in their relative order instead of reshuffling them.
"""

from __future__ import annotations

import hashlib
import json
import operator
from collections.abc import Iterable

SEED_BITS = 63
_MASK = (1 << SEED_BITS) - 1
#: The purpose label hashed with the run seed into the trial order's seed.
ORDER_PURPOSE = "trial_order"


def _hash63(record: dict[str, object]) -> int:
    """The first 8 bytes (big-endian) of SHA-256 of ``record``'s canonical JSON, 63 bits."""
    canonical = json.dumps(record, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    digest = hashlib.sha256(canonical.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") & _MASK


def trial_seed(run_seed: int, agent: str, task_id: str, trial: int, variant: str = "") -> int:
    """The seed of trial ``trial`` of ``task_id`` for ``agent`` in run ``run_seed``, under
    the variant whose key is ``variant`` (``""``: none, or the neutral one)."""
    run_seed, trial = _integer("run_seed", run_seed), _integer("trial", trial)
    record: dict[str, object] = {
        "agent": str(agent),
        "run_seed": run_seed,
        "task_id": str(task_id),
        "trial": trial,
    }
    return _hash63(_with_variant(record, variant))


def _with_variant(record: dict[str, object], variant: str) -> dict[str, object]:
    """``record`` with the variant's key, when there is one (the module docstring)."""
    if not isinstance(variant, str):
        raise TypeError(f"variant must be a key string, got {type(variant).__name__}")
    return {**record, "variant": variant} if variant else record


def order_seed(run_seed: int) -> int:
    """The seed of run ``run_seed``'s trial order (see the module docstring)."""
    return _hash63({"purpose": ORDER_PURPOSE, "run_seed": _integer("run_seed", run_seed)})


def order_key(
    seed: int, agent: str, resource_profile: str, task_id: str, trial: int, variant: str = ""
) -> int:
    """Where trial ``trial`` of ``task_id`` falls in its shard's order: shards run their
    pairs by ascending key. ``seed`` is the run's :func:`order_seed`; ``variant`` the key of
    the shard's variant (``""``: none), so each variant's shard has its own order."""
    record: dict[str, object] = {
        "agent": str(agent),
        "order_seed": _integer("seed", seed),
        "resource_profile": str(resource_profile),
        "task_id": str(task_id),
        "trial": _integer("trial", trial),
    }
    return _hash63(_with_variant(record, variant))


def trial_order(
    seed: int,
    agent: str,
    resource_profile: str,
    pairs: Iterable[tuple[str, int]],
    variant: str = "",
) -> list[tuple[str, int]]:
    """The (task_id, trial) ``pairs`` of one shard in the order the shard runs them.

    Sorted by :func:`order_key` (ties, which 63 bits make vanishingly rare, by the pair
    itself); duplicates are dropped.
    """
    keyed = {(str(task_id), _integer("trial", trial)): None for task_id, trial in pairs}
    return sorted(
        keyed, key=lambda p: (order_key(seed, agent, resource_profile, p[0], p[1], variant), p)
    )


def _integer(name: str, value: object) -> int:
    if isinstance(value, bool):
        raise TypeError(f"{name} must be an integer, got a bool")
    try:
        return operator.index(value)  # int, numpy integers; not floats or strings
    except TypeError:
        raise TypeError(f"{name} must be an integer, got {type(value).__name__}") from None


def seed32(seed: int) -> int:
    """A 31-bit seed for RNGs that take 32 bits: ``seed & 0x7FFFFFFF``."""
    return seed & 0x7FFFFFFF
