"""LLM judge: does the predicted answer contain the ground truth?

The default prompt is Appendix B of Mustahsan et al. ("Stochasticity in Agentic
Evaluations"), with three named variables: ``{question}``, ``{predicted_answer}`` and
``{target}``. Any template with the same variables can replace it; only those three
placeholders are substituted (other braces are left alone), in one pass.

Structured output
-----------------
The judge asks the server for a *structured* reply with constrained decoding, so the form of
the reply can always be read while the template's wording stays the paper's:
``response_format={"type": "json_object", "schema": VERDICT_SCHEMA}`` (llama.cpp's server,
and servers that take a schema the same way) or the OpenAI form ``{"type": "json_schema",
...}``. With ``structured="auto"`` (the default) the first call finds which one the server
honours (llama-cpp-python 0.3.36 answers the OpenAI form with HTTP 500) and falls back to
plain text and :func:`parse_decision` for a server that takes neither. A structured reply is
still validated: a schema the server failed to convert silently yields unconstrained JSON.
No user-supplied grammar is ever forwarded (a malformed GBNF grammar crashes llama.cpp).

Modes
-----
- ``verdict`` (the paper): the model decides TRUE/FALSE.
- ``extract``: the model only *extracts* the final answer from the prediction; the
  comparison with the reference is done in code by a deterministic scorer. A small model
  that cannot judge can often extract. The answer's schema follows the reference's type
  (:func:`evalnoise.scorers.answer_types.answer_spec`): a number is a digits-only string
  compared by the ``numeric`` scorer, a choice an ``enum`` of the labels compared as labels,
  free text a bounded string compared by ``exact``; each kind has its own default prompt
  (:data:`evalnoise.scorers.answer_types.EXTRACT_TEMPLATES`), none with a placeholder the
  model could copy. A structured answer outside its schema (a server that did not apply the
  schema) is unparseable, never read as an answer.

Semantics
---------
- A text reply's decision is read from its **last** ``Decision:`` line, tolerating case,
  quotes, markdown (``**Decision:** TRUE``, ``"Decision:" ("FALSE")``, ``### Decision`` with
  the verdict on the next line). A line naming both TRUE and FALSE (an echo of the output
  format) is ambiguous. A reply that is nothing but ``TRUE`` or ``FALSE`` is accepted.
- An unparseable reply, or a call that still fails after the client's retries, gives
  ``status='judge_error'`` and ``correct=None`` — never a silent FALSE.
- Infrastructure outcomes (``timeout``, ``oom_killed``, ``infra_error``) are never sent to
  the judge: ``status='skipped_infra'``, ``correct=None``.
- One judgement (k=1) is made at temperature 0. With ``samples=k>1`` the judge is sampled k
  times at ``sample_temperature>0`` with distinct seeds ``seed, seed+1, …``; the trial's
  judge score is the share of TRUE votes (the judge's expected verdict, so its own noise is
  averaged, not hidden), ``correct`` the majority (None on a tie); any failed sample makes
  it a ``judge_error``. Every vote is kept (``votes``) for the judge's variance component;
  :func:`agreement` summarises the judge's agreement with itself (scorer noise).
- A persistent cache (:class:`JudgeCache`, one sqlite3 file in rollback-journal mode, safe
  for concurrent writers also on a network file system) stores every successful
  sample under sha256(judge model, template hash, question, target, prediction) and the
  sample's (temperature, seed): rescoring, or raising k, never pays for a judgement twice.
  A ``judge_error`` is never cached, so a rerun retries exactly the failures.
- Cost: every result says what it cost (``calls``: samples sent to the server, each once
  however many HTTP retries or structured-form probes it took; ``cached``: samples answered
  from the cache or this judge's memory, free; the tokens the server reported for the calls'
  replies, None when a call's reply did not report them or the call failed, 0 with no call).
  A cached sample costs nothing now, even if an earlier run paid for it.

The prompts and their hash are :mod:`evalnoise.scorers.judge_template`'s (re-exported here),
so the pipeline computes a judge's hash without importing this module or its model client.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
import sqlite3
import time
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path

from evalnoise.models.client import ChatClient, ChatError, ChatResponse
from evalnoise.schema import INFRA_STATUSES
from evalnoise.scorers.answer_types import AnswerSpec, answer_spec, same_choice
from evalnoise.scorers.judge_replies import (
    EXTRACT_SCHEMA,
    STRUCTURED_FORMS,
    VERDICT_SCHEMA,
    parse_decision,
    parse_structured,
    response_format,
)
from evalnoise.scorers.judge_template import (
    DEFAULT_TEMPLATE,
    EXTRACT_TEMPLATE,
    MODES,
    PARSER_VERSION,
    judge_hash,
    mode_templates,
    template_hash,
)
from evalnoise.scorers.verdicts import (
    CALL_FAILED,
    JUDGE_ERROR,
    NO_PREDICTION,
    OK,
    SKIPPED_INFRA,
    JudgeResult,
)

__all__ = [
    "CALL_FAILED",
    "DEFAULT_TEMPLATE",
    "EXTRACT_SCHEMA",
    "EXTRACT_TEMPLATE",
    "JUDGE_ERROR",
    "MODES",
    "NO_PREDICTION",
    "OK",
    "PARSER_VERSION",
    "SKIPPED_INFRA",
    "STRUCTURED_FORMS",
    "VERDICT_SCHEMA",
    "Agreement",
    "JudgeCache",
    "JudgeResult",
    "LLMJudge",
    "agreement",
    "cache_key",
    "judge_hash",
    "parse_decision",
    "parse_structured",
    "render_template",
    "response_format",
    "template_hash",
]

#: HTTP statuses by which a server says it does not take a ``response_format``
_UNSUPPORTED = frozenset({400, 404, 415, 422, 500, 501})

_VARIABLES = ("question", "predicted_answer", "target")
_PLACEHOLDER = re.compile(r"\{(question|predicted_answer|target)\}")


def render_template(template: str, *, question: str, predicted_answer: str, target: str) -> str:
    """Substitute the three named variables in one pass; other braces stay as they are."""
    values = {"question": question, "predicted_answer": predicted_answer, "target": target}
    return _PLACEHOLDER.sub(lambda m: values[m.group(1)], template)


def _check_template(template: str, mode: str = "verdict") -> None:
    # extract mode never shows the model the reference answer
    needed = ("predicted_answer", "target") if mode == "verdict" else ("predicted_answer",)
    missing = [v for v in needed if "{" + v + "}" not in template]
    if missing:
        raise ValueError("judge template lacks {" + "}, {".join(missing) + "}")


def cache_key(model: str, template_sha: str, question: str, target: str, prediction: str) -> str:
    """sha256 of (judge model, template hash, question, target, prediction)."""
    blob = json.dumps(
        [model, template_sha, question, target, prediction],
        ensure_ascii=False,
        separators=(",", ":"),
    )
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


# ------------------------------------------------------------------------------- cache


#: SQLite's busy timeout: seconds a cache call waits for another process's lock.
CACHE_BUSY_TIMEOUT_S = 60.0


class JudgeCache:
    """Successful judge samples in one sqlite3 file, shared by every process that judges
    (rollback journal, see below). Keys: :func:`cache_key` and a sample id (temperature and
    seed)."""

    def __init__(self, path: str | Path, *, busy_timeout_s: float = CACHE_BUSY_TIMEOUT_S) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # ``timeout`` is SQLite's busy timeout. Autocommit (isolation_level=None): every write
        # below is its own BEGIN IMMEDIATE transaction, so a writer takes the write lock up
        # front and waits for it, instead of upgrading a read lock — which SQLite refuses at
        # once, without waiting, when another writer holds it.
        self._db = sqlite3.connect(str(self.path), timeout=busy_timeout_s, isolation_level=None)
        # A rollback journal, not WAL: WAL coordinates processes through shared memory (the
        # mmap'd -shm index), which processes on different hosts do not share, so SQLite
        # documents that WAL does not work over a network file system — and cluster users
        # keep results on NFS. DELETE mode needs only the file locks such file systems
        # provide, and setting it converts a cache file in WAL mode. In it a writer excludes
        # readers for the moment of a write; the busy timeout waits that out.
        mode = self._db.execute("PRAGMA journal_mode=DELETE").fetchone()[0]
        if str(mode).lower() != "delete":
            raise sqlite3.OperationalError(f"{self.path}: journal_mode is {mode!r}, not delete")
        with self._write():
            self._db.execute(
                "CREATE TABLE IF NOT EXISTS judgements ("
                " key TEXT NOT NULL, sample TEXT NOT NULL, correct INTEGER NOT NULL,"
                " explanation TEXT, reply TEXT, model TEXT, template_hash TEXT,"
                " created_at REAL, PRIMARY KEY (key, sample))"
            )

    @contextlib.contextmanager
    def _write(self) -> Iterator[None]:
        """One write transaction: committed if the block succeeds, else rolled back."""
        self._db.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")

    def get(self, key: str, sample: str) -> tuple[bool, str, str] | None:
        row = self._db.execute(
            "SELECT correct, explanation, reply FROM judgements WHERE key=? AND sample=?",
            (key, sample),
        ).fetchone()
        return None if row is None else (bool(row[0]), row[1] or "", row[2] or "")

    def put(
        self,
        key: str,
        sample: str,
        correct: bool,
        explanation: str,
        reply: str,
        model: str,
        template_sha: str,
    ) -> None:
        with self._write():
            self._db.execute(
                "INSERT OR REPLACE INTO judgements VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (key, sample, int(correct), explanation, reply, model, template_sha, time.time()),
            )

    def __len__(self) -> int:
        return int(self._db.execute("SELECT COUNT(*) FROM judgements").fetchone()[0])

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> JudgeCache:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()


# ------------------------------------------------------------------------------- judge


class _Cost:
    """What one judgement's calls cost: calls made and the token totals their replies
    reported (a total with an unreported term is unknown: None)."""

    def __init__(self) -> None:
        self.calls = 0
        self.prompt_tokens: int | None = 0
        self.completion_tokens: int | None = 0

    def add(self, response: ChatResponse | None) -> None:
        """Count one call; ``response`` None: it failed, what it cost is unknown."""
        self.calls += 1
        prompt = None if response is None else response.prompt_tokens
        completion = None if response is None else response.completion_tokens
        self.prompt_tokens = _plus(self.prompt_tokens, prompt)
        self.completion_tokens = _plus(self.completion_tokens, completion)


def _plus(total: int | None, value: int | None) -> int | None:
    """A sum with an unknown term is unknown."""
    return None if total is None or value is None else total + value


class LLMJudge:
    """An LLM judge over an OpenAI-compatible :class:`ChatClient`.

    Parameters
    ----------
    client : the judge model's client (its ``model`` names the judge in the cache key).
    template : prompt with ``{question}``, ``{predicted_answer}``, ``{target}``.
    cache : a :class:`JudgeCache`, a path to its sqlite file, or None (memory only).
    samples : k judgements per answer; k=1 uses temperature 0.
    sample_temperature : temperature when k>1 (must be > 0).
    seed : seed of the first sample; sample i uses ``seed + i``.
    max_tokens : reply budget per judgement; in ``extract`` mode never less than the
        longest answer of the reference's schema needs
        (:attr:`evalnoise.scorers.answer_types.AnswerSpec.reply_tokens`).
    mode : ``verdict`` (the model decides) or ``extract`` (the model extracts the answer and
        code compares it with the reference).
    structured : ``auto`` (find the form the server honours on the first call), one of
        :data:`STRUCTURED_FORMS`, or ``text``.
    compare : ``(extracted, target) -> bool`` for ``extract`` mode, for every answer kind;
        default: by the reference's kind (numbers: the numeric scorer with
        ``numeric_options``; choices: the same label; text: the exact scorer).
    numeric_options : the numeric scorer's options (``rel_tol``, ``abs_tol``) in
        ``extract`` mode.
    """

    def __init__(
        self,
        client: ChatClient,
        *,
        template: str = DEFAULT_TEMPLATE,
        cache: JudgeCache | str | Path | None = None,
        samples: int = 1,
        sample_temperature: float = 0.7,
        seed: int = 0,
        max_tokens: int = 512,
        mode: str = "verdict",
        structured: str = "auto",
        compare=None,
        numeric_options: dict | None = None,
    ) -> None:
        if mode not in MODES:
            raise ValueError(f"judge mode must be one of {MODES}, not {mode!r}")
        if structured != "auto" and structured not in STRUCTURED_FORMS:
            raise ValueError(
                f"structured must be 'auto' or one of {STRUCTURED_FORMS}, not {structured!r}"
            )
        #: the prompt of each answer kind (one template for all, unless extract's defaults)
        self.templates = mode_templates(template, mode)
        if mode == "extract" and template == DEFAULT_TEMPLATE:
            template = EXTRACT_TEMPLATE
        for text in set(self.templates.values()):
            _check_template(text, mode)
        if samples < 1:
            raise ValueError("samples must be >= 1")
        if samples > 1 and sample_temperature <= 0:
            raise ValueError("repeated judging needs sample_temperature > 0")
        self.client = client
        self.template = template
        self.cache = cache if isinstance(cache, JudgeCache) or cache is None else JudgeCache(cache)
        self.samples = samples
        self.sample_temperature = sample_temperature
        self.seed = seed
        self.max_tokens = max_tokens
        self.mode = mode
        self.structured = structured
        #: the structured form in use: known once a call succeeded (or fixed by the caller)
        self.form: str | None = None if structured == "auto" else structured
        self._untried = list(STRUCTURED_FORMS) if structured == "auto" else [structured]
        self.compare = compare
        self.numeric_options = dict(numeric_options or {})
        # the mode, the prompts and the answer schemas are part of what a verdict means
        self._template_sha = judge_hash(template, mode)
        self._memo: dict[tuple[str, str], tuple[bool, str, str]] = {}
        #: judge calls that reached the model (cache and memo hits excluded)
        self.calls = 0

    @property
    def model(self) -> str:
        return self.client.model

    def template_hash(self) -> str:
        return self._template_sha

    def _plan(self) -> list[tuple[str, float, int]]:
        if self.samples == 1:
            return [(f"T0/seed{self.seed}", 0.0, self.seed)]
        t = self.sample_temperature
        return [(f"T{t:g}/seed{self.seed + i}", t, self.seed + i) for i in range(self.samples)]

    def judge(
        self, question: str, prediction: str | None, target: str, *, status: str = "ok"
    ) -> JudgeResult:
        """Judge one answer. ``status`` is the trial's status: infra outcomes are skipped."""
        if status in INFRA_STATUSES:
            return JudgeResult(
                None, SKIPPED_INFRA, f"infrastructure outcome {status!r}: not sent to the judge"
            )
        if prediction is None or not prediction.strip():
            return JudgeResult(
                False,
                NO_PREDICTION,
                "empty prediction: incorrect without asking the judge",
                score=0.0,
            )
        key = cache_key(self.model, self._template_sha, question, target, prediction)
        spec = answer_spec(target, question)
        prompt = None
        votes: list[bool | None] = []
        explanations: list[str] = []
        replies: list[str] = []
        problems: list[str] = []
        cached = 0
        cost = _Cost()
        for sample_id, temperature, seed in self._plan():
            hit = self._memo.get((key, sample_id))
            if hit is None and self.cache is not None:
                hit = self.cache.get(key, sample_id)
            if hit is not None:
                cached += 1
                verdict, explanation, reply = hit
                votes.append(verdict)
                explanations.append(explanation)
                replies.append(reply)
                continue
            if prompt is None:
                prompt = render_template(
                    self.templates[spec.kind],
                    question=question,
                    predicted_answer=prediction,
                    target=target,
                )
            self.calls += 1
            try:
                response, form = self._ask(prompt, temperature, seed, spec)
            except ChatError as exc:
                cost.add(None)
                votes.append(None)
                explanations.append("")
                replies.append("")
                problems.append(f"{CALL_FAILED} after {exc.attempts} attempt(s): {exc}")
                # the answer is a judge_error whatever the other samples say: do not pay for
                # them (or wait out their retries) while the server is down
                break
            cost.add(response)
            reply = response.text
            verdict, explanation, problem = self._read(reply, form, target, spec)
            votes.append(verdict)
            explanations.append(explanation)
            replies.append(reply)
            if verdict is None:
                problems.append(f"unparseable judge reply ({problem}): {reply[:300]!r}")
                continue
            self._memo[(key, sample_id)] = (verdict, explanation, reply)
            if self.cache is not None:
                self.cache.put(
                    key, sample_id, verdict, explanation, reply, self.model, self._template_sha
                )
        return replace(
            self._combine(votes, explanations, replies, problems, cached),
            calls=cost.calls,
            prompt_tokens=cost.prompt_tokens,
            completion_tokens=cost.completion_tokens,
        )

    def _ask(
        self, prompt: str, temperature: float, seed: int, spec: AnswerSpec
    ) -> tuple[ChatResponse, str]:
        """The response and the structured form it was asked in. Until a form has worked, a
        refusal of one (an HTTP status in ``_UNSUPPORTED``, asked without retries) moves on
        to the next; plain text is the last resort."""
        schema, budget = VERDICT_SCHEMA, self.max_tokens
        if self.mode == "extract":
            # never fewer tokens than the longest answer the schema admits needs
            schema, budget = spec.schema, max(self.max_tokens, spec.reply_tokens)
        while True:
            form = self.form or self._untried[0]
            fmt = response_format(form, self.mode, schema)
            extra = {"response_format": fmt} if fmt else {}
            probing = self.form is None and len(self._untried) > 1
            client = replace(self.client, max_retries=0) if probing else self.client
            try:
                reply = client.chat(
                    [{"role": "user", "content": prompt}],
                    temperature=temperature,
                    seed=seed,
                    max_tokens=budget,
                    **extra,
                )
            except ChatError as exc:
                if probing and exc.status in _UNSUPPORTED:
                    self._untried.pop(0)
                    continue
                raise
            finally:
                if client is not self.client:
                    self.client.requests_sent += client.requests_sent
            self.form = form
            return reply, form

    def _read(
        self, reply: str, form: str, target: str, spec: AnswerSpec
    ) -> tuple[bool | None, str, str]:
        """``(verdict, explanation, problem)`` of a reply in ``form``."""
        if form == "text":
            if self.mode == "verdict":
                return parse_decision(reply)
            value, explanation, problem = reply.strip(), f"extracted answer: {reply!r}", ""
        else:
            value, explanation, problem = parse_structured(reply, self.mode, spec)
        if value is None or self.mode == "verdict":
            return value, explanation, problem  # type: ignore[return-value]
        return self._same(str(value), target, spec.kind), explanation, ""

    def _same(self, answer: str, target: str, kind: str) -> bool:
        """The extracted answer against the reference, by the reference's kind."""
        if self.compare is not None:
            return bool(self.compare(answer, target))
        from evalnoise.scorers.deterministic import exact, numeric

        if kind == "number":
            return bool(numeric(answer, target, **self.numeric_options))
        if kind == "choice":
            return same_choice(answer, target)
        return bool(exact(answer, target))

    def _combine(
        self,
        votes: list[bool | None],
        explanations: list[str],
        replies: list[str],
        problems: list[str],
        cached: int,
    ) -> JudgeResult:
        common = {"votes": tuple(votes), "cached": cached, "replies": tuple(replies)}
        if problems:
            return JudgeResult(None, JUDGE_ERROR, "; ".join(problems)[:2000], **common)
        if len(votes) == 1:
            return JudgeResult(votes[0], OK, explanations[0], score=float(bool(votes[0])), **common)
        n_true = sum(1 for v in votes if v)
        n_false = len(votes) - n_true
        tally = f"{len(votes)} samples: {n_true} TRUE, {n_false} FALSE"
        majority = None if n_true == n_false else n_true > n_false
        first = next(
            (e for v, e in zip(votes, explanations, strict=True) if v == majority),
            explanations[0],
        )
        return JudgeResult(
            majority, OK, f"{tally}. {first}"[:2000], score=n_true / len(votes), **common
        )

    def close(self) -> None:
        if self.cache is not None:
            self.cache.close()


@dataclass(frozen=True)
class Agreement:
    """How much the judge agrees with itself over k samples per answer.

    ``parse_rate`` — fraction of all samples that gave a usable decision; the agreement
    figures use the parsed samples of answers with at least two of them (``n_items``).
    """

    n_items: int
    samples: int
    parse_rate: float
    pairwise: float
    modal: float
    unanimous: float


def agreement(results: Iterable[JudgeResult]) -> Agreement:
    """Self-agreement of repeated judgements (scorer noise).

    ``pairwise`` — mean over answers of the fraction of pairs of parsed samples that agree;
    ``modal`` — mean fraction of parsed samples equal to the answer's most common verdict;
    ``unanimous`` — fraction of answers whose parsed samples all agree.
    """
    results = list(results)
    all_votes = [v for r in results if len(r.votes) > 1 for v in r.votes]
    k = max((len(r.votes) for r in results), default=0)
    parse_rate = (
        (sum(v is not None for v in all_votes) / len(all_votes)) if all_votes else float("nan")
    )
    rows = [[v for v in r.votes if v is not None] for r in results if len(r.votes) > 1]
    rows = [row for row in rows if len(row) > 1]
    if not rows:
        nan = float("nan")
        return Agreement(0, k, parse_rate, nan, nan, nan)
    pairwise, modal, unanimous = [], [], []
    for votes in rows:
        n = len(votes)
        counts = Counter(votes)
        agree_pairs = sum(c * (c - 1) / 2 for c in counts.values())
        pairwise.append(agree_pairs / (n * (n - 1) / 2))
        modal.append(max(counts.values()) / n)
        unanimous.append(float(len(counts) == 1))
    return Agreement(len(rows), k, parse_rate, _mean(pairwise), _mean(modal), _mean(unanimous))


def _mean(values: list[float]) -> float:
    return sum(values) / len(values)
