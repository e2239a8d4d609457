"""The portable model runtime: built for the declared baseline, and only that build in images.

The baseline check disassembles the shared objects (``objdump -d``) and counts instructions
that name an AVX-512 (zmm, k-mask) or AMX (tmm) register: a native build on an AVX-512
machine has ~15,600 of them in ``libggml-cpu.so`` (docs/measurements.md), the baseline build none. A
positive control compiles a function for AVX-512 and checks the same count finds it, so the
check can fail.

Disassembly is the cost here (~1–3 s of ``objdump`` per library): the venv, the wheel (every
library three times, in two folders) and the staged context hold the same few files, so the
module disassembles each distinct content once (``seen``) and stages one context for the
two tests that inspect it.
"""

from __future__ import annotations

import shutil
import subprocess
import zipfile

import pytest
from container_output import run_output
from model_stack import needs_model

from evalnoise.models.runtime import (
    CPU_BASELINE,
    FORBIDDEN_REGISTERS,
    LLAMA_CMAKE_ARGS,
    forbidden_instruction_count,
    ggml_libraries,
    portable_wheel,
    wheel_key,
)


def test_cmake_args_turn_native_detection_and_every_avx512_and_amx_option_off():
    args = dict(a.removeprefix("-D").split("=") for a in LLAMA_CMAKE_ARGS)
    assert args["GGML_NATIVE"] == "OFF"
    for name, value in args.items():
        if name.startswith(("GGML_AVX512", "GGML_AMX")):
            assert value == "OFF", name
    assert {args[k] for k in ("GGML_AVX2", "GGML_FMA", "GGML_F16C")} == {"ON"}
    assert "AVX-512" in CPU_BASELINE and "AMX" in CPU_BASELINE


def test_wheel_key_changes_with_the_flags(monkeypatch):
    import evalnoise.models.runtime as runtime

    before = wheel_key()
    monkeypatch.setattr(runtime, "LLAMA_CMAKE_ARGS", (*LLAMA_CMAKE_ARGS, "-DGGML_AVX512=ON"))
    assert runtime.wheel_key() != before
    monkeypatch.undo()
    monkeypatch.setattr(runtime, "LLAMA_PROJECT_INCLUDE", "")
    assert runtime.wheel_key() != before  # the project include is part of the build too


@pytest.mark.parametrize(
    ("line", "hit"),
    [
        ("  4005d0:\tvmovups %zmm0,(%rdi)", True),
        ("  4005d0:\tkmovw  %k1,%eax", True),
        ("  4005d0:\ttileloadd (%rsi,%rdx,1),%tmm0", True),
        ("  4005d0:\tvmovups %ymm0,(%rdi)", False),
        ("  4005d0:\tvfmadd231ps %ymm2,%ymm1,%ymm0", False),
    ],
)
def test_forbidden_register_pattern(line, hit):
    assert bool(FORBIDDEN_REGISTERS.search(line)) is hit


@pytest.fixture(scope="module")
def avx512_object(tmp_path_factory):
    """A shared object compiled for AVX-512: the positive control."""
    cc = shutil.which("gcc") or shutil.which("cc")
    if cc is None:
        pytest.fail("no C compiler to build the positive control (gcc is on every machine)")
    tmp = tmp_path_factory.mktemp("avx512")
    source = tmp / "wide.c"
    source.write_text(
        "void add(float *restrict a, const float *restrict b, int n)"
        "{ for (int i = 0; i < n; i++) a[i] += b[i]; }\n"
    )
    out = tmp / "libwide.so"
    flags = ["-O3", "-mavx512f", "-mprefer-vector-width=512", "-shared", "-fPIC"]
    subprocess.run([cc, *flags, "-o", str(out), str(source)], check=True)
    return out


@pytest.fixture(scope="module")
def seen() -> dict[str, int]:
    """Forbidden-instruction counts by content digest, shared by the module's checks."""
    return {}


@pytest.fixture(scope="module")
def staged_context(tmp_path_factory, requires_model_stack):
    """One staged llama runtime context: inspected by one test, built into the image by
    another (staging is two ``pip install --target`` runs, ~10 s)."""
    from evalnoise.models.agent_images import stage_llama_runtime_context

    return stage_llama_runtime_context(tmp_path_factory.mktemp("llama-runtime") / "ctx")


def test_the_check_finds_avx512_code(avx512_object):
    assert forbidden_instruction_count([avx512_object])[str(avx512_object)] > 0


def test_the_check_disassembles_each_content_once_and_reports_every_path(avx512_object, tmp_path):
    copy = tmp_path / "libwide.so.0"
    shutil.copyfile(avx512_object, copy)
    memo: dict[str, int] = {}
    counts = forbidden_instruction_count([avx512_object, copy], seen=memo)
    assert set(counts) == {str(avx512_object), str(copy)}
    assert counts[str(copy)] == counts[str(avx512_object)] > 0
    assert list(memo.values()) == [counts[str(copy)]]  # one content, one disassembly
    # a remembered content is not disassembled again: the memo's count is what is reported
    memo[next(iter(memo))] = -1
    assert forbidden_instruction_count([copy], seen=memo) == {str(copy): -1}


@needs_model
def test_installed_runtime_holds_no_instruction_beyond_the_baseline(seen):
    import importlib.util
    from pathlib import Path

    spec = importlib.util.find_spec("llama_cpp")
    libs = ggml_libraries(Path(spec.origin).parent)
    assert any(p.name.startswith("libggml-cpu") for p in libs), libs
    counts = forbidden_instruction_count(libs, seen=seen)
    assert counts and all(n == 0 for n in counts.values()), counts


@needs_model
def test_installed_runtime_reports_the_baseline_features():
    from evalnoise.machine import llama_runtime_info

    info = llama_runtime_info()
    assert info is not None
    line = info["system_info"]
    assert "AVX2 = 1" in line and "FMA = 1" in line, line
    assert "AVX512" not in line and "AMX" not in line, line
    assert info["wheel_key"] == wheel_key()


@needs_model
def test_portable_wheel_is_the_installed_build_and_clean(tmp_path, seen):
    wheel = portable_wheel()
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(tmp_path)
    libs = ggml_libraries(tmp_path)
    assert libs
    assert all(n == 0 for n in forbidden_instruction_count(libs, seen=seen).values())
    # the bindings' libraries, and not llama.cpp's common library (LLAMA_PROJECT_INCLUDE)
    names = [p.name for p in tmp_path.rglob("*.so*")]
    assert any(n.startswith("libllama.so") for n in names), names
    assert not any("common" in n for n in names), names


@needs_model
def test_staged_runtime_context_installs_the_wheel_not_the_host_venv(staged_context, seen):
    """The image's site-packages are a fresh install of the portable wheel: every native
    library is byte-identical to the wheel's member and shares no inode with the venv."""
    import importlib.util
    from pathlib import Path

    context = staged_context
    staged = ggml_libraries(context / "site-packages")
    assert any(p.name.startswith("libggml-cpu") for p in staged)
    venv_libs = {
        p.name: p for p in ggml_libraries(Path(importlib.util.find_spec("llama_cpp").origin).parent)
    }
    with zipfile.ZipFile(portable_wheel()) as archive:
        members = {
            n: archive.read(n)
            for n in archive.namelist()
            if n.startswith("lib/lib") or "/lib/lib" in n
        }
    for lib in staged:
        rel = lib.relative_to(context / "site-packages").as_posix()
        assert lib.read_bytes() == members[rel], rel
        if lib.name in venv_libs:
            assert lib.stat().st_ino != venv_libs[lib.name].stat().st_ino
    assert not list((context / "site-packages").glob("*.dist-info/direct_url.json"))
    assert all(n == 0 for n in forbidden_instruction_count(staged, seen=seen).values())


@needs_model
def test_runtime_image_runs_the_baseline_build(docker_engine, staged_context):
    """In the agent runtime image, llama.cpp reports the baseline's features (no AVX-512,
    no AMX) whatever this host's CPU has."""
    from evalnoise.models.agent_images import build_llama_runtime_image
    from evalnoise.runner.base_image import build_base_image

    base = build_base_image(client=docker_engine)
    tag = build_llama_runtime_image(base, client=docker_engine, context=staged_context)
    script = (
        "import llama_cpp, sys; i = llama_cpp.llama_print_system_info(); "
        "sys.stdout.write(i.decode() if isinstance(i, bytes) else str(i))"
    )
    out = run_output(docker_engine, tag, ["python3", "-c", script])
    assert "AVX2 = 1" in out, out
    assert "AVX512" not in out and "AMX" not in out, out
    # The runtime's bytecode is in the image, compiled there: a trial's root is read-only,
    # so a missing .pyc is compiled again in every trial (~1.5 s of CPU each, measured).
    script = (
        "import importlib.util, os, sys, llama_cpp, numpy, jinja2; "
        "mods = [m.__file__ for m in list(sys.modules.values()) "
        "if (getattr(m, '__file__', None) or '').startswith('/opt/llama/') "
        "and m.__file__.endswith('.py')]; "
        "missing = [f for f in mods if not os.path.isfile(importlib.util.cache_from_source(f))]; "
        "print(len(mods), len(missing), *missing[:5])"
    )
    loaded, missing, *names = run_output(
        docker_engine, tag, ["python3", "-B", "-c", script]
    ).split()
    assert int(loaded) > 100 and int(missing) == 0, (loaded, missing, names)


@needs_model
def test_the_runtime_tag_is_kept_and_staging_skipped(
    docker_engine, staged_context, tmp_path, monkeypatch
):
    """The tag of the runtime image is kept in the user cache under the key of the staging's
    inputs: the next build of the same inputs stages nothing; a kept tag whose image is gone
    is staged again; a changed input is a new key."""
    from evalnoise.models import agent_images
    from evalnoise.runner.base_image import build_base_image

    base = build_base_image(client=docker_engine)
    tag = agent_images.build_llama_runtime_image(base, client=docker_engine, context=staged_context)
    monkeypatch.setenv("EVALNOISE_CACHE_DIR", str(tmp_path / "cache"))
    staged = []

    def stage(dest, *, model_path=None, wheel=None):  # the fixture's real staging, counted
        staged.append(dest)
        shutil.copytree(staged_context, dest, dirs_exist_ok=True)
        return dest

    monkeypatch.setattr(agent_images, "stage_llama_runtime_context", stage)
    key = agent_images.llama_runtime_key(base)
    agent_images._keep_tag(key, "evalnoise-llama-runtime:000000000000")  # its image is gone
    assert agent_images.build_llama_runtime_image(base, client=docker_engine) == tag
    assert len(staged) == 1 and agent_images._kept_tags() == {key: tag}
    assert agent_images.build_llama_runtime_image(base, client=docker_engine) == tag
    assert len(staged) == 1  # kept: nothing staged

    monkeypatch.setenv("PIP_INDEX_URL", "http://127.0.0.1:9/simple")
    assert agent_images.llama_runtime_key(base) != key
    monkeypatch.delenv("PIP_INDEX_URL")
    other_model = tmp_path / "other.gguf"
    other_model.write_bytes(b"GGUF not the model")
    assert agent_images.llama_runtime_key(base, model_path=other_model) != key
    assert agent_images.llama_runtime_key(base + "x") != key
    assert agent_images.llama_runtime_key(base) == key
