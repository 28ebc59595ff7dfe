"""The published-figures table: every figure names its paper and where it was checked (or says it
was not), the Q² paper's are `version`'s own, and the Hub card shows the whole table."""

import pytest
from support.data import ROOT

from q2_metric import version as card_text
from q2_metric.meta.published import FIGURES, beside, figures_for, render_markdown


def test_every_figure_names_its_source():
    for f in FIGURES:
        assert f.paper and f.metric and f.models, f
        assert f.source or "not checked" in f.note, f  # a figure taken as quoted says so
        assert f.table is None or f.table.startswith("Table "), f
        assert 0 < f.value <= 1, f


def test_the_papers_figures_are_the_cards_constants():
    q2 = {f.measure: f.value for f in figures_for("q2-wow") if f.table}
    assert q2["accuracy@0.5"] == card_text.PAPER_ACCURACY
    assert q2["bootstrap_spearman"] == card_text.PAPER_SPEARMAN
    assert q2["mean_q2.MemNet.consistent"] == card_text.PAPER_VALUES["MemNet", "consistent"]


def test_the_benchmarks_asked_for_are_covered():
    measures = {(f.benchmark, f.measure, f.metric) for f in FIGURES}
    assert ("ragtruth", "response_f1", "LettuceDetect-large-v1") in measures
    assert ("ragtruth", "char_f1_lettucedetect", "LettuceDetect-large-v1") in measures
    assert ("ragtruth", "response_f1", "RAG-HAT") in measures
    assert ("llm-aggrefact", "mean_balanced_accuracy", "Bespoke-MiniCheck-7B") in measures
    assert {f.benchmark for f in FIGURES if f.measure == "roc_auc_best"} == {"begin-v1", "q2-wow", "dialfact"}


def test_beside_pairs_each_published_figure_with_the_measured_one():
    rows = beside("ragtruth", {"response_f1": 0.5}, "Q²")
    assert [(r["published_by"], r["measured"]) for r in rows] == [
        ("LettuceDetect-large-v1", 0.5),
        ("LettuceDetect-large-v1", None),  # character F1: not measured in this run
        ("RAG-HAT", 0.5),
    ]


def test_hub_card_shows_the_table():
    card = (ROOT / "hub_card" / "README.md").read_text(encoding="utf-8")
    assert render_markdown() in card


def test_true_dialogue_aucs_are_granite_guardians_table_8():
    # re-typed from Table 8 of the Granite Guardian report (Padhi et al., 2024, arXiv 2412.07724,
    # technical_report.pdf of github.com/ibm-granite/granite-guardian at 946455e): the best ROC AUC
    # in each of its BEGIN, Q2 and DialF columns
    rows = {(f.benchmark, f.metric, f.value, f.table) for f in FIGURES if f.measure == "roc_auc_best"}
    assert rows == {
        ("begin-v1", "WeCheck-0.4B", 0.864, "Table 8"),
        ("q2-wow", "Granite-Guardian-3.0-8B", 0.913, "Table 8"),
        ("dialfact", "Granite-Guardian-3.0-8B", 0.946, "Table 8"),
    }


def test_minichecks_figure_is_the_leaderboards_mean():
    # Bespoke-Minicheck-7B's 11 balanced accuracies, re-typed from the LLM-AggreFact leaderboard's
    # source (src/app/data.tsx at a42c9d2, 2024-10-22): CNN, XSum, MediaS, MeetB, WiCE, REVEAL,
    # ClaimVerify, FactCheck, ExpertQA, LFQA, RAGTruth; its Average is their unweighted mean to 0.1
    per_dataset = [65.5, 77.8, 76.0, 78.3, 83.0, 88.0, 75.3, 77.7, 59.2, 86.7, 84.0]
    (minicheck,) = figures_for("llm-aggrefact")
    assert minicheck.value * 100 == pytest.approx(round(sum(per_dataset) / len(per_dataset), 1))


def test_the_table_prints_the_q2_papers_figures_as_printed_and_the_others_x100():
    table = render_markdown()
    assert "| 0.238 |" in table and "| 0.9798 |" in table  # the Q² paper's Tables 2 and 4
    assert "| 91.3 |" in table and "| 86.4 |" in table and "| 58.93 |" in table and "| 77.4 |" in table


def test_faithdials_tables_5_and_8_are_the_data_files_rows():
    # data/faithdial/published_q2.csv: FaithDial's Q² columns re-typed from its paper (in percent)
    import csv

    from support.data import DATA

    path = DATA / "faithdial" / "published_q2.csv"
    with open(path, newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    want = set()
    for r in rows:
        system = f"{r['model']}, trained on {r['trained_on']}, tested on {r['tested_on']}"
        want.add((f"Table {r['table']}", system, "Q²-F1", float(r["q2_f1"])))
        want.add((f"Table {r['table']}", system, "Q²-NLI", float(r["q2_nli"])))
    got = {(f.table, f.system, f.metric, round(f.value * 100, 1)) for f in figures_for("faithdial")}
    assert got == want and len(got) == 52
    table = render_markdown()
    assert (
        "| faithdial | mean Q²-NLI, T5-CTRL, trained on WoW then FaithDial, tested on FaithDial | Q²-NLI |"
        in table
    )
    assert "| 83.5 |" in table and "| Table 5 |" in table and "| Table 8 |" in table
    # beside a run's figures: each row names its system and table
    rows = beside("faithdial", {"mean_q2_nli": 0.7, "mean_q2_f1": None}, "Q²")
    assert len(rows) == 52 and {r["table"] for r in rows} == {"Table 5", "Table 8"}
    assert {r["measured"] for r in rows if r["measure"] == "mean_q2_nli"} == {0.7}
    assert {r["measured"] for r in rows if r["measure"] == "mean_q2_f1"} == {None}
    assert rows[0]["label"] == "mean Q²-F1, GPT2, trained on WoW, tested on FaithDial"
