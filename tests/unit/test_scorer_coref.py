"""The coreference stage in the engine (scripted), the default path untouched, and the F-Coref
backend through its real loading code on a tiny random model of the same architecture."""

import hashlib
import json
import math

import pytest

from q2_metric import ModelNotAvailable, Q2Config, Q2Scorer
from q2_metric.components import ParsedText
from q2_metric.display import reason_line
from q2_metric.errors import Q2InputError
from q2_metric.signature import config_fingerprint
from q2_metric.testing.scripted import ScriptedCoref, ScriptedParser, scripted_scorer

HISTORY = ["I drink coffee every morning for caffeine."]
RESPONSE = "Yes, it stimulates a certain portion of the nervous system!"
RESOLVED = "Yes, caffeine stimulates a certain portion of the nervous system!"  # by hand
KNOWLEDGE = "Caffeine is a central nervous system stimulant."
PARSES = {RESPONSE: ParsedText(entities=["it"]), RESOLVED: ParsedText(entities=["caffeine"])}


def _scorer(**options):
    return scripted_scorer(
        Q2Config(**options), parser=ScriptedParser(PARSES), coref=ScriptedCoref([["caffeine", "it"]])
    )


def test_default_path_has_no_coreference_anywhere():
    scorer = _scorer()
    result = scorer.score([RESPONSE], [KNOWLEDGE], histories=[HISTORY])
    assert scorer._coref.calls == []  # off by default: never asked
    # "it": scripted QA finds no "it" in the knowledge -> unanswered -> span score 0 (by hand)
    assert result.q2 == 0.0
    assert "coref" not in result.to_dict(details=True)["details"][0]
    assert "coref:" not in str(result.signature) and "coref" not in result.signature.short()
    # the fingerprint is the hash of the same payload as before the option existed (options, version, libraries)
    opts = {k: v for k, v in Q2Config().to_dict().items() if not k.startswith("coref")}
    import q2_metric.signature as sig
    from q2_metric.config import SPEED_OPTIONS

    # (nor `tiny`, which only says where the models come from: their identities key the cache, nor
    # `quantize` left at "none" or `long_inputs` at "cut", which came later: a default run keeps its
    # fingerprint)
    # `language` at "en" and `model_sets` unset, later still, the same)
    left_out = ("tiny", "quantize", "long_inputs", "language", "model_sets")
    opts = {k: v for k, v in opts.items() if k not in SPEED_OPTIONS and k not in left_out}
    payload = json.dumps(
        {"options": opts, "extra": {}, "q2": sig._q2_version(), "libs": sig.library_versions()},
        sort_keys=True,
        default=str,
    )
    assert config_fingerprint(Q2Config()) == hashlib.sha256(payload.encode()).hexdigest()[:16]
    assert config_fingerprint(Q2Config(coref=True)) != config_fingerprint(Q2Config())


def test_coref_resolves_the_response_before_candidates():
    scorer = _scorer(coref=True)
    result = scorer.score([RESPONSE], [KNOWLEDGE], histories=[HISTORY])
    res = result.responses[0]
    # "caffeine": asked of the resolved response and of the knowledge, answered the same: 1.0 (by hand)
    assert res.candidates == ["caffeine"] and result.q2 == 1.0
    assert res.coref.resolved == RESOLVED and res.coref.original == RESPONSE
    assert [(r.original, r.replacement) for r in res.coref.replacements] == [("it", "caffeine")]
    line = reason_line(res)
    assert '"it" -> "caffeine"' in line and f'scored: "{RESOLVED}"' in line and "1 earlier turn" in line
    assert result.signature.to_dict()["coref"] == "scripted-ScriptedCoref"
    assert "+coref" in result.signature.short()
    assert result.to_dict(details=True)["details"][0]["coref"]["resolved"] == RESOLVED


def test_without_history_it_resolves_within_the_response_and_says_so():
    scorer = _scorer(coref=True)
    result = scorer.score([RESPONSE], [KNOWLEDGE])
    res = result.responses[0]
    assert res.coref.resolved == RESPONSE and res.coref.history_turns == 0
    assert "within the response alone: no history given" in reason_line(res)


def test_bad_histories_fail_before_any_model_work():
    scorer = _scorer(coref=True)
    with pytest.raises(Q2InputError, match="item 1: turn 0 of field 'histories' must be a string, got int"):
        scorer.score(["a", "b"], ["c", "d"], histories=[[], [3]])
    with pytest.raises(Q2InputError, match="one list of turns per response"):
        scorer.score(["a", "b"], ["c", "d"], histories=[[]])
    with pytest.raises(Q2InputError, match="item 0: field 'histories' must be a list of strings, got str"):
        scorer.score(["a"], ["c"], histories=["x ||| y"])
    assert scorer._coref.calls == [] and scorer.parser.calls == []


def test_empty_response_is_not_resolved():
    scorer = _scorer(coref=True)
    result = scorer.score(["", RESPONSE], [KNOWLEDGE, KNOWLEDGE], histories=[HISTORY, HISTORY])
    assert math.isnan(result.scores[0]) and result.responses[0].coref is None
    assert scorer._coref.calls == [1, 1]


# -- the neural backend on a tiny random F-Coref model --------------------------------------------

fastcoref = pytest.importorskip("fastcoref")


@pytest.fixture(scope="module")
def tiny_coref(tmp_path_factory, rows):
    from q2_metric.models.hf_coref import build_tiny_coref_model

    texts = [r["message"] for r in rows] + [r["response"] for r in rows] + [r["knowledge"] for r in rows]
    return build_tiny_coref_model(tmp_path_factory.mktemp("fcoref"), texts)


def test_fcoref_end_to_end_on_tiny_models(tiny_config, tiny_coref, rows):
    cfg = tiny_config.replace(coref=True, coref_model=tiny_coref, decoding="greedy", max_question_length=8)
    scorer = Q2Scorer(cfg).load()
    model = scorer.coref.model
    steps = []
    predict = scorer.coref.coref.predict
    scorer.coref.coref.predict = lambda texts, **kw: steps.append(len(texts)) or predict(texts, **kw)
    some = rows[:6]
    histories = [[r["message"]] if i % 2 else [r["topic"], r["message"]] for i, r in enumerate(some)]
    result = scorer.score([r["response"] for r in some], [r["knowledge"] for r in some], histories=histories)
    assert steps == [6, 6, 3]  # batched across dialogues, one model call per turn step
    assert all(0.0 <= s <= 1.0 for s in result.scores)
    from q2_metric.steps.coref import apply_replacements

    for res, r in zip(result.responses, some):
        assert res.coref.original == r["response"]
        assert apply_replacements(res.coref.original, res.coref.replacements) == res.coref.resolved
    assert result.signature.to_dict()["coref"].startswith("local-")
    scorer.score([some[0]["response"]], [some[0]["knowledge"]], histories=[[some[0]["message"]]])
    assert scorer.coref.model is model  # loaded once


def test_fcoref_long_text_is_skipped_without_shifting_results(tmp_path, rows):
    from q2_metric.models.hf_coref import HFCorefResolver, build_tiny_coref_model

    texts = [r["knowledge"] for r in rows]
    path = build_tiny_coref_model(tmp_path / "short", texts, max_doc_len=24)
    resolver = HFCorefResolver(Q2Config(coref=True, coref_model=path, device="cpu"))
    long_text = " ".join(texts[:4])
    out = resolver.clusters(["He said it.", long_text, "She did it."])
    assert len(out) == 3 and out[1] is None and resolver.skipped == 1  # None: too long, scored as written
    for text, clusters in zip(["He said it.", "She did it."], [out[0], out[2]]):
        assert all(0 <= s < e <= len(text) for cluster in clusters for s, e in cluster)


def test_missing_coref_model_fails_before_any_work_in_one_sentence(tiny_config):
    parser = ScriptedParser()
    scorer = Q2Scorer(tiny_config.replace(coref=True, coref_model="biu-nlp/f-coref"), parser=parser)
    with pytest.raises(ModelNotAvailable) as err:
        scorer.score(["It is."], ["It is."], histories=[["Hi."]])
    text = str(err.value)
    assert text.count(". ") == 0 and "biu-nlp/f-coref" in text and "hf download biu-nlp/f-coref" in text
    assert "coref_model (--coref-model)" in text and parser.calls == []


def test_missing_fastcoref_package_fails_in_one_sentence(monkeypatch, tiny_config):
    import builtins

    real_import = builtins.__import__

    def no_fastcoref(name, *args, **kwargs):
        if name.startswith("fastcoref"):
            raise ImportError("No module named 'fastcoref'", name="fastcoref")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_fastcoref)
    scorer = Q2Scorer(tiny_config.replace(coref=True), parser=ScriptedParser())
    with pytest.raises(
        ModelNotAvailable, match=r"needs the fastcoref package.*pip install fastcoref --no-deps"
    ):
        scorer.check_models()


def test_wrong_model_kind_is_refused(tiny_config, tiny_models):
    scorer = Q2Scorer(tiny_config.replace(coref=True, coref_model=tiny_models["nli"]))
    with pytest.raises(ModelNotAvailable, match=r"has no coref_head in its config.json"):
        scorer.check_models()
