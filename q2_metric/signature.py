"""A sacrebleu-style signature recording exactly how a Q² score was made."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from importlib import metadata
from typing import Any, Protocol

from q2_metric.config import (
    DEFAULT_NLI_MODEL,
    DEFAULT_QA_MODEL,
    DEFAULT_QG_MODEL,
    PROVISION_OPTIONS,
    SPEED_OPTIONS,
    Q2Config,
)


class DecisionPoint(Protocol):
    """What a signature reads of an operating point (`options.operating_point.OperatingPoint`)."""

    @property
    def threshold(self) -> float: ...

    def signature_value(self) -> str: ...


# Signature fields that hold the scoring rules (the short form names those that depart from the paper).
RULE_FIELDS = ("dec", "drop", "personal", "mode", "qadec", "spannli", "dnli", "fallback")
# Model options named in the signature by their checked identity (a local folder by its digest).
_MODEL_ROLES = {
    "qg": "qg_model",
    "qa": "qa_model",
    "nli": "nli_model",
    "parser": "spacy_model",
    "coref": "coref_model",
}


def _q2_version() -> str:
    """The running code's version (an editable install's metadata can lag behind it)."""
    from q2_metric.version import __version__

    return __version__


def _version(dist: str) -> str:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "none"


# Libraries whose version can change a score (tokenization, model code, the spaCy parse).
SCORING_LIBRARIES = ("transformers", "tokenizers", "torch", "spacy", "sentencepiece")


def library_versions() -> dict[str, str]:
    """The installed version of each of `SCORING_LIBRARIES` (part of the cache key)."""
    return {name: _version(name) for name in SCORING_LIBRARIES}


@dataclass(frozen=True)
class Signature:
    """Models (with revisions), options that change the score, and library versions."""

    fields: tuple[tuple[str, str], ...]

    @classmethod
    def create(cls, config: Q2Config, components: dict[str, str] | None = None) -> Signature:
        """`components` maps qg/qa/nli/parser to their `describe()`; defaults to config model ids."""
        c = config
        comps = {
            "qg": c.qg_model,
            "qa": c.qa_model,
            "nli": c.nli_model,
            "parser": f"spacy:{c.spacy_model or 'default'}",
        }
        comps.update(components or {})
        dec = (
            "greedy"
            if c.decoding == "greedy"
            else f"beam{c.num_beams}-ret{c.num_return_sequences}-nrng{c.no_repeat_ngram_size}"
            f"-es{int(c.early_stopping)}"
        )
        fields = [
            ("q2", _q2_version()),
            ("qg", comps["qg"]),
            ("qa", comps["qa"]),
            ("nli", comps["nli"]),
            ("parser", comps["parser"]),
            # another language than the paper's English: its own metric (absent for English)
            *([("lang", c.language)] if c.language != "en" else []),
            # coreference (off by default, then absent): its model and revision
            *([("coref", comps.get("coref", c.coref_model))] if c.coref else []),
            ("dec", f"{dec}-max{c.max_question_length}-in{c.qg_max_input_tokens}"),
            ("drop", ",".join(c.drop_candidates) or "none"),
            ("personal", _personal(c)),
            ("mode", c.question_mode),
            (
                "qadec",
                f"{c.qa_decoding}-win{c.qa_max_length or 'max'}-stride{c.qa_doc_stride}"
                + (f"-maxans{c.qa_max_answer_tokens}" if c.qa_decoding == "best_span" else ""),
            ),
            # another language's QA: SQuAD 2.0 decoding, answers sliced exactly from the text
            *([("qaspan", comps["qaspan"])] if "qaspan" in comps else []),
            ("spannli", "yes" if c.use_nli else "no"),
            ("dnli", "yes" if c.discard_unanswerable_if_any_answerable else "no"),
            (
                "fallback",
                "e2e-nli:"
                + "/".join(f"{x:g}" for x in c.fallback_scores)
                + ("-lower" if c.fallback_lowercase else "-cased")
                if c.fallback_nli
                else "none",
            ),
            # long texts read in windows (`long_inputs`; absent when cut, the paper's reading)
            *([("long", c.long_inputs)] if c.long_inputs != "cut" else []),
            ("dtype", comps.get("dtype", c.dtype)),
            # int8 quantization (off by default, then absent): which encoders
            *([("quant", f"{c.quantize}-dynamic-qa,nli")] if c.quantize != "none" else []),
            # beam search's path: ref (the paper's search, the default) or fast (opt-in); the
            # generator's own answer when it is loaded (the path that ran)
            ("qgdec", comps.get("qgdec", qg_path(c.qg_decoder))),
            # a mode whose results may depend on what else is in the batch (absent on the default path)
            *batch_field(c),
            # qg/qa/nli tokenization: ref32 = transformers 3.2's (the paper's), hf = transformers' own
            ("tok", comps.get("tok", "unknown")),
            ("transformers", _version("transformers")),
            ("torch", _version("torch")),
            ("spacy", _version("spacy")),
        ]
        return cls(tuple(fields))

    @classmethod
    def parse(cls, text: str) -> Signature:
        """The signature a `str(signature)` was made from."""
        return cls(
            tuple((name, value) for name, _, value in (part.partition(":") for part in text.split("|")))
        )

    def to_dict(self) -> dict[str, str]:
        return dict(self.fields)

    def short(self) -> str:
        """A short form (like sacrebleu's `--short`): the version, whether the models and the rules
        are the paper's, the precision, and a hash of the full signature, e.g.
        `q2:0.5.0|models:paper|rules:paper|dtype:float32|sig:1a2b3c4d5e`. Rules name the fields
        that depart from the paper's (`rules:paper+dec,mode`); models the roles whose model is not the
        paper's (`models:custom(qg)`), or `models:tiny-random` for `q2_metric.models.tiny`'s meaningless models."""
        mine = self.to_dict()
        paper = Signature.create(Q2Config.paper()).to_dict()
        dnli = Signature.create(Q2Config.dnli()).to_dict()
        defaults = {"qg": DEFAULT_QG_MODEL, "qa": DEFAULT_QA_MODEL, "nli": DEFAULT_NLI_MODEL}
        models = [role for role, model in defaults.items() if mine.get(role, "").partition("@")[0] != model]
        tiny = all(mine.get(role, "").startswith("tiny-random-") for role in defaults)
        added = [k for k in ("coref", "long") if k in mine]  # rule fields absent on the paper's path
        if all(mine.get(k) == dnli[k] for k in RULE_FIELDS):
            rules = "dnli" + "".join(f"+{k}" for k in added)
        else:
            changed = [k for k in RULE_FIELDS if mine.get(k) != paper[k]] + added
            rules = "paper" + ("+" + ",".join(changed) if changed else "")
        digest = hashlib.sha256(str(self).encode()).hexdigest()[:10]
        named = "tiny-random" if tiny else "custom(" + ",".join(models) + ")" if models else "paper"
        return (
            f"q2:{mine.get('q2', '?')}|models:{named}"
            f"|rules:{rules}|dtype:{mine.get('dtype', '?')}"
            + (f"+{mine['quant'].partition('-')[0]}" if "quant" in mine else "")
            + (f"|lang:{mine['lang']}" if "lang" in mine else "")
            + (f"|thr:{mine['thr']}" if "thr" in mine else "")
            + (f"|op:{mine['op']}" if "op" in mine else "")
            + f"|sig:{digest}"
        )

    def tiny(self) -> bool:
        """Whether any of its QG, QA and NLI models is a tiny random one (`models.tiny`): the scores
        it signs mean nothing."""
        return any(v.startswith("tiny-random-") for k, v in self.fields if k in ("qg", "qa", "nli"))

    def with_threshold(self, threshold: float | None) -> Signature:
        """The signature of decisions made at `threshold` (inconsistent iff Q² <= it): a `thr` field
        at the end; unchanged for None."""
        if threshold is None:
            return self
        return Signature(tuple(f for f in self.fields if f[0] != "thr") + (("thr", f"{threshold + 0.0:g}"),))

    def with_operating_point(self, op: DecisionPoint | None) -> Signature:
        """The signature of decisions made at an operating point's threshold: its `thr` field and
        an `op` field naming the rule and the file's digest (`OperatingPoint.signature_value`);
        unchanged for None."""
        if op is None:
            return self
        fields = self.with_threshold(op.threshold).fields
        return Signature(tuple(f for f in fields if f[0] != "op") + (("op", op.signature_value()),))

    def __str__(self) -> str:
        return "|".join(f"{k}:{v}" for k, v in self.fields)

    def digest(self) -> str:
        """A short stable hash, e.g. for cache keys."""
        return hashlib.sha256(str(self).encode()).hexdigest()[:16]


def qg_path(decoder: str) -> str:
    """The signature's name of a beam-search path (`Q2Config.qg_decoder`): `ref` or `fast`.

    >>> qg_path("reference"), qg_path("fast")
    ('ref', 'fast')
    """
    return "ref" if decoder == "reference" else decoder


def batch_invariant(c: Q2Config) -> bool:
    """Whether a response's result is promised to be the same alone or inside any batch: the
    default float32 path (tests/unit/test_scorer_batch_invariance.py). Reduced precision (bfloat16,
    float16) and int8 quantization round differently with the padding and batch shapes around a
    response, and QA packing asked for by name puts other responses' tokens in its rows."""
    return c.dtype in ("auto", "float32") and c.quantize == "none" and c.qa_packing != "on"


def batch_field(c: Q2Config) -> tuple[tuple[str, str], ...]:
    """The signature's `batch:dependent` field for a mode that cannot promise batch invariance
    (`batch_invariant`); nothing on the default path."""
    return () if batch_invariant(c) else (("batch", "dependent"),)


def _personal(c: Q2Config) -> str:
    """`yes`/`no`, with the subject and possessive words when they are not the paper's."""
    if not c.personal_filter:
        return "no"
    default = Q2Config()
    if (c.personal_subjects, c.personal_possessives) == (
        default.personal_subjects,
        default.personal_possessives,
    ):
        return "yes"
    return f"yes-{','.join(c.personal_subjects)}/{','.join(c.personal_possessives)}"


def config_fingerprint(config: Q2Config, extra: dict[str, Any] | None = None) -> str:
    """Hash of every option that can change a score (speed options left out)."""
    # a model identified in `extra` is keyed by its identity, not by how its path was typed
    named = {_MODEL_ROLES[role] for role in (extra or {}) if role in _MODEL_ROLES}
    opts = {
        k: v
        for k, v in config.to_dict().items()
        if k not in SPEED_OPTIONS | PROVISION_OPTIONS
        and k not in named
        and (config.coref or not k.startswith("coref"))  # coreference off: keys as before it existed
        and (k != "quantize" or config.quantize != "none")
        and (k != "long_inputs" or config.long_inputs != "cut")
        and (k != "language" or config.language != "en")
        and (k != "model_sets" or config.model_sets is not None)
    }  # likewise without quantization, and with long texts cut (the paper's reading)
    payload = json.dumps(
        {"options": opts, "extra": extra or {}, "q2": _q2_version(), "libs": library_versions()},
        sort_keys=True,
        default=str,
    )
    return hashlib.sha256(payload.encode()).hexdigest()[:16]
