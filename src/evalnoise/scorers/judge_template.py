"""The LLM judge's prompt templates and their hash, without the judge.

What a judge's verdict means besides its model and the three inputs (question, predicted
answer, reference) is its prompt, its mode and its parser's version. :func:`judge_hash` is
that meaning as one sha256 (hex) digest: the judge's cache key has it
(:class:`evalnoise.scorers.judge.LLMJudge`), and the pipeline passes it to Snakemake as the
judge rules' ``template_hash`` param, so a changed prompt rescores the trials. Kept apart
from :mod:`evalnoise.scorers.judge` (HTTP client, cache, parsing) so that computing the hash
while Snakemake builds the DAG imports no model code.

- ``template_hash(t) = sha256("evalnoise-judge-parser-" + PARSER_VERSION + "\\n" + t)``
- ``verdict`` mode: ``judge_hash = template_hash(prompt + "\\n--mode=verdict")``
- ``extract`` mode: ``judge_hash = template_hash(⟨"--kind--\\n" + prompt of kind, for each
  answer kind in sorted order, joined by "\\n"⟩ + "\\n--mode=extract\\n--answer-schema=" +
  SCHEMA_VERSION)`` (:data:`evalnoise.scorers.answer_types.SCHEMA_VERSION`).
"""

from __future__ import annotations

import hashlib

from evalnoise.scorers.answer_types import EXTRACT_TEMPLATES, SCHEMA_VERSION

__all__ = [
    "DEFAULT_TEMPLATE",
    "EXTRACT_TEMPLATE",
    "MODES",
    "PARSER_VERSION",
    "judge_hash",
    "mode_templates",
    "template_hash",
]

#: Appendix B of the paper, verbatim except the Markdown code fences around the input and
#: output sections (typesetting in the paper, not part of the prompt).
DEFAULT_TEMPLATE = """===Task===

I need your help in evaluating an answer provided by an LLM against a ground truth answer. \
Your task is to determine if the ground truth answer is present in the LLM's response. \
Please analyze the provided data and make a decision.

===Instructions===

1. Carefully compare the "Predicted Answer" with the "Ground Truth Answer".
2. Consider the substance of the answers - look for equivalent information or correct \
answers. Do not focus on exact wording unless the exact wording is crucial to the meaning.
3. Your final decision should be based on whether the meaning and the vital facts of the \
"Ground Truth Answer" are present in the "Predicted Answer:"

===Input Data===
Question: {question}
Predicted Answer: {predicted_answer}
Ground Truth Answer: {target}

===Output Format===
Provide your final evaluation in the following format:
"Explanation:" (How you made the decision?)
"Decision:" ("TRUE" or "FALSE")
Please proceed with the evaluation.
"""

#: Extract-then-compare: the model only reads the final answer out of the prediction (the
#: prompt of a number; every kind's is in :data:`EXTRACT_TEMPLATES`). Measured with
#: SmolLM2-135M on 30 generated arithmetic items (15 right, 15 wrong answers in three
#: phrasings): 30 of 30 parsed, 29 of 30 verdicts equal to the reference, no false accept —
#: where the paper's verdict template agreed on 12 of 30.
EXTRACT_TEMPLATE = EXTRACT_TEMPLATES["number"]
#: what the judge does: decide TRUE/FALSE (the paper), or extract the answer for code to compare
MODES = ("verdict", "extract")

#: Bumped whenever :func:`evalnoise.scorers.judge_replies.parse_decision` changes what a reply
#: means; part of the template hash, so a parser change invalidates cached verdicts.
PARSER_VERSION = "2"


def template_hash(template: str = DEFAULT_TEMPLATE) -> str:
    """sha256 (hex) of the template and the parser version: what a verdict depends on
    besides the model and the three inputs. Give it to Snakemake as a param."""
    digest = hashlib.sha256()
    digest.update(f"evalnoise-judge-parser-{PARSER_VERSION}\n".encode())
    digest.update(template.encode("utf-8"))
    return digest.hexdigest()


def mode_templates(template: str | None, mode: str) -> dict[str, str]:
    """The prompt of each answer kind: ``template`` for all, or the mode's defaults."""
    if mode == "extract":
        if template is None or template in (DEFAULT_TEMPLATE, EXTRACT_TEMPLATE):
            return dict(EXTRACT_TEMPLATES)
        return dict.fromkeys(EXTRACT_TEMPLATES, template)
    return dict.fromkeys(EXTRACT_TEMPLATES, DEFAULT_TEMPLATE if template is None else template)


def judge_hash(template: str | None = None, mode: str = "verdict") -> str:
    """What a judge's verdict means besides its model and the three inputs: the
    :func:`template_hash` of its prompt (``None``: the mode's defaults) and its mode; in
    ``extract`` mode also every kind's prompt and the answer schemas' version
    (:data:`evalnoise.scorers.answer_types.SCHEMA_VERSION`). Part of the cache key."""
    if mode != "extract":
        return template_hash(f"{mode_templates(template, mode)['text']}\n--mode={mode}")
    prompts = mode_templates(template, mode)
    text = "\n".join(f"--{kind}--\n{prompts[kind]}" for kind in sorted(prompts))
    return template_hash(f"{text}\n--mode={mode}\n--answer-schema={SCHEMA_VERSION}")
