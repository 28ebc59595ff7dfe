"""The meta-evaluation's baselines, as the released code computes them: overlap (token F1 of spaCy
tokens, stop words and punctuation dropped), BLEU (sacrebleu, 0-100), BERTScore (F1, rescaled with
baseline) and end-to-end NLI; the knowledge is lower-cased.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from q2_metric.components import NLIClassifier
from q2_metric.errors import Q2InputError


def content_tokens(doc: Any) -> list[str]:  # a spaCy Doc
    """Lower-cased spaCy tokens without stop words and punctuation (the released overlap)."""
    return [tok.text.lower() for tok in doc if not tok.is_stop and not tok.is_punct]


def token_f1(gold: Sequence[str], pred: Sequence[str]) -> float:
    """Token F1 of two token lists; 0 when nothing is shared.

    >>> token_f1(["paris", "capital"], ["paris", "city"])
    0.5
    """
    same = sum((Counter(gold) & Counter(pred)).values())
    if same == 0:
        return 0.0
    precision, recall = same / len(pred), same / len(gold)
    return 2 * precision * recall / (precision + recall)


OVERLAP_BATCH = 256  # texts per tokenizer batch


def overlap_scores(
    responses: Sequence[str], knowledge: Sequence[str], nlp: Any, batch_size: int = OVERLAP_BATCH
) -> list[float]:
    """Overlap(r, k): token F1 of the lower-cased knowledge (gold) and the response."""
    if len(responses) != len(knowledge):
        raise Q2InputError(
            f"{len(responses)} responses but {len(knowledge)} knowledge texts; give one of each per row."
        )
    # Only the tokenizer: token text, is_stop and is_punct are lexical, and no component of the
    # pipeline re-tokenizes, so the tokens are those of the full pipeline the released code runs
    # (checked on all 1,086 annotated pairs), ~100x faster. Both streams are consumed pair by pair
    # and only the score is kept: memory does not grow with the number of pairs.
    k_docs = nlp.tokenizer.pipe((k.lower() for k in knowledge), batch_size=batch_size)
    r_docs = nlp.tokenizer.pipe(iter(responses), batch_size=batch_size)
    return [token_f1(content_tokens(k), content_tokens(r)) for k, r in zip(k_docs, r_docs)]


def bleu_scores(responses: Sequence[str], knowledge: Sequence[str]) -> list[float]:
    """Per-response sacrebleu corpus BLEU against the lower-cased knowledge, on the 0-100 scale."""
    import sacrebleu

    return [sacrebleu.corpus_bleu([r], [[k.lower()]]).score for r, k in zip(responses, knowledge)]


def bertscore_scores(responses: Sequence[str], knowledge: Sequence[str]) -> list[float] | None:
    """BERTScore F1 (lang="en", rescaled with baseline) against the lower-cased knowledge; None
    when bert-score or its model is unavailable (it is optional)."""
    try:
        import bert_score

        _, _, f1 = bert_score.score(
            list(responses),
            [k.lower() for k in knowledge],
            lang="en",
            rescale_with_baseline=True,
            verbose=False,
        )
    except Exception:
        return None
    return [float(x) for x in f1]


def e2e_nli_scores(responses: Sequence[str], knowledge: Sequence[str], nli: NLIClassifier) -> list[float]:
    """End-to-end NLI: premise = the lower-cased knowledge, hypothesis = the response."""
    from q2_metric.steps.response_scores import fallback_score

    return [fallback_score(label) for label in nli.classify([k.lower() for k in knowledge], list(responses))]


def baseline_scores(
    responses: Sequence[str],
    knowledge: Sequence[str],
    *,
    nlp: Any,
    nli: NLIClassifier | None = None,
    bertscore: bool = True,
    notes: list[str] | None = None,
) -> dict[str, list[float]]:
    """Every available baseline's scores."""
    out = {"overlap": overlap_scores(responses, knowledge, nlp), "bleu": bleu_scores(responses, knowledge)}
    if bertscore:
        bert = bertscore_scores(responses, knowledge)
        if bert is not None:
            out["bertscore"] = bert
        elif notes is not None and not any(n.startswith("BERTScore") for n in notes):
            notes.append(
                "BERTScore baseline skipped: bert-score is not installed or its model is unavailable."
            )
    if nli is not None:
        out["e2e_nli"] = e2e_nli_scores(responses, knowledge, nli)
    return out


def load_nli(nli_model: str, device: str = "auto") -> NLIClassifier:
    """The end-to-end NLI baseline's model (`--nli-model` without Q²), its options through the one
    options path and the model checked before any work: one sentence when it cannot serve."""
    from q2_metric.frontend import configure
    from q2_metric.models import checks
    from q2_metric.models.hf_nli import HFNLIClassifier
    from q2_metric.options import flag_name

    config = configure({"nli_model": nli_model, "device": device}, spell=flag_name(), tiny=False)
    checks.check_device(config.device)
    checks.check_model(config.nli_model, "nli")
    return HFNLIClassifier(config)
