"""Options that choose a model's path are read on every call, whichever options the models were
loaded with: QG's beam-search path (`qg_decoder`) and the batch limits, through the cached `score`,
an `evaluate` instance, `with_config`, threads; a call refused for its options leaves the scorer
usable; the signature names the path that ran. Expected values: the path each generator reports
having run (its gate's counts) and the reference path's own questions."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import q2_metric
from q2_metric.errors import Q2OptionError
from q2_metric.scorer import Q2Scorer, cached_scorer
from q2_metric.signature import Signature

R = ["Bob Ross hosted The Joy of Painting on PBS.", "The show aired in Canada for years."]
K = ["Bob Ross hosted The Joy of Painting, a show on PBS.", "The Joy of Painting aired in Canada."]


def _path(signature) -> str:
    return Signature.parse(str(signature)).to_dict()["qgdec"]


def _fast_batches(scorer: Q2Scorer) -> int:
    qg = scorer._qg if scorer._qg is not None else scorer._origin._qg  # type: ignore[union-attr]
    return qg.gate.counts["fast"] + qg.gate.counts["refused"] + qg.gate.counts["past the checked steps"]


def test_the_default_signature_names_the_reference_search(tiny_config):
    assert Signature.create(q2_metric.Q2Config()).to_dict()["qgdec"] == "ref"
    assert q2_metric.Q2Config().qg_decoder == "reference"
    out = q2_metric.score(R, K, tiny_config)
    assert _path(out.signature) == "ref"


def test_the_cached_score_honours_qg_decoder_on_every_call(tiny_config):
    """The first call loads the generator for the reference path; a later fast call runs the fast
    path and says so, and a reference call after it runs the reference path again."""
    first = q2_metric.score(R, K, tiny_config)
    scorer = cached_scorer(tiny_config)
    before = _fast_batches(scorer)
    fast = q2_metric.score(R, K, tiny_config, qg_decoder="fast")
    after = _fast_batches(scorer)
    again = q2_metric.score(R, K, tiny_config)
    assert (_path(first.signature), _path(fast.signature), _path(again.signature)) == ("ref", "fast", "ref")
    assert after > before == 0 and _fast_batches(scorer) == after  # the fast path ran once, then not
    assert first.scores == fast.scores == again.scores


def test_with_config_views_each_run_their_own_path(tiny_config):
    scorer = Q2Scorer(tiny_config.replace(qg_decoder="fast"))
    view = scorer.with_config(tiny_config)
    ref = view.score(R, K)
    assert _path(ref.signature) == "ref" and _fast_batches(scorer) == 0
    fast = scorer.score(R, K)
    assert _path(fast.signature) == "fast" and _fast_batches(scorer) > 0
    assert ref.scores == fast.scores


def test_threads_with_other_decoders_each_run_and_sign_their_own(tiny_config):
    import threading

    scorer = Q2Scorer(tiny_config)
    views = [scorer.with_config(tiny_config.replace(qg_decoder=d)) for d in ("fast", "reference") * 2]
    out: list = [None] * len(views)

    def work(i: int) -> None:
        out[i] = views[i].score(R, K)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(views))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert [_path(r.signature) for r in out] == ["fast", "ref", "fast", "ref"]
    assert len({tuple(r.scores) for r in out}) == 1


def test_batch_limits_are_read_on_every_call(tiny_config):
    scorer = Q2Scorer(tiny_config).load()
    assert scorer.qg.batch_size == 16  # the CPU's, with the options unset
    view = scorer.with_config(tiny_config.replace(qg_batch_size=3, qa_batch_size=5, nli_max_tokens=999))
    view._bind()
    assert (view.qg.batch_size, view.qa.batch_size, view.nli.max_tokens) == (3, 5, 999)
    scorer._bind()
    assert (scorer.qg.batch_size, scorer.qa.batch_size, scorer.nli.max_tokens) == (16, 32, 16384)


@pytest.fixture(scope="module")
def bart_qg(tiny_models, tmp_path_factory) -> str:
    """A question generator that is no T5 (a tiny random BART with the tiny QG's tokenizer)."""
    from transformers import AutoTokenizer, BartConfig, BartForConditionalGeneration

    folder = tmp_path_factory.mktemp("bart_qg")
    tokenizer = AutoTokenizer.from_pretrained(tiny_models["qg"])
    tokenizer.save_pretrained(folder)
    pad, eos = tokenizer.pad_token_id or 0, tokenizer.eos_token_id or 1
    BartForConditionalGeneration(
        BartConfig(
            vocab_size=len(tokenizer),
            d_model=16,
            encoder_layers=1,
            decoder_layers=1,
            encoder_attention_heads=2,
            decoder_attention_heads=2,
            encoder_ffn_dim=32,
            decoder_ffn_dim=32,
            pad_token_id=pad,
            eos_token_id=eos,
            bos_token_id=pad,
            decoder_start_token_id=pad,
            forced_eos_token_id=None,
        )
    ).save_pretrained(folder)
    for extra in Path(tiny_models["qg"]).glob("*.model"):
        shutil.copy(extra, folder)
    return str(folder)


def test_a_refused_fast_call_leaves_the_scorer_usable(tiny_config, bart_qg):
    """`fast` with a question generator that is no T5: that call is refused in one sentence, and
    the later calls of the process (the cached `score`, the same scorer) run the reference path."""
    config = tiny_config.replace(qg_model=bart_qg)
    with pytest.raises(
        Q2OptionError, match=r"^qg_decoder='fast' needs a T5 question generator; .* is not one"
    ):
        q2_metric.score(R, K, config, qg_decoder="fast")
    out = q2_metric.score(R, K, config)
    assert _path(out.signature) == "ref" and len(out.scores) == 2
    scorer = Q2Scorer(config.replace(qg_decoder="fast"))
    with pytest.raises(Q2OptionError):
        scorer.score(R, K)
    assert _path(scorer.with_config(config).score(R, K).signature) == "ref"
