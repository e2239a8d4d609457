"""evalnoise's model server (:mod:`evalnoise.models.serve`) answers as llama-cpp-python's own
server, ``python -m llama_cpp.server``, answers: the same requests to both, started with the
same settings, give the same statuses, replies, token counts and errors."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

import pytest
from model_stack import needs_model

from evalnoise.models import LlamaServer, ServerConfig

pytestmark = [needs_model, pytest.mark.slow]

KEY_VAR = "EVALNOISE_TEST_SERVE_KEY"
SCHEMA = {
    "type": "object",
    "properties": {"answer": {"type": "string", "pattern": "^[0-9]{1,6}$"}},
    "required": ["answer"],
}
ASK = [{"role": "user", "content": "What is 12 + 30? Reply with the number."}]

#: (method, path, body or None, with the API key)
REQUESTS = {
    "seeded sample": (
        "POST",
        "/v1/chat/completions",
        {"model": "m", "messages": ASK, "temperature": 0.8, "seed": 7, "max_tokens": 16},
        True,
    ),
    "defaults": ("POST", "/v1/chat/completions", {"messages": ASK, "max_tokens": 8}, True),
    "json object with a schema": (
        "POST",
        "/v1/chat/completions",
        {
            "messages": ASK,
            "temperature": 0,
            "max_tokens": 16,
            "response_format": {"type": "json_object", "schema": SCHEMA},
        },
        True,
    ),
    "json schema": (
        "POST",
        "/v1/chat/completions",
        {
            "messages": ASK,
            "temperature": 0,
            "max_tokens": 16,
            "response_format": {
                "type": "json_schema",
                "json_schema": {"name": "x", "schema": SCHEMA, "strict": True},
            },
        },
        True,
    ),
    "stop": (
        "POST",
        "/v1/chat/completions",
        {"messages": ASK, "temperature": 0, "max_tokens": 24, "stop": ["\n", "2"]},
        True,
    ),
    "over the context": (
        "POST",
        "/v1/chat/completions",
        {"messages": [{"role": "user", "content": "word " * 700}], "max_tokens": 8},
        True,
    ),
    "no messages": ("POST", "/v1/chat/completions", {"max_tokens": 8}, True),
    "a bad response format": (
        "POST",
        "/v1/chat/completions",
        {"messages": ASK, "response_format": {"type": "xml"}},
        True,
    ),
    "no key": ("POST", "/v1/chat/completions", {"messages": ASK, "max_tokens": 4}, False),
    "models": ("GET", "/v1/models", None, True),
    "models without a key": ("GET", "/v1/models", None, False),
    "unknown path": ("GET", "/v1/nothing", None, True),
}

#: requests whose body fails validation
REFUSED = {"json schema", "a bad response format"}


def _send(server: LlamaServer, method: str, path: str, body, key: str | None):
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(
        server.base_url.removesuffix("/v1") + path, data=data, method=method
    )
    request.add_header("Content-Type", "application/json")
    if key:
        request.add_header("Authorization", f"Bearer {key}")
    try:
        with urllib.request.urlopen(request, timeout=120) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"null")


def _comparable(reply):
    if isinstance(reply, dict):
        # an id and a time are new in every reply
        return {k: _comparable(v) for k, v in reply.items() if k not in ("id", "created")}
    return reply


@pytest.fixture(scope="module")
def both(tmp_path_factory, monkeypatch_module):
    monkeypatch_module.setenv(KEY_VAR, "s3cret-test-key")
    logs = tmp_path_factory.mktemp("serve")
    # one token a batch: llama_cpp.server's replies then do not depend on the requests before
    # (ours do at any batch size: tests/models/test_models_history_free.py)
    config = ServerConfig(n_ctx=512, n_ubatch=1, api_key_env=KEY_VAR)
    ours = LlamaServer(config, log_path=str(logs / "ours.log"))
    theirs = LlamaServer(
        config, log_path=str(logs / "theirs.log"), server_module="llama_cpp.server"
    )
    with ours, theirs:
        yield ours, theirs


@pytest.fixture(scope="module")
def monkeypatch_module():
    with pytest.MonkeyPatch.context() as patch:
        yield patch


@pytest.mark.parametrize("name", list(REQUESTS))
def test_the_same_request_gets_the_same_answer(both, name):
    method, path, body, with_key = REQUESTS[name]
    key = "s3cret-test-key" if with_key else None
    ours, theirs = (_send(server, method, path, body, key) for server in both)
    assert ours[0] == theirs[0], (ours, theirs)
    if name in REFUSED:
        # both refuse the body as llama_cpp.server's error handler does (500, its envelope);
        # the validation error's wording is FastAPI's there and pydantic's here
        assert ours[0] == 500 and ours[1]["error"]["type"] == "internal_server_error"
        assert {**ours[1]["error"], "message": ""} == {**theirs[1]["error"], "message": ""}
        return
    assert _comparable(ours[1]) == _comparable(theirs[1])


def test_each_request_is_logged_where_request_count_finds_it(both):
    ours, theirs = both
    before = ours.request_count(), theirs.request_count()
    for server in both:
        _send(server, "POST", "/v1/chat/completions", {"messages": ASK, "max_tokens": 2}, None)
    assert ours.request_count() - before[0] == theirs.request_count() - before[1] == 1
