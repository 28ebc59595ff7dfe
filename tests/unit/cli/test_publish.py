"""`q2 publish`: the dry run, the card's YAML header, its paths and the token help."""

from __future__ import annotations

import json

from support.cli import refused
from support.files import snapshot

from q2_metric.cli import main


def test_publish_dry_run_prints_q2_not_an_escape(tmp_path, capsys):
    results = tmp_path / "results.json"
    results.write_text(json.dumps({"q2": 0.5, "q2_no_nli": 0.4, "coverage": 0.9, "signature": "q2:x"}))
    assert main(["publish", "--results", str(results), "--model-name", "m", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "name: Q²" in out and "\\xB2" not in out


def test_publish_card_bad_yaml_and_collisions_are_one_sentence(tmp_path, capsys):
    results = tmp_path / "results.json"
    results.write_text(json.dumps({"q2": 0.5, "q2_no_nli": 0.4, "coverage": 0.9, "signature": "q2:x"}))
    card = tmp_path / "README.md"
    card.write_text("---\nlicense: [mit\n---\n# m\n")
    before = snapshot(tmp_path)
    base = ["publish", "--results", str(results), "--model-name", "m"]
    refused(
        capsys, [*base, "--card", str(card)], f"The YAML header of the card '{card}' cannot be read (line"
    )
    refused(capsys, [*base, "--card", str(card), "--dry-run"], "cannot be read")
    refused(
        capsys, [*base, "--card", str(results)], f"'{results}' (--card) is the input '{results}' (--results)"
    )
    link = tmp_path / "CARD.md"
    link.symlink_to(card)
    refused(capsys, [*base, "--card", str(link)], "is a symbolic link")
    assert snapshot(tmp_path) == {**before, **snapshot(link)}
    card.write_text("---\nlicense: mit\n---\n# m\n")
    assert main([*base, "--card", str(card)]) == 0
    assert "model-index" in card.read_text() and "license: mit" in card.read_text()


def test_token_help_prefers_the_environment():
    from q2_metric.cli import build_parser

    publish = build_parser()._subparsers._group_actions[0].choices["publish"]
    assert "HF_TOKEN" in publish.format_help() and "hf auth login" in publish.format_help()


# -- the operating point (q2 publish --operating-point FILE) ------------------------------------------
SIG = "q2:0.5.0|qg:some-qg|qa:some-qa|nli:some-nli"
OP = {
    "format": "q2-operating-point",
    "version": 1,
    "threshold": 0.4,
    "rule": {"name": "balanced_accuracy"},
    "dataset": {"name": "wow", "sha256": "a" * 64},
    "scores": {"sha256": "b" * 64, "signature": SIG},
    "figures": {"balanced_accuracy": {"value": 0.7, "low": 0.6, "high": 0.8}},
    "calibration": {"ece": 0.1, "table": []},
    "created": "2026-12-01T23:00:00+00:00",
}


def test_publish_carries_the_operating_point_on_the_card_and_in_the_eval_results_notes(tmp_path, capsys):
    import hashlib

    import yaml

    results, op, card = tmp_path / "results.json", tmp_path / "op.json", tmp_path / "README.md"
    results.write_text(json.dumps({"q2": 0.5, "q2_no_nli": 0.4, "coverage": 0.9, "signature": SIG}))
    op.write_text(json.dumps(OP))
    digest = hashlib.sha256(op.read_bytes()).hexdigest()
    signed = f"{SIG}|thr:0.4|op:ba@{digest[:12]}"
    summary = {
        "threshold": 0.4,
        "rule": "balanced_accuracy",
        "dataset": "wow",
        "sha256": digest,
        "signature": f"ba@{digest[:12]}",
    }
    base = ["publish", "--results", str(results), "--operating-point", str(op)]
    assert main([*base, "--model-name", "m", "--card", str(card)]) == 0
    header = yaml.safe_load(card.read_text(encoding="utf-8").split("---")[1])
    metrics = [m for r in header["model-index"][0]["results"] for m in r["metrics"]]
    assert {m["type"] for m in metrics} == {"q2", "q2/q2_no_nli", "q2/coverage"}
    for m in metrics:
        assert m["config"] == signed and m["args"] == {"operating_point": summary}
    out_dir = tmp_path / "repo"
    assert main([*base, "--eval-results", str(out_dir), "--dataset-id", "McGill-NLP/FaithDial"]) == 0
    files = sorted((out_dir / ".eval_results").iterdir())
    assert files
    for f in files:
        (entry,) = yaml.safe_load(f.read_text(encoding="utf-8"))
        assert (
            f"decisions at the operating point balanced_accuracy on wow (threshold 0.4, op:ba@{digest[:12]})"
            in entry["notes"]
        )
        assert entry["notes"].endswith(f"signature: {signed}")
    capsys.readouterr()
    # results decided at another operating point: one sentence, nothing written
    other = tmp_path / "other.json"
    decided = {"operating_point": {**summary, "sha256": "c" * 64}}
    other.write_text(json.dumps({**json.loads(results.read_text()), **decided}))
    refused(
        capsys,
        ["publish", "--results", str(other), "--operating-point", str(op), "--model-name", "m", "--dry-run"],
        "were decided at another operating point",
    )
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    refused(capsys, [*base[:-1], str(bad), "--model-name", "m", "--dry-run"], "'format' must be")
