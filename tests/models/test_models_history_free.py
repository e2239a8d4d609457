"""A seeded reply of evalnoise's model server does not depend on what the server served
before, with prompts evaluated in batches (:class:`evalnoise.models.serve.HistoryFreeLlama`).

The reference is llama-cpp-python's own ``Llama`` loaded fresh for each request, which
evaluates the whole prompt in one batch: the server's replies (and, in process, the logits
its prompts leave) must be exactly those, after any history. The same history moves the
logits of a stock ``Llama`` that reuses its cache: the check can fail."""

from __future__ import annotations

import importlib.util
import json
import urllib.request

import numpy as np
import pytest
from model_stack import needs_model

from evalnoise.models import LlamaServer, ServerConfig
from evalnoise.models.server import SERVE_SCRIPT, default_model_path

pytestmark = [needs_model, pytest.mark.slow]

SETTINGS = {"n_ctx": 2048, "n_threads": 1, "n_threads_batch": 1, "seed": 0, "verbose": False}
QUESTION = "What is 58 + 41 - 55? Think step by step, then give the number."
#: a prompt after which a stock Llama's reuse moves the logits (measured: 3 of the 5 histories)
LONG = (
    "Question: what is 58 + 41 - 55? Let us think step by step about this arithmetic "
    "problem and give the answer. "
) * 2


def _serve_module():
    spec = importlib.util.spec_from_file_location("evalnoise_serve", SERVE_SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _fresh(cls=None):
    import llama_cpp

    return (cls or llama_cpp.Llama)(str(default_model_path()), n_ubatch=512, **SETTINGS)


def _prompt_logits(llama, tokens: list[int]) -> np.ndarray:
    """The logits the prompt leaves for its first reply token (one greedy step)."""
    steps = llama.generate(tokens, temp=0.0)
    next(steps)
    logits = np.ctypeslib.as_array(llama._ctx.get_logits(), shape=(llama._n_vocab,)).copy()
    steps.close()
    return logits


def _histories(llama) -> dict[str, tuple[list[list[int]], list[int]]]:
    """name → (prompts evaluated before, the prompt): each reaches a way llama-cpp-python
    reuses its cache."""
    tokens = lambda text: llama.tokenize(text.encode())  # noqa: E731
    prompt = tokens(LONG)
    reply = [int(t) for t, _ in zip(llama.generate(prompt, temp=0.0), range(31), strict=False)]
    return {
        "the same prompt again (all cached)": ([prompt], prompt),
        "a conversation: the prompt, its reply, a follow-up": (
            [prompt],
            prompt + reply + tokens(" And plus one?"),
        ),
        "the prompt and one more token": ([prompt], prompt + reply[:1]),
        "after another prompt": ([tokens("Name a colour, any colour.")], prompt),
        "after a prefix of it": ([prompt[:40]], prompt),
    }


def test_prompt_logits_are_a_fresh_models_after_any_history():
    import llama_cpp

    serve = _serve_module()
    fresh, references = _fresh(), {}
    for cls, history_free in ((serve.HistoryFreeLlama, True), (llama_cpp.Llama, False)):
        llama = _fresh(cls)
        moved = []
        for name, (before, prompt) in _histories(llama).items():
            for earlier in before:
                _prompt_logits(llama, earlier)
            if name not in references:
                fresh.reset()  # nothing cached: the whole prompt in one batch
                references[name] = _prompt_logits(fresh, prompt)
            if not np.array_equal(_prompt_logits(llama, prompt), references[name]):
                moved.append(name)
        if history_free:
            assert moved == [], f"{cls.__name__}: logits moved by the history: {moved}"
        else:
            # the check is sensitive: a stock model reusing its cache moves (bitwise)
            assert len(moved) >= 3, f"stock Llama moved only after {moved}"


def test_a_prompt_split_into_pieces_of_two_or_more_leaves_the_logits_of_one_batch():
    """What :class:`HistoryFreeLlama` rests on; a lone token is the exception."""
    import random

    llama = _fresh()
    prompt = llama.tokenize((LONG * 2).encode())
    whole = _evaluated(llama, [prompt])
    rng = random.Random(7)
    for _ in range(3):
        pieces, left = [], list(prompt)
        while left:
            size = rng.choice([2, 3, 5, 17, 32, 33, 64])
            size = len(left) if len(left) - size < 2 else size
            pieces.append(left[:size])
            left = left[size:]
        assert np.array_equal(_evaluated(llama, pieces), whole), [len(p) for p in pieces]
    alone = [prompt[:-3], prompt[-3:-2], prompt[-2:]]
    assert not np.array_equal(_evaluated(llama, alone), whole)


def _evaluated(llama, pieces: list[list[int]]) -> np.ndarray:
    llama.reset()
    for piece in pieces:
        llama.eval(piece)
    return np.ctypeslib.as_array(llama._ctx.get_logits(), shape=(llama._n_vocab,)).copy()


def _post(server: LlamaServer, payload: dict) -> dict:
    request = urllib.request.Request(
        server.base_url + "/chat/completions",
        data=json.dumps(payload).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=120) as response:
        return json.loads(response.read())


def test_the_servers_replies_are_a_fresh_models_whatever_it_served_before(tmp_path):
    from llama_cpp.server.model import LlamaProxy
    from llama_cpp.server.settings import ModelSettings

    serve = _serve_module()
    config = ServerConfig(n_ctx=1024, log_path=str(tmp_path / "server.log"))
    assert config.history_free and config.n_ubatch == 512
    ask = [{"role": "user", "content": QUESTION * 2}]

    def payload(messages, temperature, seed):
        return {"messages": messages, "temperature": temperature, "seed": seed, "max_tokens": 12}

    with LlamaServer(config) as server:
        first = _post(server, payload(ask, 0.8, 11))
        follow_up = [*ask, first["choices"][0]["message"], {"role": "user", "content": "+1?"}]
        asked = [
            payload(ask, 0.8, 11),
            payload([{"role": "user", "content": "Name a colour."}], 0.8, 3),
            payload(follow_up, 0.8, 5),
            payload(ask, 0.8, 11),  # again, after the others
            payload(ask, 0.8, 11),  # at once again: the whole prompt cached
            payload(ask, 0.0, 2),
        ]
        replies = [first] + [_post(server, body) for body in asked[1:]]
    settings = ModelSettings(
        model=str(default_model_path()),
        model_alias=config.model_alias,
        n_ctx=1024,
        n_threads=1,
        n_threads_batch=1,
        n_ubatch=512,
        seed=0,
        use_mlock=False,
    )
    for body, reply in zip(asked, replies, strict=True):
        # the server's own request handling, on a stock model loaded for this request alone
        fresh = serve.chat_completion(LlamaProxy(models=[settings]), body)
        assert reply["choices"] == fresh["choices"]
        assert reply["usage"] == fresh["usage"]


@pytest.mark.parametrize(
    ("n_ubatch", "server_module", "history_free"),
    [
        (1, None, True),
        (512, None, True),
        (None, None, True),
        (3, None, True),
        (2, None, False),
        (512, "llama_cpp.server", False),
        (1, "llama_cpp.server", True),
    ],
)
def test_which_servers_are_history_free(n_ubatch, server_module, history_free):
    config = ServerConfig(n_ubatch=n_ubatch, server_module=server_module)
    assert config.history_free is history_free
