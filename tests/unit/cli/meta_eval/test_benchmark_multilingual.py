"""`q2 meta-eval --dataset` on the multilingual sets' fixtures (tests/data: SEAHORSE, Mu-SHROOM,
PsiloQA, the translated RAGTruth), end to end through the command line with a scores or spans
file; every expected figure is worked out by hand below."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from q2_metric.cli import main

DATA = Path(__file__).resolve().parents[3] / "data"
NO_WORK = ["meta-eval", "--baselines-only", "--no-bertscore", "--bootstrap", "20"]


def _run(tmp_path, *argv):
    out = tmp_path / "bench"
    assert main([*NO_WORK, *argv, "--out-dir", str(out)]) == 0
    return json.loads((out / "benchmark.json").read_text()), (out / "benchmark.md").read_text()


def test_seahorse(tmp_path):
    # kept rows sh:1..7 (de Yes, de No, en Yes, en No, es Yes, es No, de Yes)
    judge = tmp_path / "judge.csv"
    judge.write_text("id,score\nsh:1,0.9\nsh:2,0.4\nsh:3,0.8\nsh:4,0.85\nsh:5,0.7\nsh:6,0.2\nsh:7,0.3\n")
    report, md = _run(tmp_path, "--dataset", f"sh={DATA / 'seahorse'}", "--scores", f"judge={judge}")
    figs = report["multilingual"]["sh"]["by_language"]
    # de: [.9, .4, .3] against [1, 0, 1]: AUC 1/2 (.9 > .4, .3 < .4); Pearson 12/sqrt(1116)
    # (tests/unit/meta/test_seahorse.py works it out); Spearman 0
    assert figs["de"]["judge"]["roc_auc"] == 0.5
    assert figs["de"]["judge"]["pearson"] == pytest.approx(12 / math.sqrt(1116))
    # en: Yes .8 below No .85: AUC 0, ρ -1; es: Yes .7 above No .2: AUC 1, ρ 1
    assert figs["en"]["judge"]["roc_auc"] == 0.0 and figs["en"]["judge"]["pearson"] == pytest.approx(-1)
    assert figs["es"]["judge"]["roc_auc"] == 1.0
    # all: Yes {.9, .8, .7, .3} vs No {.4, .85, .2}: .9 beats 3, .8 and .7 beat 2 each, .3 beats 1:
    # 8 of 12
    assert figs["all"]["judge"]["roc_auc"] == pytest.approx(8 / 12)
    what = report["multilingual"]["sh"]["what"]
    assert what["split"] == "test" and what["question"] == "question4 (attribution)"
    assert what["left_out_by_label"] == {"(empty)": 1, "Unsure": 1} and what["without_article"] == 1
    published = {p["measure"]: p["published"] for p in report["published"]["sh"]}
    assert published == {"pearson_all": 0.59, "roc_auc_all": 0.85}
    assert "## SEAHORSE: sh, per language" in md and "| es | judge | 2 | 1 | 1.000 | 1.000 | 1.000 |" in md
    assert "no article has this gem_id in --seahorse-articles" in md


def test_mushroom(tmp_path):
    data = DATA / "mushroom"
    report, md = _run(
        tmp_path,
        "--dataset",
        f"ms={data / 'mushroom.de-zh-val.v2.jsonl'}",
        "--span-predictions",
        f"judge={data / 'judge.predictions.jsonl'}",
    )
    figs = report["multilingual"]["ms"]["by_language"]
    # val-de-1, "Der Turm steht in Rom." (22 characters): gold hard [18, 21) ("Rom"), soft 15..18 at
    # .25 and 18..21 at 1; judge hard [15, 21), soft 15..21 at .9.
    #   IoU = |{18, 19, 20}| / |{15..20}| = 3 / 6 = 0.5.
    #   Cor: gold 16 zeros, 3 x .25, 3 x 1 -> mean ranks 8.5, 18, 21; judge 16 zeros, 6 x .9 ->
    #   8.5, 19.5; both rank means 11.5. Deviations: gold -3 (16), 6.5 (3), 9.5 (3); judge -3 (16),
    #   8 (6). Products: 16 * 9 + 3 * 6.5 * 8 + 3 * 9.5 * 8 = 144 + 156 + 228 = 528. Squares:
    #   gold 144 + 3 * 42.25 + 3 * 90.25 = 541.5; judge 144 + 6 * 64 = 528.
    #   ρ = 528 / sqrt(541.5 * 528) = sqrt(528 / 541.5) = 0.98746...
    # val-de-2: nothing marked on either side: IoU 1 (both empty), Cor 1 (both constant).
    de_cor = (math.sqrt(528 / 541.5) + 1) / 2
    assert figs["de"]["metrics"]["judge"]["iou"] == pytest.approx((0.5 + 1) / 2)
    assert figs["de"]["metrics"]["judge"]["cor"] == pytest.approx(de_cor)
    # val-zh-1, "埃菲尔铁塔在罗马。" (9 characters): gold [6, 8) at .75; judge as spans [5, 8) (prob 1).
    #   IoU = |{6, 7}| / |{5, 6, 7}| = 2 / 3.
    #   Cor: gold 7 zeros, 2 x .75 -> mean ranks 4, 8.5; judge 6 zeros, 3 x 1 -> 3.5, 8; rank means
    #   5. Deviations, characters 0..8: gold [-1 x 6, 3.5, 3.5, -1], judge [-1.5 x 5, 3, 3, 3, -1.5].
    #   Products: 5 * 1.5 - 3 + 2 * 10.5 + 1.5 = 27. Squares: gold 7 + 2 * 12.25 = 31.5; judge
    #   6 * 2.25 + 3 * 9 = 40.5. ρ = 27 / sqrt(31.5 * 40.5) = 0.75593...
    assert figs["zh"]["metrics"]["judge"]["iou"] == pytest.approx(2 / 3)
    assert figs["zh"]["metrics"]["judge"]["cor"] == pytest.approx(27 / math.sqrt(31.5 * 40.5))
    # mark everything on de: IoU 3/22 and 0 (nothing is gold in val-de-2); Cor 0 and 1 (all-1
    # against all-0: both constant)
    assert figs["de"]["metrics"]["mark everything"]["iou"] == pytest.approx(3 / 22 / 2)
    assert figs["de"]["metrics"]["mark everything"]["cor"] == 0.5
    assert "the question: Mu-SHROOM ships no source text" in md
    assert "| zh | judge | 1 | 0.667 | 0.756 |" in md


def test_psiloqa(tmp_path):
    data = DATA / "psiloqa"
    report, md = _run(
        tmp_path,
        "--dataset",
        f"pq={data / 'test.jsonl'}",
        "--span-predictions",
        f"judge={data / 'judge.spans.jsonl'}",
    )
    figs = report["multilingual"]["pq"]["by_language"]
    # de: psilo-de-1 gold [13, 17) ("1750"), judge [13, 20): tp 4, predicted 7, gold 4; IoU 4/7.
    #   psilo-de-2: nothing either side: IoU 1. P = 4/7, R = 1, F1 = (8/7) / (11/7) = 8/11;
    #   mean IoU (4/7 + 1) / 2 = 11/14
    de = figs["de"]["metrics"]["judge"]
    assert de["precision"] == pytest.approx(4 / 7) and de["recall"] == 1.0
    assert de["f1"] == pytest.approx(8 / 11) and de["iou"] == pytest.approx(11 / 14)
    # ar: gold [0, 7) ("القاهرة"), judge [0, 5): P 1, R 5/7, F1 (10/7) / (12/7) = 5/6; IoU 5/7
    ar = figs["ar"]["metrics"]["judge"]
    assert ar["f1"] == pytest.approx(5 / 6) and ar["iou"] == pytest.approx(5 / 7)
    # RAGTruth's figures apply too: response level, both responses flagged and hallucinated: F1 1
    assert report["ragtruth"]["pq"]["metrics"]["judge spans"]["response"]["f1"] == 1.0
    assert "## RAGTruth's figures on PsiloQA: pq" in md


def test_translated_ragtruth(tmp_path):
    spans = tmp_path / "spans.jsonl"
    # zh-1, "巴黎有三百万居民。": gold [3, 6); predicted [2, 6); zh-2 nothing predicted
    spans.write_text('{"id": "zh-1", "spans": [{"start": 2, "end": 6}]}\n{"id": "zh-2", "spans": []}\n')
    report, md = _run(
        tmp_path,
        "--dataset",
        f"rt={DATA / 'ragtruth_translated'}",
        "--lang",
        "zh",
        "--ragtruth-spans",
        f"judge={spans}",
    )
    zh = report["multilingual"]["rt"]["by_language"]["zh"]["metrics"]["judge"]
    # tp 3, predicted 4, gold 3: P 3/4, R 1, F1 (3/2) / (7/4) = 6/7; IoU (3/4 + 1) / 2 = 7/8
    assert zh["f1"] == pytest.approx(6 / 7) and zh["iou"] == pytest.approx(7 / 8)
    assert report["ragtruth"]["rt"]["selection"]["kept"] == 2
    # one language: LettuceDetect's published figures for it beside the run's
    assert {p["published"] for p in report["published"]["rt"]} == {0.7727, 0.6023}
    assert "## RAGTruth, machine-translated (LettuceDetect's release): rt, per language" in md


@pytest.mark.slow  # seconds: Q² on tiny models
def test_q2_on_tiny_models_reports_per_language_with_its_models(tmp_path, tiny_models):
    """Q² runs on SEAHORSE and PsiloQA through the normal file scorer; its figures sit per language
    beside the others, and each set's section names its models (here the tiny set: its numbers mean
    nothing)."""
    flags = [
        "--qg-model",
        tiny_models["qg"],
        "--qa-model",
        tiny_models["qa"],
        "--nli-model",
        tiny_models["nli"],
    ]
    out = tmp_path / "bench"
    argv = [
        "meta-eval",
        "--no-bertscore",
        "--bootstrap",
        "20",
        "--no-cache",
        "--dataset",
        f"sh={DATA / 'seahorse'}",
        "--dataset",
        f"pq={DATA / 'psiloqa' / 'test.jsonl'}",
    ]
    assert main([*argv, *flags, "--device", "cpu", "--no-progress", "--out-dir", str(out)]) == 0
    report = json.loads((out / "benchmark.json").read_text())
    md = (out / "benchmark.md").read_text()
    sh = report["multilingual"]["sh"]["by_language"]
    assert set(sh) == {"de", "en", "es", "all"} and all("q2" in per for per in sh.values())
    assert sh["all"]["q2"]["n"] + sh["all"]["q2"]["unscored"] == 7
    pq = report["multilingual"]["pq"]["by_language"]
    assert (
        set(pq) == {"de", "ar"}
        and pq["de"]["metrics"]["q2"]["answers"] + len(pq["de"]["metrics"]["q2"]["unscored"]) == 2
    )
    assert f"Q²'s models: `{report['signature_short']}`" in md
    beside = {p["measure"]: p for p in report["published"]["sh"]}
    assert (
        beside["roc_auc_all"]["measured_by"].startswith("Q² (") and beside["roc_auc_all"]["published"] == 0.85
    )
    # Q²'s spans slice each answer exactly (checked by the runner) and are keyed by PsiloQA's ids
    spans = [json.loads(line) for line in (out / "q2" / "pq.spans.jsonl").read_text().splitlines()]
    assert [s["id"] for s in spans] == ["psilo-de-1", "psilo-de-2", "psilo-ar-1"]


def test_a_multilingual_flag_without_its_set_is_refused(tmp_path, capsys):
    from support.cli import refused

    true = tmp_path / "t.csv"
    true.write_text("grounding,generated_text,label\nK one.,R one.,1\nK two.,R two.,0\n")
    out = str(tmp_path / "bench")
    refused(
        capsys, [*NO_WORK, "--dataset", f"t={true}", "--lang", "de", "--out-dir", out], "--lang applies to"
    )
    refused(
        capsys,
        [*NO_WORK, "--dataset", f"t={true}", "--seahorse-articles", str(true), "--out-dir", out],
        "--seahorse-articles applies to a SEAHORSE --dataset",
    )
    assert not (tmp_path / "bench").exists()
