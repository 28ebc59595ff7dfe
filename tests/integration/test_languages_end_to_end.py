"""A German, a Chinese and an Arabic item (written for these tests), each through the command line
(`q2 score`), the service (a real `q2 serve` on a free 127.0.0.1 port, a real HTTP client) and one
harness (ragas, through its own `ragas.evaluate`), on the tiny multilingual models (`--tiny
--language CODE`): scored, with `lang:CODE` in the signature and spans that slice the response
exactly. With the English set (the default) the same items are unverified with their sentence,
never consistent."""

from __future__ import annotations

import json
import math

import httpx
import pytest
from support.cli import cli
from support.harness import env, set_in_process
from support.serve import q2_serve

# Written for these tests: a response and the knowledge it rests on, in each language.
ITEMS = {
    "de": (
        "Der Rhein fließt durch Basel und Köln und mündet in die Nordsee.",
        "Der Rhein ist ein Fluss in Europa. Er fließt durch Basel und Köln und mündet in den "
        "Niederlanden in die Nordsee.",
    ),
    "zh": (
        "长城位于中国北方，全长两万多公里。",
        "长城是中国古代的军事防御工程，位于中国北方，全长两万多公里。",
    ),
    "ar": (
        "تأسست القاهرة عام 969 وهي عاصمة مصر وأكبر مدنها.",
        "القاهرة عاصمة جمهورية مصر العربية، تأسست عام 969، وهي أكبر مدن مصر والعالم العربي.",
    ),
}
NAMES = {"de": "German (de)", "zh": "Chinese (zh)", "ar": "Arabic (ar)"}
LANGUAGES = tuple(ITEMS)


def unverified_sentence(key: str, code: str) -> str:
    return f"{key}: field 'response' is in {NAMES[code]}, which the English (en) model set does not cover."


@pytest.fixture(scope="module")
def environ(tmp_path_factory):
    """Offline, the tiny models (English and multilingual) built once into a private folder."""
    from q2_metric.models.tiny import ensure_tiny_models

    tmp = tmp_path_factory.mktemp("languages")
    folder = tmp / "tiny-models"
    ensure_tiny_models(folder)
    environ = env({"qg": str(folder / "qg")}, tmp)
    return environ


def spans_slice(response: str, spans: list[dict]) -> None:
    assert spans, response
    for span in spans:
        assert response[span["start"] : span["end"]] == span["text"], (span, response)


# -- the command line ---------------------------------------------------------------------------


def q2_score(tmp, environ, code: str, *flags: str) -> tuple[dict, dict, list[dict]]:
    response, knowledge = ITEMS[code]
    src, out, spans, summary = (
        tmp / f"{code}.{ext}" for ext in ("in.jsonl", "out.jsonl", "spans.jsonl", "json")
    )
    src.write_text(json.dumps({"response": response, "knowledge": knowledge}) + "\n", encoding="utf-8")
    res = cli(
        "score", str(src), "-o", str(out), "--spans", str(spans), "--summary", str(summary),
        "--no-cache", "--quiet", "--tiny", *flags, env=environ,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    span_rows = [json.loads(line) for line in spans.read_text(encoding="utf-8").splitlines()]
    return rows[0], json.loads(summary.read_text(encoding="utf-8")), span_rows


@pytest.mark.parametrize("code", LANGUAGES)
def test_cli_scores_the_item_in_its_language_and_leaves_it_unverified_in_english(code, environ, tmp_path):
    row, summary, spans = q2_score(tmp_path, environ, code, "--language", code)
    assert row["q2"] is not None and 0.0 <= row["q2"] <= 1.0, row
    assert f"|lang:{code}|" in summary["signature"] and f"|lang:{code}|" in summary["signature_short"]
    assert summary["num_scored"] == 1
    spans_slice(ITEMS[code][0], [s for r in spans for s in r["spans"]])

    row, summary, _ = q2_score(tmp_path, environ, code)  # the English set: the default
    assert row["q2"] is None and row["reason"] == f"Not scored: {unverified_sentence('line 1', code)}"
    assert "lang:" not in summary["signature"] and summary["num_scored"] == 0


# -- the service --------------------------------------------------------------------------------


def ask(server, code: str) -> dict:
    response, knowledge = ITEMS[code]
    r = httpx.post(
        server.url + "/v1/score",
        json={"items": [{"response": response, "knowledge": knowledge}]},
        timeout=120,
    )
    assert r.status_code == 200, r.text
    return r.json()


@pytest.mark.parametrize("code", LANGUAGES)
def test_serve_scores_the_item_in_its_language(code, environ, tmp_path):
    with q2_serve(["--tiny", "--language", code, "--device", "cpu"], tmp_path, env=environ) as server:
        out = ask(server, code)
        (result,) = out["results"]
        assert result["status"] == "scored" and result["verdict"] in ("consistent", "inconsistent"), result
        assert f"|lang:{code}|" in out["signature"]
        spans_slice(ITEMS[code][0], result["spans"])
        other = next(c for c in LANGUAGES if c != code)  # another language: not this set's
        (result,) = ask(server, other)["results"]
        assert result["verdict"] == "unverified" and result["score"] is None
        assert result["reason"].endswith(
            f"is in {NAMES[other]}, which the {NAMES[code]} model set does not cover."
        )


def test_serve_on_the_english_set_leaves_every_item_unverified(environ, tmp_path):
    with q2_serve(["--tiny", "--device", "cpu"], tmp_path, env=environ) as server:
        for code in LANGUAGES:
            out = ask(server, code)
            (result,) = out["results"]
            assert (result["status"], result["verdict"], result["score"]) == ("empty", "unverified", None)
            assert result["reason"] == f"Not scored: {unverified_sentence('item 0', code)}"
            assert "lang:" not in out["signature"]


# -- a harness: ragas, through its own `ragas.evaluate` -----------------------------------------


@pytest.mark.parametrize("language", ["each", "en"])
def test_ragas_scores_each_item_in_its_language_and_not_in_english(language, environ, tmp_path, monkeypatch):
    pytest.importorskip("ragas")
    from ragas import EvaluationDataset

    from q2_metric.harness.ragas_metric import Q2Faithfulness, evaluate

    set_in_process(monkeypatch, environ)
    for code in LANGUAGES:
        response, knowledge = ITEMS[code]
        dataset = EvaluationDataset.from_list(
            [{"user_input": "?", "response": response, "retrieved_contexts": [knowledge]}]
        )
        metric = Q2Faithfulness(tiny=True, language=code if language == "each" else None, max_wait=0.2)
        result = evaluate(dataset, metric, show_progress=False)
        (record,) = result.details
        score = result.to_pandas()["q2"].tolist()[0]
        if language == "each":
            assert record["q2_status"] == "scored" and not math.isnan(score)
            assert record["q2_verdict"] in ("consistent", "inconsistent")
            assert f"|lang:{code}|" in str(result.signature) == record["q2_signature"]
            spans_slice(response, record["q2_spans"])
        else:
            assert math.isnan(score) and record["q2_verdict"] == "unverified"
            assert record["q2_reason"].endswith(
                f"is in {NAMES[code]}, which the English (en) model set does not cover."
            )
            assert "lang:" not in str(result.signature)
