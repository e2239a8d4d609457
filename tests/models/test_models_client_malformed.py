"""A success status whose body is not a chat completion fails at once; faults still retry.

Each test serves scripted answers from a real HTTP server (``http.server`` on 127.0.0.1 in a
thread) and counts the requests that reached it. No model is needed.
"""

from __future__ import annotations

import http.server
import json
import sys
import threading
from pathlib import Path

import pytest

from evalnoise.models.client import ChatClient, ChatError, MalformedResponse
from evalnoise.scorers.judge import JUDGE_ERROR, LLMJudge

MESSAGES = [{"role": "user", "content": "Name a colour."}]
HTML = b"<html><body><h1>Welcome to our proxy</h1></body></html>"
COMPLETION = {
    "model": "m",
    "choices": [{"message": {"role": "assistant", "content": "red"}, "finish_reason": "stop"}],
    "usage": {"completion_tokens": 1},
}


class ScriptedServer:
    """Answers the n-th POST with ``script[n]`` (the last entry repeats): ``(status,
    content type, body bytes)``; counts the requests."""

    def __init__(self, script: list[tuple[int, str, bytes]]) -> None:
        self.script, self.requests = script, 0
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                self.rfile.read(int(self.headers["Content-Length"]))
                status, content_type, body = server.script[
                    min(server.requests, len(server.script) - 1)
                ]
                server.requests += 1
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def __enter__(self) -> ScriptedServer:
        return self

    def __exit__(self, *exc_info) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join()


def _client(url: str, **kw) -> ChatClient:
    return ChatClient(url, "m", max_retries=3, backoff_s=0.01, timeout=5, **kw)


def test_a_200_with_an_html_body_fails_at_once():
    with ScriptedServer([(200, "text/html", HTML)]) as server:
        client = _client(server.url)
        with pytest.raises(MalformedResponse, match=r"HTTP 200 .* is not JSON") as info:
            client.chat(MESSAGES)
        assert server.requests == 1 == client.requests_sent
    error = info.value
    assert isinstance(error, ChatError)
    assert (error.status, error.retryable, error.attempts) == (200, False, 1)


@pytest.mark.parametrize(
    "body",
    [{"error": "overloaded"}, {"choices": []}, {"choices": [{"text": "red"}]}, ["red"]],
    ids=["no-choices", "empty-choices", "no-message", "not-an-object"],
)
def test_a_200_with_json_that_is_not_a_completion_fails_at_once(body):
    with ScriptedServer([(200, "application/json", json.dumps(body).encode())]) as server:
        client = _client(server.url)
        with pytest.raises(MalformedResponse, match=r"no choices\[0\]\.message") as info:
            client.chat(MESSAGES)
        assert server.requests == 1
    assert not info.value.retryable


def test_5xx_is_still_retried_then_a_completion_is_read():
    script = [
        (503, "text/html", HTML),
        (502, "text/plain", b"bad gateway"),
        (200, "application/json", json.dumps(COMPLETION).encode()),
    ]
    with ScriptedServer(script) as server:
        reply = _client(server.url).chat(MESSAGES)
        assert server.requests == 3
    assert (reply.text, reply.attempts) == ("red", 3)


def test_a_5xx_then_a_malformed_200_stops_at_the_200():
    script = [(500, "text/plain", b"oops"), (200, "text/html", HTML)]
    with ScriptedServer(script) as server:
        with pytest.raises(MalformedResponse) as info:
            _client(server.url).chat(MESSAGES)
        assert server.requests == 2
    assert info.value.attempts == 2


def test_connection_errors_are_still_retried():
    with ScriptedServer([(200, "application/json", b"{}")]) as server:
        url = server.url
    # the server is gone: every attempt is refused
    client = _client(url, max_tokens=4)
    with pytest.raises(ChatError, match="cannot reach") as info:
        client.chat(MESSAGES)
    assert info.value.retryable and not isinstance(info.value, MalformedResponse)
    assert client.requests_sent == 4


def test_the_judge_records_a_malformed_answer_as_a_judge_error():
    with ScriptedServer([(200, "text/html", HTML)]) as server:
        judge = LLMJudge(_client(server.url))  # structured="auto": probing forms too
        result = judge.judge("What is 2+2?", "4", "4")
        assert server.requests == 1
    assert result.status == JUDGE_ERROR and result.correct is None
    assert "not JSON" in result.explanation


def test_an_agent_with_a_malformed_answer_is_an_agent_error_not_infra():
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "agents" / "common"))
    try:
        import agentlib
    finally:
        sys.path.pop(0)

    def main() -> int:
        raise MalformedResponse("HTTP 200 from http://x/v1 is not JSON: b'<html>'")

    def unreachable() -> int:
        raise ChatError("cannot reach http://x/v1", retryable=True)

    with pytest.raises(MalformedResponse):  # uncaught: the agent exits 1, an agent_error
        agentlib.run(main)
    assert agentlib.run(unreachable) == agentlib.EXIT_MODEL_UNAVAILABLE  # infra, as before
