"""The whole pipeline through the real transformers/spaCy loading code, on tiny random models."""

import math
import subprocess
import sys

import numpy as np
import pytest

from q2_metric import ModelNotAvailable, Q2Config, Q2Scorer
from q2_metric.components import NO_ANSWER
from q2_metric.models.batching import budget_batches
from q2_metric.models.hf_nli import nli_label_map
from q2_metric.models.hf_qa import HFQuestionAnswerer, decode_best_span, decode_reference
from q2_metric.models.hf_qg import qg_input
from q2_metric.testing.scripted import ScriptedQG


@pytest.fixture(scope="module")
def scorer(tiny_config):
    return Q2Scorer(tiny_config).load()


def test_end_to_end_on_tiny_models(scorer, rows):
    responses = [r["response"] for r in rows[:12]]
    knowledge = [r["knowledge"] for r in rows[:12]]
    result = scorer.score(responses, knowledge)
    assert len(result.scores) == 12
    assert all(0.0 <= s <= 1.0 for s in result.scores)
    assert 0.0 <= result.q2 <= 1.0 and 0.0 <= result.coverage <= 1.0
    for res in result.responses:
        assert res.candidates, "spaCy finds candidates in every sample response"
        assert len(res.questions) == 5 * len(res.candidates)  # beam: 5 returned per candidate
        assert res.fallback == (not res.valid_questions)
    sig = result.signature.to_dict()
    assert sig["qg"].startswith("local-") and sig["parser"].startswith("spacy:")  # local dir: a digest


def test_models_load_once_and_are_reused(scorer, rows):
    qg_model = scorer.qg.model
    scorer.score([rows[0]["response"]], [rows[0]["knowledge"]])
    assert scorer.qg.model is qg_model


def count_calls(module):
    calls = []
    module.register_forward_hook(lambda *_: calls.append(1))
    return calls


def test_model_calls_scale_with_batches_not_examples(tiny_config, rows):
    """N responses -> one forward pass per length-sorted token-budget batch, not per example."""
    n = 24
    cfg = tiny_config.replace(
        qa_batch_size=64,
        nli_batch_size=64,
        qg_batch_size=64,
        qg_max_tokens=16384,
        nli_max_tokens=16384,
        decoding="greedy",
    )
    scorer = Q2Scorer(cfg).load()
    qa_calls, nli_calls = count_calls(scorer.qa.model), count_calls(scorer.nli.model)
    nli_pairs = []
    classify = scorer.nli.classify
    scorer.nli.classify = lambda p, h: nli_pairs.append(list(zip(p, h))) or classify(p, h)
    generate_calls = []
    original = scorer.qg.model.generate
    scorer.qg.model.generate = lambda *a, **k: generate_calls.append(1) or original(*a, **k)
    result = scorer.score([r["response"] for r in rows[:n]], [r["knowledge"] for r in rows[:n]])
    n_candidates = sum(len(r.candidates) for r in result.responses)
    assert n_candidates > n
    prompts = list(
        dict.fromkeys(
            qg_input(c, r["response"]) for r, res in zip(rows[:n], result.responses) for c in res.candidates
        )
    )
    lengths = [len(ids) for ids in scorer.qg.tokenizer(prompts)["input_ids"]]
    assert len(generate_calls) == len(list(budget_batches(lengths, 64, cfg.qg_max_tokens))) < len(prompts) / 4
    n_asked = sum(1 for r in result.responses for q in r.questions if q.status not in ("personal", "unused"))
    n_valid = result.system.num_valid_questions
    assert len(qa_calls) < (n_asked + n_valid) / 4

    # NLI (span pairs, then mostly fallbacks here): one forward pass per length-sorted budget batch
    def nli_batches(call):  # premise windows of long knowledge included, as the backend reads them
        windows = [w for p, h in call for w in scorer.nli._split(p, h)]
        lengths = [
            len(ids)
            for ids in scorer.nli.tokenizer(
                [p for p, _ in windows],
                [h for _, h in windows],
                truncation=True,
                max_length=scorer.nli.max_length,
            )["input_ids"]
        ]
        return list(budget_batches(lengths, 64, cfg.nli_max_tokens))

    batches = [nli_batches(call) for call in nli_pairs]
    examples = sum(len(call) for call in nli_pairs)
    assert examples >= n / 2
    assert len(nli_calls) == sum(len(b) for b in batches) < examples / 3


def test_greedy_decoding_returns_one_question(tiny_config):
    scorer = Q2Scorer(tiny_config.replace(decoding="greedy"))
    result = scorer.score(["Bob Ross hosted a show on PBS."], ["Bob Ross hosted a show."])
    assert all(
        len([q for q in result.responses[0].questions if q.candidate == c]) == 1
        for c in result.responses[0].candidates
    )


def test_long_knowledge_uses_sliding_windows(tiny_config):
    # scripted logits per padded feature (packing off); the real model below runs packed
    qa = HFQuestionAnswerer(tiny_config.replace(qa_max_length=64, qa_doc_stride=16, qa_packing="off"))
    words = [f"word{i}" for i in range(600)]
    context = " ".join(words) + " The answer is Gardening."
    target = {}

    def fake_logits(features):
        out = []
        for f in features:
            start = np.full(len(f["input_ids"]), -5.0)
            end = np.full(len(f["input_ids"]), -5.0)
            tokens = qa.tokenizer.convert_ids_to_tokens(f["input_ids"])
            if "gardening" in tokens:  # only the last window sees the answer
                i = tokens.index("gardening")
                j = i
                while j + 1 < len(tokens) and tokens[j + 1].startswith("##"):
                    j += 1
                start[i], end[j] = 9.0, 9.0
                target["seen"] = True
            out.append((start, end))
        return out

    qa._launch_padded, qa._collect_padded = fake_logits, lambda results: results
    [answer] = qa.answer(["Where?"], [context])
    # reference decoding: the tokenizer's text of the answering window's span (lower-cased)
    assert target["seen"] and answer.text == "gardening"
    qa.config = qa.config.replace(qa_decoding="best_span")
    [answer] = qa.answer(["Where?"], [context])
    assert answer.text == "Gardening"  # best_span: cut from the original text
    # and the real model runs over all windows, packed (on a CPU) as padded
    windows = tiny_config.replace(qa_max_length=64, qa_doc_stride=16)
    packed, padded = HFQuestionAnswerer(windows), HFQuestionAnswerer(windows.replace(qa_packing="off"))
    questions, contexts = (
        ["Where?", "What is the answer?", "Which word?"],
        [context, context[:300], "The answer."],
    )
    assert packed.packs() and not padded.packs()
    assert packed.answer(questions, contexts) == padded.answer(questions, contexts)


def test_reference_and_best_span_decoding():
    start = np.array([5.0, 0.0, 3.0, 1.0, 0.0])
    end = np.array([1.0, 0.0, 0.0, 4.0, 2.0])
    ctx = np.array([False, False, True, True, True])
    assert decode_reference(start, end) == (9.0, 0, 4)  # every position counts, [CLS] included
    start[0] = -1.0
    assert decode_reference(start, end) == (7.0, 2, 4)  # end is exclusive
    assert decode_best_span(start, end, ctx, max_tokens=30) == (7.0, 2, 3)
    assert decode_best_span(start, end, ctx, max_tokens=1)[1:] == (3, 3)
    # an end before the start is kept: the empty answer
    assert decode_reference(np.array([0, 0, 1, 9.0]), np.array([0, 0, 9.0, 1]))[1:] == (3, 3)


def test_best_span_null_threshold(tiny_config):
    qa = HFQuestionAnswerer(tiny_config.replace(qa_decoding="best_span", qa_packing="off"))

    def logits(features):
        return [(np.where(np.arange(len(f["input_ids"])) == 0, 10.0, 0.0),) * 2 for f in features]

    qa._launch_padded, qa._collect_padded = logits, lambda results: results
    assert qa.answer(["Who?"], ["Bob Ross hosted it."]) == [NO_ANSWER]


def test_nli_labels_read_from_config_not_assumed():
    assert nli_label_map({0: "CONTRADICTION", 1: "NEUTRAL", 2: "ENTAILMENT"}) == {
        0: "contradiction",
        1: "neutral",
        2: "entailment",
    }
    from q2_metric.errors import ModelCheckError

    with pytest.raises(ModelCheckError, match="do not name"):  # a Q2Error, one sentence (issue 49)
        nli_label_map({0: "LABEL_0", 1: "LABEL_1", 2: "LABEL_2"})


def test_tiny_nli_label_order_is_respected(scorer):
    assert scorer.nli.labels == {0: "contradiction", 1: "neutral", 2: "entailment"}


def test_hard_texts_do_not_crash(scorer):
    long = "Bob Ross painted mountains. " * 300
    result = scorer.score(
        [
            "?!...",
            "Zoë and Renée met at a café in Zürich, not in 東京.",
            long,
            "   ",
            "Ça va très bien à Zürich.",
        ],
        ["Bob Ross painted.", "Zürich is a city.", long, "Bob Ross.", "Zürich est une ville."],
    )
    assert all(0.0 <= s <= 1.0 for s in result.scores[:3])
    assert result.responses[0].fallback  # no candidate in punctuation
    assert math.isnan(result.scores[3]) and result.responses[3].reason == "Not scored: empty response."
    # French, which the English set does not cover: unscored, with the language gate's sentence
    assert math.isnan(result.scores[4]) and "French (fr)" in str(result.responses[4].reason)


def test_scripted_qg_with_real_qa_and_nli(tiny_config):
    """Components mix: a scripted generator in front of the real QA and NLI models."""
    scorer = Q2Scorer(tiny_config, qg=ScriptedQG())
    result = scorer.score(["Bob Ross hosted it."], ["Bob Ross hosted The Joy of Painting."])
    assert result.responses[0].questions[0].question == "what about Bob Ross?"


def test_missing_models_fail_fast_offline(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    scorer = Q2Scorer(Q2Config(qg_model="no-such-org/no-such-q2-model"))
    with pytest.raises(ModelNotAvailable) as err:
        scorer.score(["Bob Ross hosted it."], ["Bob Ross hosted it."])
    msg = str(err.value)
    assert "no-such-org/no-such-q2-model" in msg and "\n" not in msg and msg.count(". ") == 0


def test_local_path_that_is_not_a_model_dir(tmp_path):
    with pytest.raises(ModelNotAvailable, match="not a directory"):
        Q2Scorer(Q2Config(qa_model=str(tmp_path / "missing")), qg=ScriptedQG()).load()


@pytest.mark.slow  # a subprocess
def test_main_command_exits_nonzero_with_one_sentence_offline(tmp_path):
    env = {"HF_HUB_OFFLINE": "1", "PATH": "/usr/bin:/bin", "HF_HOME": str(tmp_path)}
    proc = subprocess.run(
        [sys.executable, "-m", "q2_metric.cli", "demo"], capture_output=True, text=True, env=env, timeout=120
    )
    assert proc.returncode == 2
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("q2: The question-generation model")
    assert "`hf download " in lines[0] and "--qg-model" in lines[0]


@pytest.mark.slow  # a subprocess
def test_demo_runs_on_local_models(tiny_models):
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "q2_metric.cli",
            "demo",
            "--qg-model",
            tiny_models["qg"],
            "--qa-model",
            tiny_models["qa"],
            "--nli-model",
            tiny_models["nli"],
            "--decoding",
            "greedy",
            "--device",
            "cpu",
        ],
        capture_output=True,
        text=True,
        env={"HF_HUB_OFFLINE": "1", "PATH": "/usr/bin:/bin"},
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    assert "dodeca" in proc.stdout and "memnet" in proc.stdout and "Q2 = " in proc.stdout


def test_fallback_reads_long_knowledge_in_windows(tiny_config):
    from q2_metric.components import ParsedText
    from q2_metric.models.hf_nli import HFNLIClassifier
    from q2_metric.testing.scripted import ScriptedParser

    nli = HFNLIClassifier(tiny_config)
    knowledge = " ".join(["Gardening is considered to be a relaxing activity ."] * 150) + " Bob Ross painted."
    response = "Bob Ross painted."
    seen = []

    def fake_run(pairs):  # only the window that reaches the end holds "bob ross"
        seen.extend(pairs)
        return ["entailment" if "bob ross" in p else "neutral" for p, _ in pairs]

    nli._launch, nli._collect = fake_run, lambda labels: labels
    scorer = Q2Scorer(tiny_config, parser=ScriptedParser({response: ParsedText()}), nli=nli)
    res = scorer.score([response], [knowledge]).responses[0]
    assert res.fallback and res.fallback_windows == len(seen) > 1
    assert res.fallback_label == "entailment" and res.q2 == 1.0
    assert "windows" in res.reason and "entailment if any window entails" in res.reason
    assert all(len(nli.tokenizer(p, h)["input_ids"]) <= nli.max_length for p, h in seen)
