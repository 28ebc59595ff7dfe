"""Long texts are never cut silently, on the tiny models built by the tests: a knowledge text ten
times the QA window with a fact at its start and one at its end, and a response longer than
question generation's input limit (512 tokens).

By default (the paper's reading) a QG input past the limit is cut and the fallback NLI's pair is cut
to the NLI window when the response leaves the knowledge no room: each cut is counted on the
response, said in its reason and in `q2 score`'s summary. `long_inputs="windows"` reads the
response's sentences in windows for QG and the knowledge in windows beside parts of the response for
the fallback NLI. Only what does not hang on a tiny model's near-tie is asserted: the counts, the
words, the windows the models were given (measured here with the models' own tokenizers) and the
spans' offsets. The expected counts come from the texts' token lengths, not from the code."""

from __future__ import annotations

import json

import pytest
from transformers import AutoTokenizer

from q2_metric import Q2Scorer
from q2_metric.cli import main
from q2_metric.components import ParsedText
from q2_metric.display import figures_text
from q2_metric.signature import config_fingerprint
from q2_metric.testing.scripted import ScriptedParser

START_FACT = "Bob Ross painted mountains."
END_FACT = "The show aired in Canada."
FILLER = "Gardening is considered by many people to be a relaxing activity."
QG_LIMIT = 512  # the paper's `qg_max_input_tokens`
QA_WINDOW = 512  # the tiny QA model's positions


def tokens(tok, text: str) -> int:
    return len(tok(text, add_special_tokens=False)["input_ids"])


@pytest.fixture(scope="module")
def tok(tiny_models):
    """The tiny models' tokenizer (QG, QA and NLI share one vocabulary)."""
    return AutoTokenizer.from_pretrained(tiny_models["nli"])


@pytest.fixture(scope="module")
def texts(tok):
    """(knowledge, long response, short response): the knowledge ten times the QA window with a
    fact at each end; the long response past the QG limit, a fact at each end too."""
    filler = tokens(tok, FILLER)
    knowledge = " ".join([START_FACT] + [FILLER] * (10 * QA_WINDOW // filler + 1) + [END_FACT])
    response = " ".join([START_FACT] + [FILLER] * (600 // filler + 1) + [END_FACT])
    assert tokens(tok, knowledge) > 10 * QA_WINDOW and tokens(tok, response) > 600
    return knowledge, response, "Bob Ross painted mountains."


def qg_prompt_tokens(tok, answer: str, context: str) -> int:
    """The QG input's tokens, from the released code's prompt format (written out here)."""
    return len(tok(f"answer: {answer}  context: {context} </s>")["input_ids"])


def spy(component, name: str, seen: list) -> None:
    """Record each call's arguments of `component.name`, then run it."""
    real = getattr(component, name)

    def recorded(*args):
        seen.append(args)
        return real(*args)

    setattr(component, name, recorded)


def test_a_long_response_is_cut_for_question_generation_and_it_is_said(tiny_config, texts, tok):
    knowledge, response, _ = texts
    config = tiny_config.replace(decoding="greedy")
    scorer = Q2Scorer(config)
    seen: list = []
    spy(scorer.qg, "generate", seen)
    result = scorer.score([response], [knowledge])
    res = result.responses[0]
    assert res.candidates and len(res.candidates) >= 3
    # every QG input holds the whole response, longer than the limit: each one is cut, and counted
    ((answers, contexts),) = seen
    assert set(contexts) == {response}
    assert all(qg_prompt_tokens(tok, a, response) > QG_LIMIT for a in answers)
    assert res.qg_cut == len(res.candidates) and res.qg_windows == 0
    assert (
        f"The response is longer than question generation reads: {len(res.candidates)} of its "
        f"{len(res.candidates)} inputs were cut at the input limit" in res.reason
    )
    # the spans slice the response exactly, in its own offsets
    assert res.spans and all(response[s.start : s.end] == s.text for s in res.spans)
    assert any(s.text == "Canada" for s in res.spans)  # a candidate past the limit
    line = figures_text(result.system, result.responses).splitlines()[-1]
    # (whether a question of the tiny models survives, or the fallback NLI scores it, is theirs)
    nli = ", 1 end-to-end NLI pair cut to the NLI window" if res.fallback else ""
    assert res.fallback_cut == res.fallback
    assert line == "long texts: 1 response cut for question generation" + nli
    # the default is the paper's reading: nothing new in the signature
    assert "long" not in result.signature.to_dict()
    assert "|rules:paper+dec|" in result.signature.short()  # greedy decoding's departure alone


def test_windows_read_a_long_response_in_sentence_windows(tiny_config, texts, tok):
    knowledge, response, _ = texts
    config = tiny_config.replace(decoding="greedy", long_inputs="windows")
    scorer = Q2Scorer(config)
    seen: list = []
    spy(scorer.qg, "generate", seen)
    result = scorer.score([response], [knowledge])
    res = result.responses[0]
    ((answers, contexts),) = seen
    # every input fits, its context is whole sentences of the response holding the candidate
    sentences = [START_FACT] + [FILLER] * (response.count(FILLER)) + [END_FACT]
    assert " ".join(sentences) == response
    for answer, context in zip(answers, contexts):
        assert qg_prompt_tokens(tok, answer, context) <= QG_LIMIT
        assert answer in context and context in response
        assert context.startswith((START_FACT, FILLER)) and context.endswith((FILLER, END_FACT))
    assert any(END_FACT in c for c in contexts) and any(START_FACT in c for c in contexts)
    assert res.qg_windows == len(res.candidates) and res.qg_cut == 0
    assert (
        f"{len(res.candidates)} of its {len(res.candidates)} inputs were windows of its sentences"
        in res.reason
    )
    assert res.spans and all(response[s.start : s.end] == s.text for s in res.spans)
    assert result.signature.to_dict()["long"] == "windows"
    assert config_fingerprint(config) != config_fingerprint(config.replace(long_inputs="cut"))  # cache
    assert "|rules:paper+dec,long|" in result.signature.short()


def fallback_scorer(config, *responses):
    """A scorer whose parser finds no candidate in `responses`: each is scored by the fallback NLI."""
    return Q2Scorer(config, parser=ScriptedParser({r: ParsedText() for r in responses}))


def test_the_fallback_nli_cut_is_said_and_windows_read_the_whole_knowledge(tiny_config, texts, tok):
    knowledge, response, short = texts
    scorer = fallback_scorer(tiny_config, response, short)
    pairs: list = []
    spy(scorer.nli, "_launch", pairs)
    result = scorer.score([response, short], [knowledge, knowledge])
    long_res, short_res = result.responses
    assert long_res.fallback and short_res.fallback
    # the short response: the knowledge in windows (as before); the long one: one pair, cut
    assert short_res.fallback_windows > 10 and not short_res.fallback_cut
    assert f"read in {short_res.fallback_windows} knowledge windows" in short_res.reason
    assert long_res.fallback_windows == 1 and long_res.fallback_cut
    assert "The end-to-end NLI pair was cut to the NLI model's window" in long_res.reason
    sent = [p for (batch,) in pairs for p in batch]
    assert (knowledge.lower(), response.lower()) in sent  # the one pair, cut by the tokenizer
    line = figures_text(result.system, result.responses).splitlines()[-1]
    assert line == "long texts: 1 end-to-end NLI pair cut to the NLI window"

    # windows: the knowledge read in windows beside parts of the long response, nothing cut
    scorer = fallback_scorer(tiny_config.replace(long_inputs="windows"), response, short)
    pairs = []
    spy(scorer.nli, "_launch", pairs)
    result = scorer.score([response, short], [knowledge, knowledge])
    long_res, short_res = result.responses
    assert not long_res.fallback_cut and long_res.fallback_parts >= 2 and long_res.fallback_windows > 10
    assert f"read in {long_res.fallback_windows} knowledge windows" in long_res.reason
    assert f"read the response in {long_res.fallback_parts} parts" in long_res.reason
    sent = [p for (batch,) in pairs for p in batch]
    assert all(len(scorer.nli.tokenizer(p, h)["input_ids"]) <= 512 for p, h in sent)
    parts = {h for _, h in sent if h != short.lower()}
    assert len(parts) == long_res.fallback_parts
    assert all(h in response.lower() for h in parts)  # whole sentences of the response
    assert any(h.startswith(START_FACT.lower()) for h in parts)
    assert any(h.endswith(END_FACT.lower()) for h in parts)
    # every part sees the knowledge's first and last facts in some window
    for h in parts:
        windows = [p for p, hyp in sent if hyp == h]
        assert len(windows) == long_res.fallback_windows or len(windows) > 10
        assert any(START_FACT.lower().rstrip(".") in w for w in windows)
        assert any(END_FACT.lower().rstrip(".") in w for w in windows)
    # the short response's pair: as with "cut" (nothing was cut there)
    assert short_res.fallback_parts == 1 and not short_res.fallback_cut
    assert figures_text(result.system, result.responses).splitlines()[-1].startswith("no-answer share")


def test_q2_score_summary_counts_the_cuts(tiny_models, texts, tmp_path, capsys):
    knowledge, response, short = texts
    data = tmp_path / "long.csv"
    import csv

    with open(data, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["response", "knowledge"])
        w.writerows([(response, knowledge), (short, knowledge)])
    summary = tmp_path / "summary.json"
    flags = [
        f"--{role}-model" if i == 0 else tiny_models[role] for role in ("qg", "qa", "nli") for i in (0, 1)
    ]
    argv = ["score", str(data), "-o", str(tmp_path / "out.csv"), "--summary", str(summary), "--no-cache"]
    argv += ["--no-progress", "--decoding", "greedy", "--device", "cpu", "--max-question-length", "8", *flags]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "long texts: 1 response cut for question generation" in out
    figures = json.loads(summary.read_text(encoding="utf-8"))
    assert figures["num_cut_for_qg"] == 1 and figures["num_qg_windows"] == 0
    assert figures["num_nli_cut"] in (0, 1)  # 1 only if no question of the long response was valid
    assert main([*argv, "--long-inputs", "windows"]) == 0
    figures = json.loads(summary.read_text(encoding="utf-8"))
    assert figures["num_cut_for_qg"] == 0 and figures["num_qg_windows"] == 1 and figures["num_nli_cut"] == 0
    assert "long:windows" in figures["signature"]
