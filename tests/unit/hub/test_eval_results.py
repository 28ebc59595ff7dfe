"""`q2 publish` as the Hub's Eval Results: the `.eval_results/` files (the Hub's format, hub-docs'
eval_results.yaml), written into a folder, printed, or sent as a pull request; the pull request's
operations are built by the real code and captured at `HfApi.create_commit`, nothing is sent.

Expected entries are written out here by hand from the results file given (the format's fields as
hub-docs documents them), not taken from the code under test."""

from __future__ import annotations

import hashlib
import json
import os

import pytest
import yaml
from support.cli import refused
from support.files import snapshot

from q2_metric.cli import main
from q2_metric.config import Q2Config
from q2_metric.hub import eval_results as er
from q2_metric.hub.publish import PublishError
from q2_metric.signature import Signature

REAL = str(Signature.create(Q2Config.paper()))  # the paper's models and rules
DNLI = str(Signature.create(Q2Config.dnli()))
TINY = str(Signature.create(Q2Config.paper(), {"qg": "tiny-random-0a1b2c3d"}))
RESULTS = {"q2": 0.61234, "q2_no_nli": 0.5, "coverage": 0.9, "signature": REAL}
PAPER = "https://aclanthology.org/2021.emnlp-main.619/"


def expected(value, label, coverage=0.9, dataset="me/dialogues", date="2026-01-15"):
    return [
        {
            "dataset": {"id": dataset, "task_id": "default"},
            "value": value,
            "date": date,
            "source": {"url": PAPER, "name": "Q² (Honovich et al., 2021)"},
            "notes": f"{label}: the mean over the responses scored, on 0-1; coverage {coverage:g}; signature: {REAL}",
        }
    ]


@pytest.fixture
def results(tmp_path):
    path = tmp_path / "results.json"
    path.write_text(json.dumps(RESULTS), encoding="utf-8")
    return path


def test_files_in_a_folder_are_the_hubs_format(tmp_path, results):
    repo = tmp_path / "my-model"
    (repo / ".eval_results").mkdir(parents=True)
    (repo / ".eval_results" / "other.yaml").write_text("- dataset: {id: a/b, task_id: t}\n  value: 1\n")
    base = ["publish", "--results", str(results), "--dataset-id", "me/dialogues", "--date", "2026-01-15"]
    assert main([*base, "--eval-results", str(repo)]) == 0
    folder = repo / ".eval_results"
    names = sorted(p.name for p in folder.iterdir())
    # one file per benchmark and variant: Q²-NLI and Q²-F1; another benchmark's file is kept
    assert names == ["me-dialogues_q2-f1.yaml", "me-dialogues_q2-nli.yaml", "other.yaml"]
    nli = yaml.safe_load((folder / "me-dialogues_q2-nli.yaml").read_text(encoding="utf-8"))
    f1 = yaml.safe_load((folder / "me-dialogues_q2-f1.yaml").read_text(encoding="utf-8"))
    assert nli == expected(0.6123, "Q²-NLI (Q² with its NLI step)")
    assert f1 == expected(0.5, "Q²-F1 (token F1 only)")
    assert isinstance(nli[0]["date"], str)  # the format wants the date as a string
    # huggingface_hub's own reader takes them as written
    from huggingface_hub import parse_eval_result_entries

    (entry,) = parse_eval_result_entries(nli)
    assert (entry.dataset_id, entry.task_id, entry.value, entry.source_url) == (
        "me/dialogues",
        "default",
        0.6123,
        PAPER,
    )
    assert REAL in entry.notes
    # again: the same files replaced, nothing else changes
    before = snapshot(folder)
    assert main([*base, "--eval-results", str(repo)]) == 0
    assert snapshot(folder) == before


def test_the_date_defaults_to_the_day_the_results_were_written_and_a_variant_has_its_own_file(
    tmp_path, results
):
    os.utime(results, (1767225600, 1767225600))  # 2026-01-01 00:00 UTC
    (f, _) = er.results_files(RESULTS, dataset_id="a/b", date=er.file_date(results))
    assert f.entries[0]["date"] == "2026-01-01" and f.name == "a-b_q2-nli.yaml"
    (f, _) = er.results_files({**RESULTS, "signature": DNLI}, dataset_id="a/b", date="2026-01-01")
    assert f.name == "a-b_q2-nli_dnli.yaml"


def test_pull_request_operations_are_built_offline(tmp_path, results, monkeypatch, capsys):
    from huggingface_hub import CommitOperationAdd, HfApi

    sent = []

    class Commit:
        pr_url = "https://huggingface.co/me/my-model/discussions/7"

    def create_commit(self, **kwargs):  # the transport only: what the real code hands to the Hub
        sent.append(kwargs)
        return Commit()

    monkeypatch.setattr(HfApi, "create_commit", create_commit)
    argv = [
        "publish",
        "--results",
        str(results),
        "--dataset-id",
        "me/dialogues",
        "--date",
        "2026-01-15",
        "--repo-id",
        "me/my-model",
        "--create-pr",
    ]
    assert main(argv) == 0
    assert "discussions/7" in capsys.readouterr().out
    (call,) = sent
    assert call["repo_id"] == "me/my-model" and call["repo_type"] == "model" and call["create_pr"] is True
    ops = call["operations"]
    assert all(isinstance(op, CommitOperationAdd) for op in ops)
    got = {op.path_in_repo: yaml.safe_load(op.path_or_fileobj.decode("utf-8")) for op in ops}
    assert got == {
        ".eval_results/me-dialogues_q2-nli.yaml": expected(0.6123, "Q²-NLI (Q² with its NLI step)"),
        ".eval_results/me-dialogues_q2-f1.yaml": expected(0.5, "Q²-F1 (token F1 only)"),
    }
    assert "eval-results" in call["commit_description"] and call["commit_message"]
    # the same files as the folder gets
    assert main(argv[:-3] + ["--eval-results", str(tmp_path / "m")]) == 0
    for path, entries in got.items():
        assert yaml.safe_load((tmp_path / "m" / path).read_text(encoding="utf-8")) == entries


def test_a_meta_eval_report_gives_a_file_per_set_variant_and_figure(tmp_path, capsys):
    report = {
        "kind": "benchmark",
        "signature": REAL,
        "datasets": {
            "fd": {"format": "faithdial", "n": 8, "label_rule": "r"},
            "begin": {"format": "begin-v1", "n": 10, "label_rule": "r2"},
        },
        "results": {
            "fd": {
                "metrics": {
                    "q2": {"roc_auc": 0.75},
                    "q2_no_nli": {"roc_auc": 0.625},
                    "bleu": {"roc_auc": 0.5},
                }
            },
            "begin": {"metrics": {"q2": {"roc_auc": 0.8}, "q2_no_nli": {"roc_auc": None}}},
        },
        "published": {
            "fd": [
                {"measure": "mean_q2_f1", "measured": 0.4},
                {"measure": "mean_q2_nli", "measured": 0.7},
            ]
        },
    }
    path = tmp_path / "benchmark.json"
    path.write_text(json.dumps(report), encoding="utf-8")
    base = ["publish", "--meta-eval", str(path), "--date", "2026-01-15"]
    refused(
        capsys, [*base, "--dry-run"], "No Hub dataset id for the set(s) begin", "--dataset-id NAME=OWNER/SET"
    )
    assert main([*base, "--dataset-id", "begin=me/begin", "--eval-results", str(tmp_path / "m")]) == 0
    files = {
        p.name: yaml.safe_load(p.read_text(encoding="utf-8"))
        for p in (tmp_path / "m" / ".eval_results").iterdir()
    }
    values = {name: (f[0]["dataset"]["id"], f[0]["value"]) for name, f in files.items()}
    # an id that is not plain lowercase letters and digits (McGill-NLP: slugs like McGill/NLP-...)
    # gets 8 hex digits of its exact key (id case-folded, task, set)
    fd = "mcgill-nlp-faithdial_fd." + hashlib.sha256(b"mcgill-nlp/faithdial\ndefault\nfd").hexdigest()[:8]
    assert values == {
        f"{fd}_q2-nli_roc-auc.yaml": ("McGill-NLP/FaithDial", 0.75),
        f"{fd}_q2-nli_mean.yaml": ("McGill-NLP/FaithDial", 0.7),
        f"{fd}_q2-f1_roc-auc.yaml": ("McGill-NLP/FaithDial", 0.625),
        f"{fd}_q2-f1_mean.yaml": ("McGill-NLP/FaithDial", 0.4),
        "me-begin_begin_q2-nli_roc-auc.yaml": ("me/begin", 0.8),
    }
    assert all(f[0]["notes"].endswith(f"signature: {REAL}") for f in files.values())
    for name, entries in files.items():
        er.check_file(name, yaml.safe_dump(entries, allow_unicode=True))
    # a meta-eval report never goes into a card
    refused(
        capsys,
        [*base, "--dataset-id", "begin=me/begin", "--card", str(tmp_path / "README.md")],
        "Eval Results only",
    )


@pytest.mark.parametrize(
    "text, why",
    [
        ("dataset: {id: a/b, task_id: t}\nvalue: 1\n", "non-empty list of entries"),
        ("- dataset: {id: a/b}\n  value: 1\n", "dataset.task_id is required"),
        ("- dataset: {id: ab, task_id: t}\n  value: 1\n", "dataset.id must be a Hub dataset id"),
        ("- dataset: {id: a/b, task_id: t}\n  value: '1'\n", "value must be a finite number"),
        ("- dataset: {id: a/b, task_id: t}\n  value: .nan\n", "value must be a finite number"),
        (
            "- dataset: {id: a/b, task_id: t}\n  value: 1\n  date: 2026-01-15\n",
            "date must be an ISO-8601 date",
        ),
        (
            "- dataset: {id: a/b, task_id: t}\n  value: 1\n  source: {name: x}\n",
            "source must be a mapping with a url",
        ),
        ("- dataset: {id: a/b, task_id: t}\n  value: 1\n  score: 2\n", "outside the format: score"),
        ("- dataset: {id: a/b, task_id: t}\n  value: 1\n  notes: 3\n", "notes must be a string"),
    ],
)
def test_the_check_refuses_what_the_hubs_format_does_not_allow(text, why):
    with pytest.raises(PublishError, match=why) as err:
        er.check_file("x.yaml", text)
    assert "hub-docs" in str(err.value)


def test_refusals_are_one_sentence_before_anything_is_written_or_sent(tmp_path, results, monkeypatch, capsys):
    from huggingface_hub import HfApi

    monkeypatch.setattr(HfApi, "create_commit", lambda self, **kw: pytest.fail("nothing may be sent"))
    tiny = tmp_path / "tiny.json"
    tiny.write_text(json.dumps({**RESULTS, "signature": TINY}), encoding="utf-8")
    out = tmp_path / "m"
    base = ["publish", "--dataset-id", "me/d"]
    refused(capsys, [*base, "--results", str(tiny), "--eval-results", str(out)], "tiny random models")
    refused(capsys, [*base, "--results", str(tiny), "--repo-id", "me/m", "--create-pr"], "tiny random models")
    refused(
        capsys, ["publish", "--results", str(results), "--eval-results", str(out)], "--dataset-id OWNER/SET"
    )
    refused(capsys, [*base, "--results", str(results), "--create-pr"], "--create-pr needs --repo-id")
    refused(
        capsys,
        [*base[:-1], "medialogues", "--results", str(results), "--eval-results", str(out)],
        "not a Hub dataset id",
    )
    refused(
        capsys,
        [*base, "--results", str(results), "--date", "15/01/2026", "--dry-run", "--eval-results", str(out)],
        "not an ISO-8601 date",
    )
    assert not out.exists()
    # a link in a file's place (to the input, or elsewhere) is refused, and nothing is written
    (out / ".eval_results").mkdir(parents=True)
    (out / ".eval_results" / "me-d_q2-nli.yaml").symlink_to(results)
    (tmp_path / "elsewhere.yaml").write_text("x\n")
    (out / ".eval_results" / "me-d_q2-f1.yaml").symlink_to(tmp_path / "elsewhere.yaml")
    refused(capsys, [*base, "--results", str(results), "--eval-results", str(out)], "is the input")
    (out / ".eval_results" / "me-d_q2-nli.yaml").unlink()
    before = snapshot(tmp_path)
    refused(capsys, [*base, "--results", str(results), "--eval-results", str(out)], "symbolic link")
    assert snapshot(tmp_path) == before


def test_dry_run_prints_the_files(results, capsys):
    assert (
        main(
            [
                "publish",
                "--results",
                str(results),
                "--dataset-id",
                "me/d",
                "--date",
                "2026-01-15",
                "--dry-run",
                "--eval-results",
                "x",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "# .eval_results/me-d_q2-nli.yaml" in out and "value: 0.6123" in out and not os.path.exists("x")
