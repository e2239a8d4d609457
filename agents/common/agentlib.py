"""What the evalnoise agents share: the contract's input/output, model backends, a calculator.

Standard library only (plus ``llama_cpp`` when the model runs inside the container). The
agent programs (``agents/chat/agent.py``, ``agents/tool_agent/agent.py``) run inside trial
containers: their image holds this file, ``evalnoise_client.py`` (a copy of
``src/evalnoise/models/client.py``) and the agent, side by side. On the host the same
programs run from the source tree and import the client from the evalnoise package.

Contract (see ``src/evalnoise/runner/contract.py``): the task is JSON at
``$EVALNOISE_TASK_FILE``; the answer goes to ``$EVALNOISE_OUTPUT`` as ``{"answer": ...}``;
the trial seed is ``$EVALNOISE_SEED32`` (31 bits, for llama.cpp's sampler).

Usage. Every model client made here (:func:`load_model`, :class:`HTTPModel`,
:class:`LocalModel`) adds each reply's OpenAI-style ``usage`` to one per-process tally
(:data:`USAGE`), and :func:`write_answer` puts it in the answer record, so no agent has to::

    {"answer": "42", "usage": {"model_calls": 2, "prompt_tokens": 310, "completion_tokens": 18}}

Unknown is null, a known zero is 0: ``model_calls`` counts the replies received (always
known: agentlib sees every call it makes); a token total is null as soon as one reply did
not report that count (a sum with an unknown term is unknown, never a smaller number).
An agent that loaded a model and never called it reports ``0`` calls and ``0`` tokens (a
measurement); an agent that never made a model client here writes no ``usage`` at all
(agentlib cannot know what it used), and the runner records nulls. An agent that passes
``usage=`` to :func:`write_answer` itself replaces the tally.

Agent settings are environment variables with the ``AGENT_`` prefix (``EVALNOISE_`` is the
runner's):

=========================== ======================================================= =========
variable                    meaning                                                 default
=========================== ======================================================= =========
``AGENT_BACKEND``           ``http`` (an OpenAI-compatible server) or ``local``      http
                            (llama_cpp loaded in this process)
``AGENT_BASE_URL``          http: the API root, e.g. ``http://127.0.0.1:8080/v1``   (required)
``AGENT_MODEL``             http: the model name                                    (required)
``AGENT_API_KEY_ENV``       http: NAME of the variable holding the API key          none
``AGENT_TIMEOUT_S``         http: seconds per request                               60
``AGENT_MAX_RETRIES``       http: retries of transient failures                     3
``AGENT_MODEL_PATH``        local: the GGUF file (``/opt/models/model.gguf``)       (image's)
``AGENT_N_CTX``             local: context length (memory grows with it)            2048
``AGENT_N_THREADS``         local: threads                                          1
``AGENT_TEMPERATURE``       sampling temperature                                    0.8
``AGENT_MAX_TOKENS``        tokens per model reply                                  256
``AGENT_MAX_STEPS``         tool agent: model calls at most                         4
=========================== ======================================================= =========

Exit status: 0 with an answer written; 75 (EX_TEMPFAIL) when the model endpoint stays
unreachable after retries — an infrastructure failure; anything else is the agent's error.
"""

from __future__ import annotations

import ast
import json
import math
import operator
import os
import sys
import time
from collections.abc import Callable
from typing import Any

# ---------------------------------------------------------------------------- contract


def read_task() -> dict[str, Any]:
    """The task JSON (``$EVALNOISE_TASK_FILE``); the question alone if only the env has it."""
    path = os.environ.get("EVALNOISE_TASK_FILE")
    if path and os.path.exists(path):
        with open(path, encoding="utf-8") as handle:
            return json.load(handle)
    question = os.environ.get("EVALNOISE_QUESTION")
    if question is None:
        raise SystemExit("agent: no task (EVALNOISE_TASK_FILE and EVALNOISE_QUESTION unset)")
    return {"question": question, "task_id": os.environ.get("EVALNOISE_TASK_ID")}


def trial_seed(task: dict[str, Any]) -> int:
    """The trial's 31-bit seed: ``$EVALNOISE_SEED32``, else the task's ``seed32``, else 0."""
    value = os.environ.get("EVALNOISE_SEED32", task.get("seed32", 0))
    return int(value) & 0x7FFFFFFF


def write_answer(answer: str, **extra: Any) -> None:
    """Write ``{"answer": answer, ...}`` to ``$EVALNOISE_OUTPUT`` and echo it on stdout.

    The record carries ``usage`` (:meth:`Usage.to_dict`) once a model client of this module
    exists, unless ``extra`` gives its own.
    """
    record = {"answer": answer, **extra}
    if "usage" not in record and USAGE is not None:
        record["usage"] = USAGE.to_dict()
    line = json.dumps(record, ensure_ascii=False)
    path = os.environ.get("EVALNOISE_OUTPUT")
    if path:
        tmp = path + ".tmp"
        with open(tmp, "w", encoding="utf-8") as handle:
            handle.write(line)
        os.replace(tmp, path)
    print(line, flush=True)


def setting(name: str, default: str | None = None) -> str:
    value = os.environ.get(name, default)
    if value is None:
        raise SystemExit(f"agent: {name} is not set")
    return value


# ------------------------------------------------------------------------------ models


def _client_module() -> Any:
    """The chat client: ``evalnoise_client`` inside the image, the package on the host."""
    try:
        import evalnoise_client as module
    except ImportError:
        from evalnoise.models import client as module
    return module


class Usage:
    """The model usage of this process: replies received and their token totals.

    ``prompt_tokens`` / ``completion_tokens`` start at 0 (nothing asked yet is a known zero)
    and become None for good when a reply lacks a valid count: the total is then unknown.
    """

    def __init__(self) -> None:
        self.model_calls = 0
        self.prompt_tokens: int | None = 0
        self.completion_tokens: int | None = 0

    def add(self, usage: Any) -> None:
        """Count one reply with its ``usage`` mapping (None or malformed: unknown tokens)."""
        count = _client_module().usage_count
        usage = usage if isinstance(usage, dict) else {}
        self.model_calls += 1
        self.prompt_tokens = _plus(self.prompt_tokens, count(usage.get("prompt_tokens")))
        self.completion_tokens = _plus(
            self.completion_tokens, count(usage.get("completion_tokens"))
        )

    def to_dict(self) -> dict[str, int | None]:
        return {
            "model_calls": self.model_calls,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
        }


def _plus(total: int | None, value: int | None) -> int | None:
    """A sum with an unknown term is unknown."""
    return None if total is None or value is None else total + value


#: This process's usage tally: None until a model client of this module is made.
USAGE: Usage | None = None


def _usage() -> Usage:
    global USAGE
    if USAGE is None:
        USAGE = Usage()
    return USAGE


class HTTPModel:
    """Chat completions from an OpenAI-compatible server (the model served by the host)."""

    def __init__(self) -> None:
        self.usage = _usage()
        self.client = _client_module().ChatClient(
            base_url=setting("AGENT_BASE_URL"),
            model=setting("AGENT_MODEL"),
            api_key_env=os.environ.get("AGENT_API_KEY_ENV") or None,
            timeout=float(setting("AGENT_TIMEOUT_S", "60")),
            max_retries=int(setting("AGENT_MAX_RETRIES", "3")),
            backoff_s=0.5,
        )
        self.name = f"http:{self.client.model}"

    def chat(
        self,
        messages: list[dict[str, str]],
        *,
        temperature: float,
        max_tokens: int,
        seed: int,
        stop: list[str] | None = None,
    ) -> str:
        reply = self.client.chat(
            messages, temperature=temperature, max_tokens=max_tokens, seed=seed, stop=stop
        )
        self.usage.add(reply.usage)
        return reply.text


class LocalModel:
    """llama_cpp in this process (the model inside the trial container).

    Memory: the GGUF is mmapped (page cache, reclaimable); the KV cache and compute
    buffers are anonymous memory that grows with ``AGENT_N_CTX`` and with the prompt.
    """

    def __init__(self) -> None:
        import llama_cpp  # only in images built with the llama runtime

        self.usage = _usage()
        threads = int(setting("AGENT_N_THREADS", "1"))
        model_path = setting("AGENT_MODEL_PATH", "/opt/models/model.gguf")
        started = time.monotonic()
        self.llm = llama_cpp.Llama(
            model_path=model_path,
            n_ctx=int(setting("AGENT_N_CTX", "2048")),
            n_threads=threads,
            n_threads_batch=threads,
            use_mlock=False,
            verbose=False,
        )
        self.load_s = time.monotonic() - started
        self.name = "local:" + os.path.basename(model_path)
        # the runtime's CPU feature line lands in the trial's stderr tail: a crash on another
        # machine can then be traced to the instruction set the library was built for
        info = llama_cpp.llama_print_system_info()
        log("llama.cpp " + (info.decode() if isinstance(info, bytes) else str(info)).strip())

    def chat(
        self,
        messages: list[dict[str, str]],
        *,
        temperature: float,
        max_tokens: int,
        seed: int,
        stop: list[str] | None = None,
    ) -> str:
        reply = self.llm.create_chat_completion(
            messages, temperature=temperature, max_tokens=max_tokens, seed=seed, stop=stop
        )
        self.usage.add(reply.get("usage"))
        return reply["choices"][0]["message"].get("content") or ""


def load_model() -> HTTPModel | LocalModel:
    backend = setting("AGENT_BACKEND", "http")
    if backend == "http":
        return HTTPModel()
    if backend == "local":
        return LocalModel()
    raise SystemExit(f"agent: AGENT_BACKEND must be http or local, not {backend!r}")


# -------------------------------------------------------------------------- calculator

_BINARY = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_UNARY = {ast.UAdd: operator.pos, ast.USub: operator.neg}
_FUNCTIONS = {
    "abs": abs,
    "round": round,
    "min": min,
    "max": max,
    "sum": sum,
    "sqrt": math.sqrt,
    "floor": math.floor,
    "ceil": math.ceil,
}
_CONSTANTS = {"pi": math.pi, "e": math.e}
MAX_EXPRESSION_CHARS = 300
MAX_POWER = 10_000
MAX_MAGNITUDE = 10**100
MAX_NODES = 200


class CalculatorError(ValueError):
    pass


def calculate(expression: str) -> int | float:
    """Evaluate an arithmetic Python expression safely (no names, attributes or calls
    beyond a few math functions; bounded size, powers and magnitudes)."""
    text = expression.strip().replace("×", "*").replace("÷", "/").replace("^", "**")
    text = text.replace("−", "-").rstrip("=").strip()
    if len(text) > MAX_EXPRESSION_CHARS:
        raise CalculatorError("expression too long")
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError as exc:
        raise CalculatorError(f"not an arithmetic expression: {exc.msg}") from None
    if sum(1 for _ in ast.walk(tree)) > MAX_NODES:
        raise CalculatorError("expression too large")
    return _check(_eval(tree.body))


def _check(value: Any) -> Any:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise CalculatorError("result is not a number")
    if isinstance(value, float) and not math.isfinite(value):
        raise CalculatorError("result is not finite")
    if abs(value) > MAX_MAGNITUDE:
        raise CalculatorError("result too large")
    return value


def _eval(node: ast.AST) -> Any:
    if (
        isinstance(node, ast.Constant)
        and isinstance(node.value, int | float)
        and not isinstance(node.value, bool)
    ):
        return _check(node.value)
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left, right = _eval(node.left), _eval(node.right)
        if isinstance(node.op, ast.Pow) and abs(right) > MAX_POWER:
            raise CalculatorError("exponent too large")
        try:
            value = _BINARY[type(node.op)](left, right)
        except ZeroDivisionError:
            raise CalculatorError("division by zero") from None
        except OverflowError:
            raise CalculatorError("result too large") from None
        if isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
            value = int(value)
        return _check(value)
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        return _check(_UNARY[type(node.op)](_eval(node.operand)))
    if isinstance(node, ast.Name) and node.id in _CONSTANTS:
        return _CONSTANTS[node.id]
    if isinstance(node, ast.Tuple | ast.List):
        return [_eval(e) for e in node.elts]
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in _FUNCTIONS
        and not node.keywords
    ):
        args = [_eval(a) for a in node.args]
        try:
            return _check(_FUNCTIONS[node.func.id](*args))
        except (TypeError, ValueError) as exc:
            raise CalculatorError(f"{node.func.id}: {exc}") from None
    raise CalculatorError(f"not allowed: {type(node).__name__}")


def log(message: str) -> None:
    """Progress on stderr (the runner keeps its tail)."""
    print(f"agent: {message}", file=sys.stderr, flush=True)


#: Exit status when the model endpoint stays unreachable after the client's retries
#: (EX_TEMPFAIL): an infrastructure failure, not a wrong answer.
EXIT_MODEL_UNAVAILABLE = 75


def run(main: Callable[[], int]) -> int:
    """Run an agent's ``main``; a model endpoint that stays down exits 75, not 1."""
    try:
        return main()
    except Exception as exc:
        if type(exc).__name__ == "ChatError" and getattr(exc, "retryable", False):
            log(f"model endpoint unavailable: {exc}")
            return EXIT_MODEL_UNAVAILABLE
        raise
