"""Model sets per language, as data: for each language (an ISO 639-1 code), the question
generator, the QA and NLI models, the answer-candidate extractors, the token rules of token F1 and
the figures that justify the set ("not measured" until someone measures them).

The bundled table is `model_sets.json` beside this module; a user's file of entries (the
`model_sets` option, `--model-sets FILE`) adds languages and replaces bundled entries by code. `en`
is the paper's set (the engine's defaults). An entry:

    "de": {
      "qg":  {"model": "lmqg/mt5-base-dequad-qg", "prompt": "lmqg-highlight"},
      "qa":  {"model": "deepset/xlm-roberta-large-squad2"},
      "nli": {"model": "MoritzLaurer/mDeBERTa-v3-base-mnli-xnli"},
      "candidates": ["spacy:de_core_news_sm", "token-classification:Davlan/xlm-roberta-base-ner-hrl", "rules"],
      "tokens": {"split": "words", "lowercase": true, "articles": ["der", "die", "das"]},
      "figures": "not measured"
    }

Every entry is checked when it is read (`check_entry`): a problem is one `Q2OptionError` sentence
naming the file, the entry and the field, before any model work.

>>> sets = model_sets()
>>> sets["de"].qa, sets["en"].qg_prompt, sets["zh"].tokens.split
('deepset/xlm-roberta-large-squad2', 'q2', 'characters')
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from q2_metric.errors import Q2OptionError
from q2_metric.steps.normalize import TokenRules

BUNDLED = Path(__file__).resolve().parent / "model_sets.json"
ENGLISH = "en"  # the paper's set: the engine's defaults, the signature without `lang`
PROMPTS = ("q2", "lmqg-highlight")  # "answer: A  context: C </s>" | "generate question: ... <hl> A <hl> ..."
SPLITS = ("words", "characters")
FIGURE_FIELDS = ("dataset", "split", "metric", "value", "command")
NOT_MEASURED = "not measured"
ROLES = ("qg", "qa", "nli")
ENTRY_FIELDS = ("qg", "qa", "nli", "candidates", "tokens", "figures")
OPTIONAL_FIELDS = ("note", "measure")  # free text: a caveat, the command that measures the set
_CODE = re.compile(r"[a-z]{2,3}")
# the extractors a `candidates` list names, tried in order: the first available one runs
CANDIDATE_KINDS = ("spacy:", "token-classification:", "rules")


@dataclass(frozen=True)
class ModelSet:
    """One language's models and rules (an entry of the table), `source` the file it came from."""

    language: str
    qg: str
    qg_prompt: str
    qa: str
    nli: str
    candidates: tuple[str, ...]
    tokens: TokenRules
    figures: str | Mapping[str, Any]
    source: str
    note: str = ""
    measure: str = ""

    @property
    def measured(self) -> bool:
        return self.figures != NOT_MEASURED


def _where(source: str, code: str) -> str:
    return f"model set '{code}' of {source}"


def _problem(source: str, code: str, field: str, what: str) -> Q2OptionError:
    return Q2OptionError(f"The {_where(source, code)}: field '{field}' {what}.", what)


def _text(value: Any) -> bool:
    return isinstance(value, str) and bool(value.strip())


def check_entry(code: Any, entry: Any, source: str) -> ModelSet:
    """One entry checked: its `ModelSet`, or one `Q2OptionError` sentence naming `source`, the
    entry and the field.

    >>> check_entry("sv", {"qg": {"model": "m"}}, "my.json")
    Traceback (most recent call last):
    ...
    q2_metric.errors.Q2OptionError: The model set 'sv' of my.json: field 'qa.model' must be a Hub id, a local folder or a tiny model id.
    """
    if not isinstance(code, str) or _CODE.fullmatch(code) is None:
        raise Q2OptionError(
            f"The model sets of {source}: entry {code!r} is no language code (use an ISO 639-1 code "
            "of two lowercase letters, e.g. 'de')."
        )
    if not isinstance(entry, Mapping):
        raise Q2OptionError(f"The {_where(source, code)} must be a JSON object, got {type(entry).__name__}.")
    for name in entry:
        if name not in ENTRY_FIELDS + OPTIONAL_FIELDS:
            raise _problem(source, code, str(name), f"is unknown (the fields are {', '.join(ENTRY_FIELDS)})")
    models: dict[str, str] = {}
    for role in ROLES:
        part = entry.get(role)
        if not isinstance(part, Mapping) or not _text(part.get("model")):
            raise _problem(
                source, code, f"{role}.model", "must be a Hub id, a local folder or a tiny model id"
            )
        models[role] = str(part["model"]).strip()
    prompt = entry["qg"].get("prompt")
    if prompt not in PROMPTS:
        raise _problem(source, code, "qg.prompt", f"must be one of 'q2' or 'lmqg-highlight', got {prompt!r}")
    candidates = entry.get("candidates")
    if not isinstance(candidates, list) or not candidates or not all(_text(c) for c in candidates):
        raise _problem(source, code, "candidates", "must be a non-empty list of extractor names")
    for c in candidates:
        ok = c == "rules" or any(c.startswith(k) and len(c) > len(k) for k in CANDIDATE_KINDS[:2])
        if not ok:
            raise _problem(
                source,
                code,
                "candidates",
                f"names {c!r}, which is none of 'spacy:NAME', 'token-classification:MODEL' or 'rules'",
            )
    tokens = entry.get("tokens")
    if not isinstance(tokens, Mapping):
        raise _problem(source, code, "tokens", "must be an object with 'split', 'lowercase' and 'articles'")
    split, lowercase, articles = (
        tokens.get("split"),
        tokens.get("lowercase", True),
        tokens.get("articles", []),
    )
    if split not in SPLITS:
        raise _problem(source, code, "tokens.split", f"must be 'words' or 'characters', got {split!r}")
    if not isinstance(lowercase, bool):
        raise _problem(source, code, "tokens.lowercase", f"must be true or false, got {lowercase!r}")
    if not isinstance(articles, list) or not all(isinstance(a, str) for a in articles):
        raise _problem(source, code, "tokens.articles", "must be a list of words")
    figures = entry.get("figures")
    if figures != NOT_MEASURED and (
        not isinstance(figures, Mapping) or any(k not in figures for k in FIGURE_FIELDS)
    ):
        what = f'must be "{NOT_MEASURED}" or an object of {", ".join(FIGURE_FIELDS)}'
        raise _problem(source, code, "figures", what)
    for name in OPTIONAL_FIELDS:
        if name in entry and not isinstance(entry[name], str):
            raise _problem(source, code, name, "must be a text")
    return ModelSet(
        language=code,
        qg=models["qg"],
        qg_prompt=str(prompt),
        qa=models["qa"],
        nli=models["nli"],
        candidates=tuple(str(c).strip() for c in candidates),
        tokens=TokenRules(split, lowercase, tuple(articles)),
        figures=figures,
        source=source,
        note=str(entry.get("note", "")),
        measure=str(entry.get("measure", "")),
    )


def read_sets(path: str | Path) -> dict[str, ModelSet]:
    """The entries of one model-set file (keys starting with `_` are comments), each checked."""
    source = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as e:
        raise Q2OptionError(f"The model sets file {source} cannot be read: {e.strerror or e}.") from None
    except UnicodeDecodeError:
        raise Q2OptionError(f"The model sets file {source} is not UTF-8 text.") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise Q2OptionError(
            f"The model sets file {source} is not JSON: {e.msg} at line {e.lineno}."
        ) from None
    if not isinstance(data, Mapping):
        raise Q2OptionError(f"The model sets file {source} must hold a JSON object of language -> entry.")
    return {
        code: check_entry(code, entry, source)
        for code, entry in data.items()
        if not (isinstance(code, str) and code.startswith("_"))
    }


@functools.lru_cache(maxsize=1)
def _bundled() -> dict[str, ModelSet]:
    return read_sets(BUNDLED)


def model_sets(user_file: str | Path | None = None) -> dict[str, ModelSet]:
    """The bundled table with the entries of `user_file` added (a code in both: the user's)."""
    out = dict(_bundled())
    if user_file is not None:
        out.update(read_sets(user_file))
    return out


def model_set(language: str, user_file: str | Path | None = None) -> ModelSet:
    """The set of `language`; a language with no entry is one `Q2OptionError` sentence."""
    sets = model_sets(user_file)
    found = sets.get(language)
    if found is None:
        raise Q2OptionError(
            f"Invalid Q² option language={language!r}: no model set for it (there are sets for "
            f"{', '.join(sorted(sets))}); add an entry in a model sets file (model_sets) to score it.",
            "no model set",
        )
    return found


__all__ = [
    "BUNDLED",
    "ENGLISH",
    "NOT_MEASURED",
    "ModelSet",
    "TokenRules",
    "check_entry",
    "model_set",
    "model_sets",
    "read_sets",
]
