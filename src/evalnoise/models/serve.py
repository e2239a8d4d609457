"""llama-cpp-python's OpenAI-compatible chat endpoint, served without its web framework.

``python serve.py ARGS`` takes ``python -m llama_cpp.server``'s arguments, parsed by that
server's own settings classes (``llama_cpp.server.settings``, ``llama_cpp.server.cli``: the
same flags, defaults and ``API_KEY`` variable), loads the model as it does
(``llama_cpp.server.model.LlamaProxy``) and serves, on the standard library's HTTP server,
the two endpoints evalnoise uses:

- ``GET /v1/models``: the model list, as llama_cpp.server lists it;
- ``POST /v1/chat/completions`` without streaming: the body validated by llama-cpp-python's
  own ``CreateChatCompletionRequest`` and answered by the same
  ``Llama.create_chat_completion`` call, with the same arguments, as
  ``llama_cpp.server.app.create_chat_completion`` makes; one request at a time, as its lock
  allows; an error in llama_cpp.server's OpenAI form and status (its ``RouteErrorHandler``).

What it leaves out is FastAPI and uvicorn, whose import is most of a server's start. A test sends
the same requests to both servers and compares the replies (``tests/models/test_models_serve.py``).
Each request is logged in uvicorn's access log form (``"POST /v1/chat/completions HTTP/1.1" 200``),
which :meth:`evalnoise.models.LlamaServer.request_count` counts.

This file imports nothing from evalnoise: a configured ``python`` that has llama-cpp-python
but not evalnoise runs it by its path.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import threading
import traceback
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import llama_cpp
from llama_cpp.server.cli import add_args_from_model, parse_model_from_args
from llama_cpp.server.model import LlamaProxy
from llama_cpp.server.settings import ModelSettings, ServerSettings, Settings
from llama_cpp.server.types import CreateChatCompletionRequest

#: the fields llama_cpp.server's endpoint leaves out of the call (app.create_chat_completion)
_NOT_PASSED = {"n", "logit_bias_type", "user", "min_tokens"}
_CONTEXT = re.compile(r"Requested tokens \((\d+)\) exceed context window of (\d+)")
_NO_MODEL = re.compile(r"Model path does not exist: (.+)")
#: path → the method it is served with
ROUTES = {"/v1/models": "GET", "/v1/chat/completions": "POST"}


class HistoryFreeLlama(llama_cpp.Llama):
    """``Llama`` whose replies do not depend on what it evaluated before, with prompts
    evaluated in batches.

    llama-cpp-python reuses the KV cache of the longest prompt prefix the previous request
    shares. With llama.cpp's CPU kernels, a token's KV entries and logits are the same
    whether it was evaluated in one batch of the prompt or in any split of it into pieces
    of two tokens or more, but not when it was evaluated alone (a batch of one token: a
    generated token, or the one token llama-cpp-python re-evaluates when a prompt is
    entirely cached; ``tests/models/test_models_history_free.py`` checks both on the CPU
    that runs it). So here, with a physical batch (``n_ubatch``)
    of 3 or more (:class:`ModelProxy`):

    - a prompt reuses the cache only up to the tokens that were evaluated in pieces of two
      or more (never a previous reply's tokens), and leaves at least two tokens to evaluate;
    - prompt tokens are evaluated in pieces of two tokens or more, none over ``n_ubatch``
      (so llama.cpp does not split off a one-token piece).

    A prompt's tokens are then always evaluated as a fresh evaluation of that prompt would
    evaluate them, and a seeded reply is the same whatever came before it
    (tests/models/test_models_history_free.py). Prompt tokens cost less than at ``n_ubatch``
    1, the other way to get history-free replies (``benchmarks/results/prompt-batch-judge.md``).
    """

    #: leading tokens of the cache whose KV was evaluated in pieces of two or more
    _batched = 0

    def generate(self, tokens, *args, **kwargs):
        """``Llama.generate`` with the cache reuse limited as the class says."""
        tokens = list(tokens)
        if kwargs.get("reset", True) and self.n_tokens > 0:
            common = 0
            for cached, token in zip(self._input_ids, tokens, strict=False):
                if cached != token:
                    break
                common += 1
            keep = min(common, self._batched, max(0, len(tokens) - 2))
            # llama-cpp-python's own prefix match then stops at ``keep``
            self.n_tokens = min(self.n_tokens, keep)
        yield from super().generate(tokens, *args, **kwargs)

    def eval(self, tokens) -> None:
        """``Llama.eval`` in pieces of two tokens or more (one token only when alone)."""
        tokens = list(tokens)
        start = self.n_tokens
        self._batched = min(self._batched, start)
        size = min(self.n_batch, self.context_params.n_ubatch)  # 3 or more (ModelProxy)
        pieces = [tokens[i : i + size] for i in range(0, len(tokens), size)]
        if len(pieces) > 1 and len(pieces[-1]) == 1:  # [..., size, 1] → [..., size - 1, 2]
            pieces[-2:] = [pieces[-2][:-1], pieces[-2][-1:] + pieces[-1]]
        for piece in pieces:
            super().eval(piece)
        if len(tokens) > 1 and self._batched == start:
            self._batched = start + len(tokens)


class ModelProxy(LlamaProxy):
    """llama_cpp.server's model loader; a model whose physical batch (``n_ubatch``, capped at
    ``n_batch``) is 3 or more is served as a :class:`HistoryFreeLlama`. At 1 every token is
    evaluated alone, whatever came before; at 2 an odd number of tokens cannot be split
    into pieces of two or more that llama.cpp does not split again."""

    @staticmethod
    def load_llama_from_model_settings(settings: ModelSettings) -> llama_cpp.Llama:
        llama = LlamaProxy.load_llama_from_model_settings(settings)
        batch = min(llama.n_batch, llama.context_params.n_ubatch)
        if batch >= 3 and type(llama) is llama_cpp.Llama:
            # adopt the loaded model rather than repeat the loader's 40 settings
            llama.__class__ = HistoryFreeLlama
        return llama


def error_reply(error: Exception, body: CreateChatCompletionRequest | None) -> tuple[int, dict]:
    """Status and OpenAI-style error of a failed request, as llama_cpp.server's
    ``RouteErrorHandler.error_message_wrapper`` forms them (context window, missing model:
    400; anything else: 500)."""
    if body is not None:
        match = _CONTEXT.search(str(error))
        if match is not None:
            window, prompt = int(match.group(2)), int(match.group(1))
            completion = body.max_tokens
            message = (
                f"This model's maximum context length is {window} tokens. However, you "
                f"requested {(completion or 0) + prompt} tokens ({prompt} in the messages, "
                f"{completion} in the completion). Please reduce the length of the messages "
                "or completion."
            )
            return 400, {
                "message": message,
                "type": "invalid_request_error",
                "param": "messages",
                "code": "context_length_exceeded",
            }
        match = _NO_MODEL.search(str(error))
        if match is not None:
            return 400, {
                "message": f"The model `{match.group(1)}` does not exist",
                "type": "invalid_request_error",
                "param": None,
                "code": "model_not_found",
            }
    print(f"Exception: {error}", file=sys.stderr)
    traceback.print_exc(file=sys.stderr)
    return 500, {
        "message": str(error),
        "type": "internal_server_error",
        "param": None,
        "code": None,
    }


def chat_completion(proxy: LlamaProxy, payload: Any) -> dict:
    """llama_cpp.server's ``create_chat_completion`` for a non-streaming request body."""
    body = CreateChatCompletionRequest(**payload)
    if body.stream:
        raise ValueError("streaming is not served here: send stream=false")
    kwargs = body.model_dump(exclude=_NOT_PASSED)
    llama = proxy(body.model)
    # app.prepare_request_resources
    if body.logit_bias is not None:
        kwargs["logit_bias"] = (
            {
                str(token_id): score
                for token, score in body.logit_bias.items()
                for token_id in llama.tokenize(token.encode("utf-8"), add_bos=False, special=True)
            }
            if body.logit_bias_type == "tokens"
            else body.logit_bias
        )
    if body.grammar is not None:
        kwargs["grammar"] = llama_cpp.LlamaGrammar.from_string(body.grammar)
    if body.min_tokens > 0:
        processors = llama_cpp.LogitsProcessorList(
            [llama_cpp.MinTokensLogitsProcessor(body.min_tokens, llama.token_eos())]
        )
        kwargs.setdefault("logits_processor", llama_cpp.LogitsProcessorList()).extend(processors)
    return llama.create_chat_completion(**kwargs)


class Handler(BaseHTTPRequestHandler):
    """``GET /v1/models`` and ``POST /v1/chat/completions``; anything else 404 or 405."""

    server: ChatServer
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:
        if self._route() == "GET" and self._authorized():
            self._reply(200, self.server.model_list())

    def do_POST(self) -> None:
        if self._route() != "POST":
            return
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if not self._authorized():
            return
        payload: Any = None
        try:
            payload = json.loads(raw)
            with self.server.lock:
                reply = chat_completion(self.server.proxy, payload)
        except Exception as exc:  # every failure is answered, as llama_cpp.server answers it
            try:
                body = CreateChatCompletionRequest(**payload)
            except Exception:
                body = None
            status, error = error_reply(exc, body)
            self._reply(status, {"error": error})
            return
        self._reply(200, reply)

    def _route(self) -> str | None:
        """The method this path is served with, if it is this request's; else answered."""
        method = ROUTES.get(self.path.split("?")[0])
        if method is None:
            self._reply(404, {"detail": "Not Found"})
        elif method != self.command:
            self._reply(405, {"detail": "Method Not Allowed"})
        return method if method == self.command else None

    def _authorized(self) -> bool:
        key = self.server.settings.api_key
        if key is None or self.headers.get("Authorization", "") == f"Bearer {key}":
            return True
        self._reply(401, {"detail": "Invalid API key"})
        return False

    def _reply(self, status: int, data: Any) -> None:
        payload = json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, format: str, *args: Any) -> None:
        # uvicorn's access-log form: LlamaServer.request_count counts these lines
        if format.startswith('"%s"'):
            line = f'"{self.requestline}" {args[1]}'
        else:
            line = format % args
        sys.stdout.write(f"INFO:     {self.address_string()} - {line}\n")
        sys.stdout.flush()


class ChatServer(ThreadingHTTPServer):
    """The HTTP server, its settings, the loaded model and the lock of its one request."""

    daemon_threads = True

    def __init__(self, settings: ServerSettings, models: list[ModelSettings]) -> None:
        self.settings = settings
        self.proxy = ModelProxy(models=models)
        self.lock = threading.Lock()
        super().__init__((settings.host, settings.port), Handler)

    def model_list(self) -> dict:
        return {
            "object": "list",
            "data": [
                {"id": alias, "object": "model", "owned_by": "me", "permissions": []}
                for alias in self.proxy
            ],
        }


def main(argv: list[str] | None = None) -> None:
    """Parse llama_cpp.server's arguments, load the model, serve until killed."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_args_from_model(parser, Settings)
    args = parser.parse_args(argv)
    server = ChatServer(
        parse_model_from_args(ServerSettings, args), [parse_model_from_args(ModelSettings, args)]
    )
    print(f"INFO:     serving on http://{server.settings.host}:{server.server_port}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
