"""Stand-in components whose outputs depend on their inputs only (hashes), for comparing the
batched engine with the reference loop on the annotated set."""

from __future__ import annotations

import csv
import hashlib

from q2_metric.components import NO_ANSWER, Answer, ParsedText
from support.data import ANNOTATED

SPLITS = ["dodeca_consistent", "dodeca_inconsistent", "memnet_consistent", "memnet_inconsistent"]


def annotated_pairs() -> list[tuple[str, str]]:
    pairs = []
    for name in SPLITS:
        with open(ANNOTATED / f"{name}.csv", newline="", encoding="utf-8") as f:
            pairs += [(r["response"], r["knowledge"]) for r in csv.DictReader(f)]
    with open(ANNOTATED / "cross_annotation.csv", newline="", encoding="utf-8") as f:
        for r in csv.DictReader(f):
            pairs += [(r["dodeca_response"], r["knowledge"]), (r["memnet_response"], r["knowledge"])]
    return pairs


def pick(n: int, *parts: str) -> int:
    return int(hashlib.md5("\x1f".join(parts).encode()).hexdigest(), 16) % n


class HashParser:
    """spaCy's entities and noun chunks for responses (real candidates, repeats included);
    scripted dependency tokens for the generated questions."""

    def __init__(self, spacy_parser) -> None:
        self.spacy, self.memo = spacy_parser, {}

    def parse(self, texts):
        todo = [t for t in dict.fromkeys(texts) if t not in self.memo and not t.endswith("?")]
        self.memo.update(zip(todo, self.spacy.parse(todo)))
        out = []
        for t in texts:
            if t.endswith("?"):
                tokens = [(w, "nsubj" if w == "you" else "poss" if w == "your" else "dep") for w in t.split()]
                out.append(ParsedText(tokens=tokens))
            else:
                out.append(self.memo[t])
        return out


class HashQG:
    TEMPLATES = (
        "what is {a} ?",
        "do you know {a} ?",
        "which is {a} ?",
        "is your {a} here ?",
        "who said {a} ?",
    )

    def generate(self, answers, contexts):
        out = []
        for a, c in zip(answers, contexts):
            start = pick(5, a, c)
            out.append(
                [
                    self.TEMPLATES[(start + i) % 5].format(a=a) + f" #{pick(97, a, c, str(i))}"
                    for i in range(5)
                ]
            )
        return out


class HashQA:
    cls_text = "[CLS]"

    def answer(self, questions, contexts):
        out = []
        for q, c in zip(questions, contexts):
            target = q.split(" ", 2)[2].rsplit(" ?", 1)[0].replace("know ", "").replace("here", "").strip()
            words = c.split()
            choice = pick(12, q, c)
            out.append(
                [
                    Answer(target),
                    Answer(target.upper() + "!"),
                    Answer("the " + target),
                    NO_ANSWER,
                    Answer(""),
                    Answer(words[pick(len(words), q, c)] if words else "x"),
                    Answer(f"[CLS] {q.split()[0]} [SEP] {target}"),
                    Answer(target + " " + (words[0] if words else "")),
                    Answer(target),
                    Answer(target.lower()),
                    NO_ANSWER,
                    Answer(target),
                ][choice]
            )
        return out


class HashNLI:
    def classify(self, premises, hypotheses):
        return [
            ("entailment", "neutral", "contradiction")[pick(3, p, h)] for p, h in zip(premises, hypotheses)
        ]
