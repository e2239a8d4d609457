"""Resource profiles → guarantee, hard limit and time limit; the Docker mapping."""

from __future__ import annotations

import pytest

from evalnoise.runner.resources import (
    BUILTIN_RESOURCE_PROFILES,
    MIB,
    ResourceProfile,
    allocate,
    docker_resource_kwargs,
    resource_profile,
)


def test_1x_guarantee_equals_limit_equals_spec():
    a = allocate(1.5, 512, 60, resource_profile("1x"), host_cpus=8)
    assert a.memory_reservation_bytes == a.memory_limit_bytes == 512 * MIB
    assert a.cpu_shares == 1536
    assert a.cpu_quota_cpus == 1.5
    assert a.time_limit_s == 60.0


def test_3x_limit_is_three_times_the_spec_guarantee_stays():
    a = allocate(1.0, 512, 60, resource_profile("3x"), host_cpus=8)
    assert a.memory_reservation_bytes == 512 * MIB
    assert a.memory_limit_bytes == 3 * 512 * MIB
    assert a.cpu_shares == 1024
    assert a.cpu_quota_cpus == 3.0


def test_uncapped_has_no_hard_limits():
    a = allocate(2.0, 256, 30, resource_profile("uncapped"))
    assert a.memory_limit_bytes is None and a.cpu_quota_cpus is None
    assert a.memory_reservation_bytes == 256 * MIB and a.cpu_shares == 2048
    kwargs = docker_resource_kwargs(a)
    assert "mem_limit" not in kwargs and "memswap_limit" not in kwargs
    assert "nano_cpus" not in kwargs
    assert kwargs == {"cpu_shares": 2048, "mem_reservation": 256 * MIB}


def test_docker_kwargs_no_swap_and_nano_cpus():
    kwargs = docker_resource_kwargs(allocate(0.5, 100, 10, resource_profile("3x"), host_cpus=4))
    assert kwargs == {
        "cpu_shares": 512,
        "nano_cpus": 1_500_000_000,
        "mem_reservation": 100 * MIB,
        "mem_limit": 300 * MIB,
        "memswap_limit": 300 * MIB,
    }


def test_cpu_limit_is_clamped_to_the_host_and_recorded_as_applied():
    a = allocate(1.0, 64, 10, resource_profile("3x"), host_cpus=2)
    assert a.cpu_quota_cpus == 2.0
    assert docker_resource_kwargs(a)["nano_cpus"] == 2_000_000_000


def test_custom_resource_profile_from_config():
    rp = resource_profile(
        {
            "name": "2x-mem-slow",
            "memory_limit_factor": 2.0,
            "cpu_limit_factor": None,
            "time_limit_factor": 2.5,
        }
    )
    a = allocate(1.0, 100, 10, rp)
    assert (a.memory_reservation_bytes, a.memory_limit_bytes) == (100 * MIB, 200 * MIB)
    assert a.cpu_quota_cpus is None and a.time_limit_s == 25.0
    assert rp.to_dict() == {
        "name": "2x-mem-slow",
        "memory_guarantee_factor": 1.0,
        "memory_limit_factor": 2.0,
        "cpu_guarantee_factor": 1.0,
        "cpu_limit_factor": None,
        "time_limit_factor": 2.5,
    }


def test_tiny_limits_respect_dockers_minimum():
    a = allocate(0.001, 1, 1, resource_profile("1x"))
    assert a.memory_limit_bytes == 6 * MIB
    assert a.memory_reservation_bytes == 1 * MIB
    assert a.cpu_shares == 2 and a.cpu_quota_cpus == 0.01


@pytest.mark.parametrize(
    "bad",
    [
        {"name": "x", "memroy_limit_factor": 2.0},  # typo
        {"memory_limit_factor": 2.0},  # no name
        {"name": "x", "memory_limit_factor": 0.5},  # limit below guarantee
        {"name": "x", "time_limit_factor": 0},
        {"name": "x", "cpu_guarantee_factor": -1},
        {"name": "x", "memory_limit_factor": "3"},
    ],
)
def test_invalid_resource_profiles_are_rejected(bad):
    with pytest.raises(ValueError):
        resource_profile(bad)


def test_unknown_builtin_name():
    with pytest.raises(ValueError, match="1x"):
        resource_profile("2x")


def test_builtins():
    assert set(BUILTIN_RESOURCE_PROFILES) == {"1x", "3x", "uncapped"}
    assert resource_profile(BUILTIN_RESOURCE_PROFILES["3x"]) is BUILTIN_RESOURCE_PROFILES["3x"]
    assert ResourceProfile("z").memory_limit_factor == 1.0


@pytest.mark.parametrize("key,value", [("cpus", 0), ("memory_mb", -5), ("time_limit_s", None)])
def test_invalid_task_resources(key, value):
    spec = {"cpus": 1.0, "memory_mb": 64, "time_limit_s": 10.0, key: value}
    with pytest.raises(ValueError):
        allocate(spec["cpus"], spec["memory_mb"], spec["time_limit_s"], resource_profile("1x"))


def test_a_sigkill_at_the_memory_limit_is_an_oom_kill_even_without_the_engine_flag():
    from evalnoise.runner.peak_memory import killed_at_memory_limit as _killed_at_memory_limit

    limit = 48 * 1024 * 1024
    assert _killed_at_memory_limit(137, limit, limit)
    assert not _killed_at_memory_limit(137, limit - 4096, limit)  # killed for another reason
    assert not _killed_at_memory_limit(1, limit, limit)  # exited by itself
    assert not _killed_at_memory_limit(137, None, limit)  # peak unknown (remote engine)
    assert not _killed_at_memory_limit(137, limit, None)  # no hard limit
