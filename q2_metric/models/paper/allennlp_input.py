"""The NLI input AllenNLP 1.0 built for the paper's RoBERTa SNLI model (`snli_roberta-2020.06.09`),
for a model directory written by `q2 convert-nli` (marked in its config).

The released `run_nli.py` calls the archive's `textual_entailment` predictor. Its `snli` reader
tokenizes premise and hypothesis separately with the `pretrained_transformer` tokenizer (no special
tokens, no prefix space) and joins them with the special tokens AllenNLP reverse-engineered from
the tokenizer: `<s> P </s></s> H </s>`, every type id 0 (so none is passed to the model), mask all
ones. The `pretrained_transformer` indexer and embedder have max_length 512: a longer sequence is
not truncated but cut, after removing its outer `<s>`/`</s>`, into segments of 510 tokens, each
wrapped in `<s> ... </s>` and run separately; the `cls_pooler` reads the first segment's `<s>`, so
the label is the first segment's (the rest of a long pair, often the whole hypothesis, is unseen).
transformers 5's pair encoding truncates instead, and the project's default backend reads long
premises in windows; neither is what the paper's model saw. Measured against AllenNLP 1.0.0 in
tests/data/allennlp10/ (record_allennlp10.py).
"""

from __future__ import annotations

from collections.abc import Sequence

from q2_metric.errors import ModelCheckError

ALLENNLP = "allennlp10"  # the signature's name of this path
MARKER = "q2_nli_input"  # config.json key `q2 convert-nli` sets to ALLENNLP
MAX_LENGTH = 512  # the archive's indexer and embedder max_length


def template_parts(template: Sequence[int], parts: Sequence[Sequence[int]]) -> list[list[int]]:
    """The special ids around and between `parts` in `template` (the tokenizer's encoding of dummy
    texts with special tokens), found the way AllenNLP 1.0 reverse-engineered them.

    >>> template_parts([0, 7, 2, 2, 8, 2], [[7], [8]])
    [[0], [2, 2], [2]]
    """
    out, pos = [], 0
    for part in parts:
        at = next(
            (
                i
                for i in range(pos, len(template) - len(part) + 1)
                if list(template[i : i + len(part)]) == list(part)
            ),
            None,
        )
        if at is None:
            raise ModelCheckError(
                "The NLI model's tokenizer has a special-token template that does not hold its own "
                "encoding of the text; use a tokenizer whose pairs read <s> a </s></s> b </s>."
            )
        out.append(list(template[pos:at]))
        pos = at + len(part)
    return out + [list(template[pos:])]


def allennlp_pair_ids(
    premise_ids: Sequence[int],
    hypothesis_ids: Sequence[int],
    pair: Sequence[Sequence[int]],
    single: Sequence[Sequence[int]],
    max_length: int = MAX_LENGTH,
) -> list[int]:
    """The ids the classifier's pooled first token reads for one pair, from the premise's and the
    hypothesis's ids (tokenized separately, no special tokens), the pair template's special ids
    (start, middle, end) and the single-sequence one's (start, end). A pair longer than `max_length`
    is cut as AllenNLP's indexer folds it: outer special ids removed, the first segment kept and
    wrapped in the single-sequence template.

    >>> allennlp_pair_ids([5, 6], [7], pair=[[0], [2, 2], [2]], single=[[0], [2]])
    [0, 5, 6, 2, 2, 7, 2]
    >>> allennlp_pair_ids([5, 6], [7], pair=[[0], [2, 2], [2]], single=[[0], [2]], max_length=5)
    [0, 5, 6, 2, 2]
    """
    ids = [*pair[0], *premise_ids, *pair[1], *hypothesis_ids, *pair[2]]
    if len(ids) <= max_length:
        return ids
    start, end = single
    inner = ids[len(start) : len(ids) - len(end)]
    return [*start, *inner[: max_length - len(start) - len(end)], *end]


def is_allennlp_converted(config: object) -> bool:
    """Whether a model config (a transformers config or its JSON dict) was written by `q2 convert-nli`."""
    value = config.get(MARKER) if isinstance(config, dict) else getattr(config, MARKER, None)
    return value == ALLENNLP
