"""A small OpenAI chat-completions client, standard library only.

One client talks to every OpenAI-compatible server: OpenAI itself, vLLM, Ollama
(``http://127.0.0.1:11434/v1``), llama.cpp's ``llama-server`` and llama-cpp-python's
``llama_cpp.server``. It sends ``POST {base_url}/chat/completions`` and nothing else.

The API key is never an argument: ``api_key_env`` names an environment variable, read at
call time, sent as ``Authorization: Bearer …`` and never logged, stored on the object,
put in an exception or in ``repr``. Local servers need no key (``api_key_env=None``).

Transient failures are retried with exponential backoff (``backoff_s * 2**attempt``, capped
at ``backoff_max_s``; a ``Retry-After`` header is honoured up to the cap): HTTP 408, 409,
429 and 5xx, timeouts and connection errors. Other 4xx fail at once, and so does a success
status whose body is not a chat completion (:class:`MalformedResponse`): the server answered,
and what it answered is the judge's or the agent's error, not a transient fault.

A server that is *known dead* fails every later call of the process at once, without a
request: when a call's every attempt was refused (nothing listens on the port any more), or
when the caller's ``alive()`` (e.g. the managed server's process) says the server is gone
(then without retrying at all). A judge whose server died mid-job so fails its remaining
trials in a moment instead of backing off on each (:func:`forget_dead_servers` clears it).

This module imports nothing from evalnoise, on purpose: the agent images copy this one file
in (as ``evalnoise_client.py``) so the agents that run inside trial containers use the same
client with only Python's standard library.
"""

from __future__ import annotations

import json
import os
import socket
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "ChatClient",
    "ChatError",
    "ChatResponse",
    "MalformedResponse",
    "forget_dead_servers",
    "usage_count",
]

#: HTTP statuses worth another attempt.
RETRYABLE_STATUS = frozenset({408, 409, 429, 500, 502, 503, 504})

#: base URL → why it is known dead, for this process (see the module docstring)
_DEAD: dict[str, str] = {}


def forget_dead_servers() -> None:
    """Forget every server found dead (a restarted server answers again)."""
    _DEAD.clear()


class ChatError(RuntimeError):
    """A chat-completions call failed, after retries when the failure was transient.

    ``status`` is the last HTTP status (None for connection errors and timeouts),
    ``retryable`` whether the last failure was transient, ``attempts`` how many requests
    were sent.
    """

    def __init__(
        self, message: str, *, status: int | None = None, retryable: bool = False, attempts: int = 1
    ) -> None:
        super().__init__(message)
        self.status = status
        self.retryable = retryable
        self.attempts = attempts


class MalformedResponse(ChatError):
    """The server answered with a success status, but the body is not a chat completion
    (not JSON, or no ``choices[0].message``). Never retried (``retryable`` is False): asking
    again would pay for the same answer. Being a :class:`ChatError` that is not retryable,
    it makes a judgement a ``judge_error`` and an agent's trial an ``agent_error`` (exit 1,
    not the infrastructure exit 75 of ``agentlib.run``), as the callers classify errors.
    """

    def __init__(self, message: str, *, status: int | None = 200, attempts: int = 1) -> None:
        super().__init__(message, status=status, retryable=False, attempts=attempts)


#: Largest token count taken at face value (int64-safe; no reply comes near it).
MAX_USAGE_COUNT = 2**53


def usage_count(value: Any) -> int | None:
    """A token count of a reply's ``usage`` as the int it claims to be, or None when the
    server did not report it or reported something that is no count (a bool, a fraction,
    a negative number, a string): unknown, never guessed."""
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    return value if 0 <= value <= MAX_USAGE_COUNT else None


@dataclass(frozen=True)
class ChatResponse:
    """The first choice of a chat completion.

    ``usage`` is the server's ``usage`` object as sent ({} when it sent none);
    :attr:`prompt_tokens` and :attr:`completion_tokens` read it (:func:`usage_count`).
    """

    text: str
    finish_reason: str | None
    model: str | None
    usage: dict[str, Any]
    attempts: int
    raw: dict[str, Any] = field(repr=False)

    @property
    def prompt_tokens(self) -> int | None:
        return usage_count(self.usage.get("prompt_tokens"))

    @property
    def completion_tokens(self) -> int | None:
        return usage_count(self.usage.get("completion_tokens"))


@dataclass
class ChatClient:
    """Client for ``POST {base_url}/chat/completions``.

    Parameters
    ----------
    base_url : the API root, e.g. ``http://127.0.0.1:8080/v1`` or
        ``https://api.openai.com/v1`` (a trailing ``/`` is ignored).
    model : the model name sent in every request.
    api_key_env : NAME of the environment variable holding the key, or None for no key.
        Read at each call; a named but unset variable is an error (not a silent no-auth call).
    temperature, max_tokens, seed : defaults for every call; each call may override them.
        ``seed`` None sends no seed.
    timeout : seconds per HTTP request (connect + read).
    max_retries : extra attempts after the first for transient failures.
    backoff_s, backoff_max_s : first backoff delay and its cap.
    """

    base_url: str
    model: str
    api_key_env: str | None = None
    temperature: float = 0.0
    max_tokens: int | None = 256
    seed: int | None = None
    timeout: float = 60.0
    max_retries: int = 4
    backoff_s: float = 0.5
    backoff_max_s: float = 8.0
    #: Whether the server is still there (e.g. its process has not exited); None: unknown.
    #: Asked after a connection fails: False fails this call and every later one at once.
    alive: Callable[[], bool] | None = field(default=None, compare=False, repr=False)
    #: Called before every request is sent, e.g. to start a server on its first use (it must
    #: be idempotent); what it raises reaches the caller as it is, never as a ChatError.
    connect: Callable[[], None] | None = field(default=None, compare=False, repr=False)
    #: HTTP requests sent by this client (every attempt counts): lets callers and tests
    #: see exactly how many calls a computation paid for.
    requests_sent: int = field(default=0, init=False, compare=False)

    def __post_init__(self) -> None:
        self.base_url = self.base_url.rstrip("/")
        if not self.base_url.startswith(("http://", "https://")):
            raise ValueError(f"base_url must start with http:// or https://: {self.base_url!r}")
        if self.max_retries < 0:
            raise ValueError("max_retries must be >= 0")

    # ------------------------------------------------------------------ public API

    def chat(
        self,
        messages: list[dict[str, str]],
        *,
        temperature: float | None = None,
        max_tokens: int | None = None,
        seed: int | None = None,
        stop: list[str] | None = None,
        **extra: Any,
    ) -> ChatResponse:
        """Send ``messages``; return the first choice. Raises :class:`ChatError`."""
        body: dict[str, Any] = {
            "model": self.model,
            "messages": messages,
            "temperature": self.temperature if temperature is None else temperature,
        }
        tokens = self.max_tokens if max_tokens is None else max_tokens
        if tokens is not None:
            body["max_tokens"] = tokens
        seed = self.seed if seed is None else seed
        if seed is not None:
            body["seed"] = int(seed)
        if stop:
            body["stop"] = list(stop)
        body.update(extra)
        data, attempts = self._post_json("/chat/completions", body)
        try:
            choice = data["choices"][0]
            text = choice["message"].get("content") or ""
        except (KeyError, IndexError, TypeError, AttributeError) as exc:
            raise MalformedResponse(
                f"malformed chat completion (no choices[0].message): {exc!r}", attempts=attempts
            ) from exc
        return ChatResponse(
            text=text,
            finish_reason=choice.get("finish_reason"),
            model=data.get("model"),
            # a server may send usage as null or as something that is no object
            usage=data["usage"] if isinstance(data.get("usage"), dict) else {},
            attempts=attempts,
            raw=data,
        )

    def complete(self, prompt: str, **kwargs: Any) -> str:
        """One user message in, the reply text out."""
        return self.chat([{"role": "user", "content": prompt}], **kwargs).text

    # ------------------------------------------------------------------ transport

    def _headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self.api_key_env:
            key = os.environ.get(self.api_key_env)
            if not key:
                raise ChatError(
                    f"environment variable {self.api_key_env} (the API key) is not set",
                    retryable=False,
                    attempts=0,
                )
            headers["Authorization"] = f"Bearer {key}"
        return headers

    def _delay(self, attempt: int, retry_after: str | None) -> float:
        delay = min(self.backoff_max_s, self.backoff_s * (2**attempt))
        if retry_after:
            try:
                delay = min(self.backoff_max_s, max(delay, float(retry_after)))
            except ValueError:
                pass
        return delay

    def _post_json(self, path: str, body: dict[str, Any]) -> tuple[dict[str, Any], int]:
        payload = json.dumps(body).encode("utf-8")
        url = self.base_url + path
        if self.connect is not None:
            self.connect()
        dead = _DEAD.get(self.base_url)
        if dead is not None:
            raise ChatError(f"not sent to {url}: {dead}", retryable=False, attempts=0)
        last: ChatError | None = None
        refused = 0
        for attempt in range(self.max_retries + 1):
            request = urllib.request.Request(
                url, data=payload, headers=self._headers(), method="POST"
            )
            retry_after = None
            self.requests_sent += 1
            try:
                with urllib.request.urlopen(request, timeout=self.timeout) as response:
                    raw, status = response.read(), response.status
                try:
                    return json.loads(raw), attempt + 1
                except ValueError:  # JSONDecodeError, or bytes that are not text at all
                    # Outside the loop's handlers on purpose: a success status whose body is
                    # not JSON is the server's answer, not a fault that another try cures.
                    raise MalformedResponse(
                        f"HTTP {status} from {url} is not JSON: {raw[:200]!r}",
                        status=status,
                        attempts=attempt + 1,
                    ) from None
            except urllib.error.HTTPError as exc:
                detail = exc.read()[:300].decode("utf-8", "replace")
                retryable = exc.code in RETRYABLE_STATUS or exc.code >= 500
                last = ChatError(
                    f"HTTP {exc.code} from {url}: {detail}",
                    status=exc.code,
                    retryable=retryable,
                    attempts=attempt + 1,
                )
                retry_after = exc.headers.get("Retry-After") if exc.headers else None
                if not retryable:
                    raise last from None
            except TimeoutError as exc:
                last = ChatError(
                    f"timeout after {self.timeout}s calling {url}: {exc}",
                    retryable=True,
                    attempts=attempt + 1,
                )
            except (urllib.error.URLError, ConnectionError, OSError) as exc:
                reason = getattr(exc, "reason", exc)
                if isinstance(reason, (TimeoutError, socket.timeout)):
                    message = f"timeout after {self.timeout}s calling {url}"
                else:
                    message = f"cannot reach {url}: {reason}"
                refused += isinstance(reason, ConnectionRefusedError)
                last = ChatError(message, retryable=True, attempts=attempt + 1)
                if self.alive is not None and not self.alive():
                    _DEAD[self.base_url] = "the server's process is gone (known dead)"
                    raise ChatError(
                        f"{message}; the server's process is gone: not retried",
                        retryable=False,
                        attempts=attempt + 1,
                    ) from None
            if attempt < self.max_retries:
                time.sleep(self._delay(attempt, retry_after))
        assert last is not None
        if refused == self.max_retries + 1:
            # nothing listens there any more: the next calls fail at once
            _DEAD[self.base_url] = (
                f"every one of {refused} attempts of an earlier call was refused (known dead)"
            )
        raise last
