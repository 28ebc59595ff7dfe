"""A plain, per-example implementation of Q² in the released code's order: the yardstick the tests
check the batched engine against, and the baseline of the speed benchmark. Written from the rules
(not from the engine), one example per model call: per candidate occurrence generate;
for each question in rank order the personal check, QA on the response, and on a valid question QA
on the knowledge (stop at the first valid one in single mode); span NLI afterwards; the end-to-end
NLI fallback last. QA answers are turned into the released code's strings: "[CLS]" for no answer.
"""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Iterable

import numpy as np

from q2_metric.components import NLIClassifier, ParsedText, Parser, QuestionAnswerer, QuestionGenerator

CLS = "[CLS]"


def clean_text(text: str) -> str:
    text = text.lower()
    text = text.translate(str.maketrans("", "", string.punctuation))
    text = re.sub(r"\b(a|an|the|in|our)\b", " ", text)
    return re.sub(" +", " ", text).strip()


def f1(gold: str, pred: str) -> float:
    if pred == "":
        return 0
    g, p = clean_text(gold).split(), clean_text(pred).split()
    same = sum((Counter(g) & Counter(p)).values())
    if same == 0:
        return 0
    precision, recall = same / len(p), same / len(g)
    return 2 * precision * recall / (precision + recall)


def candidates(parsed: ParsedText) -> list[str]:
    cands = list(parsed.entities)
    for chunk in parsed.noun_chunks:
        found = False
        for cand in cands:
            if chunk.lower() == cand.lower():
                found = True
        if not found:
            cands.append(chunk)
    return [c for c in cands if c.lower() != "i"]


def non_personal(tokens: Iterable[tuple[str, str]]) -> bool:
    for text, dep in tokens:
        if dep == "nsubj" and text.lower() in ("i", "you"):
            return False
        if dep == "poss" and text.lower() in ("my", "your"):
            return False
    return True


def reference_q2(
    response: str,
    knowledge: str,
    parser: Parser,
    qg: QuestionGenerator,
    qa: QuestionAnswerer,
    nli: NLIClassifier,
    *,
    single: bool = True,
    remove_personal: bool = True,
    dnli: bool = False,
) -> tuple[float, float]:
    """(q2, q2_no_nli) of one response, one model call per example."""

    def get_answer(question: str, text: str) -> str:
        ans = qa.answer([question], [text])[0]
        return ans.text if ans.has_answer else CLS

    rows = []  # (question, cand, knowledge_ans, f1 score)
    for cand in candidates(parser.parse([response])[0]):
        for question in qg.generate([cand], [response])[0]:
            if remove_personal and not non_personal(parser.parse([question])[0].tokens):
                continue
            pred = get_answer(question, response)
            if pred == "" or pred == CLS or clean_text(cand) != clean_text(pred):
                continue
            k_ans = get_answer(question, knowledge)
            rows.append((question, cand, k_ans, 0 if k_ans == CLS else f1(cand, k_ans)))
            if single:
                break
    if dnli and any(k not in (CLS, "") for _, _, k, _ in rows):
        rows = [r for r in rows if r[2] not in (CLS, "")]
    if not rows:
        label = nli.classify([knowledge.lower()], [response.lower()])[0]
        score = {"entailment": 1.0, "neutral": 0.5, "contradiction": 0.0}[label]
        return score, score
    with_nli, no_nli = [], []
    for question, cand, k_ans, score in rows:
        no_nli.append(score)
        if 0 <= score < 1 and CLS not in k_ans and k_ans != "":
            label = nli.classify([f"{question} {k_ans}."], [f"{question} {cand}."])[0]
            score = {"entailment": 1, "contradiction": 0}.get(label, score)
        with_nli.append(score)
    return float(np.mean(with_nli)), float(np.mean(no_nli))
