"""The exec protocol's messages and the capped output (no engine needed)."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from evalnoise.runner.exec_protocol import (
    MAX_LINE_BYTES,
    CappedOutput,
    Done,
    Exec,
    Upload,
    parse_message,
    response,
)


def test_exec_and_done_messages():
    assert parse_message(b'{"exec": "ls -la", "timeout_s": 5}') == Exec("ls -la", 5.0)
    assert parse_message(b'{"exec": "true"}') == Exec("true", None)
    done = parse_message(b'{"done": true, "usage": {"model_calls": 2}}')
    assert isinstance(done, Done) and done.record["usage"] == {"model_calls": 2}
    upload = parse_message(b'{"upload": "/solution", "archive": "dGFy"}')
    assert upload == Upload("/solution", b"tar")


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        (b"ls -la", "not a JSON line"),
        (b"[1, 2]", "not a JSON object"),
        (b'{"exec": ""}', "non-empty string"),
        (b'{"exec": 3}', "non-empty string"),
        (b'{"exec": "x", "timeout_s": 0}', "positive number"),
        (b'{"exec": "x", "timeout_s": true}', "positive number"),
        (b'{"exec": "x", "timeout_s": "5"}', "positive number"),
        (b'{"done": false}', 'neither "exec", "upload" nor "done"'),
        (b'{"answer": 42}', 'neither "exec", "upload" nor "done"'),
        (b'{"upload": "relative", "archive": ""}', "absolute directory"),
        (b'{"upload": "/x"}', "base64 string"),
        (b'{"upload": "/x", "archive": "%%%"}', "not valid base64"),
        (b"\xff\xfe", "not a JSON line"),
        (b"{" + b" " * MAX_LINE_BYTES + b"}", "longer than"),
    ],
)
def test_protocol_errors(line, problem):
    with pytest.raises(ValueError, match=problem):
        parse_message(line)


def test_capped_output_keeps_head_and_tail():
    out = CappedOutput(10)
    for chunk in (b"abc", b"defgh", b"ijklmnop", b"qrst"):
        out.write(chunk)
    assert out.dropped == 10
    assert out.text() == "abcde\n[... 10 bytes left out ...]\npqrst"
    small = CappedOutput(100)
    small.write(b"hello")
    assert (small.text(), small.dropped) == ("hello", 0)


@given(st.lists(st.binary(max_size=50), max_size=30), st.integers(2, 64))
def test_capped_output_is_the_stream_when_it_fits(chunks, limit):
    out = CappedOutput(limit)
    for chunk in chunks:
        out.write(chunk)
    data = b"".join(chunks)
    half = limit // 2
    assert out.dropped == max(0, len(data) - 2 * half)
    kept = bytes(out.head) + bytes(out.tail)
    if out.dropped == 0:
        assert kept == data
    else:
        assert bytes(out.head) == data[:half] and bytes(out.tail) == data[-half:]


def test_response_line():
    out = CappedOutput(100)
    out.write("é\n".encode())
    line = response(0, out, timed_out=False, duration_s=0.01234)
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    assert json.loads(line) == {
        "exit_code": 0,
        "output": "é\n",
        "timed_out": False,
        "truncated_bytes": 0,
        "duration_s": 0.012,
    }
