"""The response cache: damaged entries are dropped and reported once; the key follows library versions."""

from __future__ import annotations

import json

from support.files import HEADER, ROWS

from q2_metric.corpus.files import score_file
from q2_metric.testing.scripted import scripted_scorer


def test_damaged_cache_entry_is_dropped_recomputed_and_reported_once(tmp_path, capsys):
    data = tmp_path / "in.csv"
    data.write_text(HEADER + ROWS)
    first = score_file(scripted_scorer(), data, tmp_path / "a.csv", cache_dir=tmp_path / "cache")
    [cache] = (tmp_path / "cache").rglob("responses.jsonl")
    lines = cache.read_text().splitlines()
    key = json.loads(lines[0])["key"]
    cache.write_text(
        "\n".join(
            [
                json.dumps({"key": key, "result": {}}),
                *lines[1:],
                json.dumps({"result": {}}),
                '["not", "ours"]',
            ]
        )
        + "\n"
    )
    capsys.readouterr()
    second = score_file(scripted_scorer(), data, tmp_path / "b.csv", cache_dir=tmp_path / "cache")
    assert (second.num_cached, second.num_scored_now) == (1, 1)
    assert second.warnings == [
        f"3 damaged lines of the cache file '{cache}' were dropped; their rows are scored again"
    ]
    assert capsys.readouterr().err.count("damaged lines") == 1
    third = score_file(scripted_scorer(), data, tmp_path / "c.csv", cache_dir=tmp_path / "cache")
    assert (third.num_cached, third.warnings) == (2, [])  # reported once: the damaged lines are gone
    assert (
        (tmp_path / "a.csv").read_bytes()
        == (tmp_path / "b.csv").read_bytes()
        == (tmp_path / "c.csv").read_bytes()
    )
    assert first.system.q2 == second.system.q2


def test_a_deeply_nested_cache_line_is_a_damaged_line_not_a_traceback(tmp_path):
    data = tmp_path / "in.csv"
    data.write_text(HEADER + ROWS)
    score_file(scripted_scorer(), data, tmp_path / "a.csv", cache_dir=tmp_path / "cache")
    [cache] = (tmp_path / "cache").rglob("responses.jsonl")
    with open(cache, "a") as f:
        f.write("[" * 100_000 + "]" * 100_000 + "\n")
    again = score_file(scripted_scorer(), data, tmp_path / "b.csv", cache_dir=tmp_path / "cache")
    assert (again.num_cached, again.num_scored_now) == (2, 0)
    assert again.warnings == [
        f"1 damaged line of the cache file '{cache}' was dropped; its row is scored again"
    ]
    assert (tmp_path / "a.csv").read_bytes() == (tmp_path / "b.csv").read_bytes()


def test_cache_key_follows_library_versions(monkeypatch):
    from q2_metric import signature
    from q2_metric.corpus.cache import cache_key

    scorer = scripted_scorer()
    keys = {cache_key(scorer)}
    for lib in ("transformers", "tokenizers", "spacy", "torch"):
        real = signature._version
        monkeypatch.setattr(
            signature, "_version", lambda d, lib=lib, real=real: "0.0.0-other" if d == lib else real(d)
        )
        keys.add(cache_key(scorer))
        monkeypatch.setattr(signature, "_version", real)
    assert len(keys) == 5  # each library's version changes the key
