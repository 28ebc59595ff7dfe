"""`q2 meta-eval --ladder --control random-knowledge` (`q2_metric.cli.meta_eval.ladder`) on tiny models."""

import csv

import pytest


@pytest.mark.slow  # seconds: tiny models end to end, several times
def test_command_prints_both_tables_on_tiny_models(tmp_path, monkeypatch, capsys, rows):
    pytest.importorskip("fastcoref")
    from q2_metric.cli import main

    monkeypatch.setenv("Q2_TINY_MODELS", str(tmp_path / "tiny"))
    folder = tmp_path / "splits"
    folder.mkdir()
    for system in ("dodeca", "memnet"):
        for label in ("consistent", "inconsistent"):
            picked = [r for r in rows if r["system"] == system and r["label"] == label][:1]
            with open(folder / f"{system}_{label}.csv", "w", newline="", encoding="utf-8") as f:
                w = csv.DictWriter(f, fieldnames=list(rows[0]))
                w.writeheader()
                w.writerows(picked)
    code = main(
        [
            "meta-eval",
            "--annotated-dir",
            str(folder),
            "--ladder",
            "--control",
            "random-knowledge",
            "--tiny",
            "--limit",
            "1",
            "--device",
            "cpu",
            "--out-dir",
            str(tmp_path / "out"),
        ]
    )
    out = capsys.readouterr().out
    assert code == 0
    for name in (
        "| base |",
        "| +filter personal |",
        "| +top-k (k=5) |",
        "| +coreference |",
        "| original |",
        "| same dialogue, other turn |",
        "| other dialogue |",
        "meaningless",
    ):
        assert name in out
