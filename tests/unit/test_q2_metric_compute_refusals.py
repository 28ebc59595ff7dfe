"""`compute()` (the `evaluate` module) refuses what it would otherwise ignore or misread (issue 36):
histories without coref=True, a bool threshold; -0 is threshold 0 (`thr:0`)."""

import math

import evaluate
import pytest

import q2_metric
from q2_metric.errors import Q2OptionError

PRED, REF = ["it aired in canada"], ["The show aired in Canada."]


@pytest.fixture(scope="module")
def metric():
    return evaluate.load(q2_metric.module_path())


def test_histories_without_coref_is_refused(metric):
    with pytest.raises(
        Q2OptionError,
        match=r"^Invalid Q² option histories: it is read by coref=True only; add "
        r"coref=True or leave histories out\.$",
    ):
        metric.compute(predictions=PRED, references=REF, histories=[["who hosted it?"]], tiny=True)


@pytest.mark.parametrize("value", [True, False])
def test_a_bool_threshold_is_refused(metric, value):
    with pytest.raises(
        Q2OptionError,
        match=rf"^Invalid Q² option threshold={value}: the threshold must be a number "
        rf"in \[0, 1\], not the bool {value}\.$",
    ):
        metric.compute(predictions=PRED, references=REF, threshold=value, tiny=True)


def test_minus_zero_threshold_signs_thr_0(metric):
    out = metric.compute(predictions=PRED, references=REF, threshold=-0.0, tiny=True)
    assert out["signature"].endswith("|thr:0") and math.copysign(1, out["threshold"]) == 1.0
    # the paper's rule at 0 (inconsistent iff score <= 0), read off the score the tiny models give
    # (an earlier random QG put it on a near-tie: 0.0 on an AMD EPYC, above on a Xeon)
    assert out["decisions"] == ["consistent" if out["scores"][0] > 0 else "inconsistent"]


def test_added_batches_are_not_written_before_the_cache_folder_is_checked(tiny_models, tmp_path):
    """evaluate writes its cache when a batch is added; the model folder that makes the cache
    folder an unlawful output is named only at `compute`. The batches wait for `compute`'s check,
    so nothing is ever written inside the model folder, and they are still there once the
    options are fixed."""
    import hashlib
    import shutil
    from pathlib import Path

    from q2_metric.errors import OutputPathError

    model = Path(shutil.copytree(tiny_models["qg"], tmp_path / "qg"))

    def files():
        return {
            str(p): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(model.rglob("*"))
            if p.is_file()
        }

    before = files()
    inside = evaluate.load(q2_metric.module_path(), cache_dir=str(model / "evaluate-cache"))
    inside.add_batch(predictions=PRED, references=REF)
    inside.add(prediction="it aired in france", reference=REF[0])
    with pytest.raises(OutputPathError, match="lies inside"):
        inside.compute(
            qg_model=str(model), qa_model=tiny_models["qa"], nli_model=tiny_models["nli"], device="cpu"
        )
    assert files() == before and not (model / "evaluate-cache").exists()

    elsewhere = evaluate.load(q2_metric.module_path(), cache_dir=str(tmp_path / "cache"))
    elsewhere.add_batch(predictions=PRED, references=REF)
    elsewhere.add(prediction="it aired in france", reference=REF[0])
    with pytest.raises(Q2OptionError):  # a refused compute keeps the added batches
        elsewhere.compute(qg_model=str(model), decoding="sampling")
    out = elsewhere.compute(
        qg_model=str(model), qa_model=tiny_models["qa"], nli_model=tiny_models["nli"], device="cpu"
    )
    assert len(out["scores"]) == 2 and files() == before


def test_an_instance_honours_qg_decoder_on_every_compute(metric):
    """The options of each `compute` choose QG's path, whichever the instance loaded its models with."""
    ref = metric.compute(predictions=PRED, references=REF, tiny=True)
    fast = metric.compute(predictions=PRED, references=REF, tiny=True, qg_decoder="fast")
    again = metric.compute(predictions=PRED, references=REF, tiny=True)
    paths = [
        dict(p.partition(":")[::2] for p in o["signature"].split("|"))["qgdec"] for o in (ref, fast, again)
    ]
    assert paths == ["ref", "fast", "ref"]
    qg = metric._scorer._qg
    assert qg.gate.counts["fast"] + qg.gate.counts["refused"] + qg.gate.counts["past the checked steps"] > 0
