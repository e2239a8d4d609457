"""Resource profiles: how a task's declared resources become a container's allocation.

Each task declares ``cpus`` and ``memory_mb`` (and a ``time_limit_s``). A *resource profile*
scales that spec into two separate numbers per resource, as container runtimes enforce
them (config/README.md, "Resource profiles"):

- a **guarantee** (reserved up front): Docker ``mem_reservation`` and ``cpu_shares``
  (1024 × guaranteed CPUs);
- a **hard limit** (the kill/throttle line): Docker ``mem_limit`` with
  ``memswap_limit = mem_limit`` (no swap), and ``nano_cpus`` (CPU quota).

plus a time-limit factor. ``memory_limit_factor`` / ``cpu_limit_factor`` of ``None`` mean
no hard limit ("uncapped"). Built in: ``1x`` (guarantee = limit = spec), ``3x`` (limit = 3 ×
spec, guarantee = spec), ``uncapped`` (guarantee = spec, no limit).

A CPU limit above what the engine's host has is clamped to the host's CPU count (Docker
refuses larger quotas); the applied value is what :class:`Allocation` records.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from typing import Any

MIB = 1024 * 1024
#: Docker's minimum hard memory limit.
MIN_MEMORY_LIMIT_BYTES = 6 * MIB
#: Docker's CPU-shares weight of one CPU.
SHARES_PER_CPU = 1024


@dataclass(frozen=True)
class ResourceProfile:
    """A named scaling of task resources. ``None`` limit factors mean uncapped."""

    name: str
    memory_guarantee_factor: float = 1.0
    memory_limit_factor: float | None = 1.0
    cpu_guarantee_factor: float = 1.0
    cpu_limit_factor: float | None = 1.0
    time_limit_factor: float = 1.0

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise ValueError("a resource profile needs a non-empty name")
        for key in ("memory_guarantee_factor", "cpu_guarantee_factor", "time_limit_factor"):
            value = getattr(self, key)
            if not _positive(value):
                raise ValueError(
                    f"resource profile {self.name!r}: {key} must be > 0, got {value!r}"
                )
        for key, guarantee in (
            ("memory_limit_factor", self.memory_guarantee_factor),
            ("cpu_limit_factor", self.cpu_guarantee_factor),
        ):
            value = getattr(self, key)
            if value is None:
                continue
            if not _positive(value):
                raise ValueError(
                    f"resource profile {self.name!r}: {key} must be > 0 or null, got {value!r}"
                )
            if value < guarantee:
                raise ValueError(
                    f"resource profile {self.name!r}: {key} ({value}) is below "
                    f"its guarantee factor ({guarantee})"
                )

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ResourceProfile:
        known = {f.name for f in fields(cls)}
        unknown = set(data) - known
        if unknown:
            raise ValueError(
                f"resource profile: unknown keys {sorted(unknown)}; expected {sorted(known)}"
            )
        if "name" not in data:
            raise ValueError("resource profile: 'name' is required")
        return cls(**dict(data))

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _positive(value: Any) -> bool:
    return (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and math.isfinite(value)
        and value > 0
    )


BUILTIN_RESOURCE_PROFILES: dict[str, ResourceProfile] = {
    "1x": ResourceProfile("1x", 1.0, 1.0, 1.0, 1.0, 1.0),
    "3x": ResourceProfile("3x", 1.0, 3.0, 1.0, 3.0, 1.0),
    "uncapped": ResourceProfile("uncapped", 1.0, None, 1.0, None, 1.0),
}


def resource_profile(spec: str | Mapping[str, Any] | ResourceProfile) -> ResourceProfile:
    """A :class:`ResourceProfile` from a built-in name, a config mapping, or itself."""
    if isinstance(spec, ResourceProfile):
        return spec
    if isinstance(spec, str):
        try:
            return BUILTIN_RESOURCE_PROFILES[spec]
        except KeyError:
            raise ValueError(
                f"unknown resource profile {spec!r}; built in: "
                f"{', '.join(BUILTIN_RESOURCE_PROFILES)}"
            ) from None
    if isinstance(spec, Mapping):
        return ResourceProfile.from_dict(spec)
    raise TypeError(f"resource profile: expected a name or a mapping, got {type(spec).__name__}")


@dataclass(frozen=True)
class Allocation:
    """The resource values applied to one trial (recorded verbatim in the trial row).

    ``cpu_quota_cpus`` / ``memory_limit_bytes`` of ``None`` mean no hard limit;
    ``cpu_shares`` / ``memory_reservation_bytes`` of ``None`` mean no guarantee was applied
    (the local backend cannot reserve anything).
    """

    cpu_shares: int | None
    cpu_quota_cpus: float | None
    memory_reservation_bytes: int | None
    memory_limit_bytes: int | None
    time_limit_s: float

    def to_row(self) -> dict[str, Any]:
        return asdict(self)


def allocate(
    cpus: float,
    memory_mb: float,
    time_limit_s: float,
    profile: ResourceProfile,
    *,
    host_cpus: float | None = None,
) -> Allocation:
    """Scale one task's spec by ``profile``.

    ``host_cpus`` (the engine's CPU count) clamps the CPU limit, which Docker requires.
    """
    for key, value in (("cpus", cpus), ("memory_mb", memory_mb), ("time_limit_s", time_limit_s)):
        if not _positive(value):
            raise ValueError(f"task resource {key} must be > 0, got {value!r}")
    memory = float(memory_mb) * MIB
    reservation = round(memory * profile.memory_guarantee_factor)
    limit: int | None = None
    if profile.memory_limit_factor is not None:
        limit = max(round(memory * profile.memory_limit_factor), MIN_MEMORY_LIMIT_BYTES)
        reservation = min(reservation, limit)
    shares = max(2, round(SHARES_PER_CPU * cpus * profile.cpu_guarantee_factor))
    quota: float | None = None
    if profile.cpu_limit_factor is not None:
        quota = float(cpus) * profile.cpu_limit_factor
        if host_cpus is not None:
            quota = min(quota, float(host_cpus))
        quota = max(round(quota, 9), 0.01)  # nano_cpus resolution; Docker's minimum
    return Allocation(
        cpu_shares=shares,
        cpu_quota_cpus=quota,
        memory_reservation_bytes=reservation,
        memory_limit_bytes=limit,
        time_limit_s=float(time_limit_s) * profile.time_limit_factor,
    )


def docker_resource_kwargs(allocation: Allocation) -> dict[str, Any]:
    """Keyword arguments for ``containers.create`` that apply ``allocation``."""
    kwargs: dict[str, Any] = {}
    if allocation.cpu_shares is not None:
        kwargs["cpu_shares"] = allocation.cpu_shares
    if allocation.cpu_quota_cpus is not None:
        kwargs["nano_cpus"] = round(allocation.cpu_quota_cpus * 1e9)
    if allocation.memory_reservation_bytes is not None:
        kwargs["mem_reservation"] = allocation.memory_reservation_bytes
    if allocation.memory_limit_bytes is not None:
        kwargs["mem_limit"] = allocation.memory_limit_bytes
        kwargs["memswap_limit"] = allocation.memory_limit_bytes  # no swap beyond the limit
    return kwargs
