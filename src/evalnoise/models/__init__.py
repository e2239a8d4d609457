"""Language models for agents and judges: a managed local server and a portable client.

- :mod:`evalnoise.models.server` — ``LlamaServer``: llama-cpp-python's OpenAI-compatible
  server on 127.0.0.1 (free port, health check, process-group stop, log file).
- :mod:`evalnoise.models.client` — ``ChatClient``: chat completions over HTTP with retries
  and backoff, standard library only; the same client talks to OpenAI, vLLM, Ollama and
  llama.cpp.
- :mod:`evalnoise.models.agent_images` — build the images of the agents in ``agents/`` on
  the runner's base image, calling a host-served model (``http``) or loading llama-cpp-python
  and the GGUF inside the trial container (``local``).

The names below are loaded on first access (PEP 562 ``__getattr__``): a judge that imports
the client does not import the server, and neither is imported by importing the package.
"""

from __future__ import annotations

from typing import Any

from evalnoise import _lazy

__all__ = [
    "DEFAULT_MODEL_ALIAS",
    "ChatClient",
    "ChatError",
    "ChatResponse",
    "LlamaServer",
    "ServerConfig",
    "ServerError",
    "default_model_path",
]

_MODULES = {
    "ChatClient": "client",
    "ChatError": "client",
    "ChatResponse": "client",
    "DEFAULT_MODEL_ALIAS": "server",
    "LlamaServer": "server",
    "ServerConfig": "server",
    "ServerError": "server",
    "default_model_path": "server",
}


def __getattr__(name: str) -> Any:
    return _lazy.load(globals(), _MODULES, name)


def __dir__() -> list[str]:
    return _lazy.names(globals(), __all__)
