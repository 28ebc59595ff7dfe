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
