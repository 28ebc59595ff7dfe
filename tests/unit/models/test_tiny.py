"""The tiny random models (`--tiny`, Q2_TINY_MODELS): built once, as documented, never over a user's files."""

from __future__ import annotations

import json

import pytest
from support.data import ROOT


def test_tiny_cache_has_the_documented_subfolders_and_mark(tiny_dir):
    for role in ("qg", "qa", "nli"):
        config = json.loads((tiny_dir / role / "config.json").read_text())
        assert config["q2_tiny_random"] is True
        assert (tiny_dir / role / "tokenizer.json").is_file()
    stamp = (tiny_dir / "qg" / "config.json").stat().st_mtime_ns
    from q2_metric.models.tiny import ensure_tiny_models

    ensure_tiny_models(tiny_dir)  # built once: a second call reuses it
    assert (tiny_dir / "qg" / "config.json").stat().st_mtime_ns == stamp
    docs = (ROOT / "docs" / "models.md").read_text()
    assert all(f"| `{role}/` |" in docs for role in ("qg", "qa", "nli"))


def test_tiny_folder_never_touches_what_it_did_not_build(tmp_path, tiny_dir):
    """Q2_TINY_MODELS pointed at a folder holding the user's files: they stay byte for byte; a qg/
    this package did not build is refused in one sentence; a damaged copy of ours is rebuilt alone."""
    import shutil

    from q2_metric.errors import Q2InputError
    from q2_metric.models.tiny import ensure_tiny_models

    folder = tmp_path / "mine"
    (folder / "notes").mkdir(parents=True)
    (folder / "notes" / "a.txt").write_bytes(b"keep me\n")
    (folder / "qg").mkdir()
    (folder / "qg" / "config.json").write_text('{"model_type": "t5"}')  # the user's own model
    with pytest.raises(Q2InputError, match="is not a tiny model this package built"):
        ensure_tiny_models(folder)
    assert (folder / "qg" / "config.json").read_text() == '{"model_type": "t5"}'
    shutil.rmtree(folder / "qg")
    shutil.copytree(tiny_dir / "qa", folder / "qa")  # one role of ours already there, the others missing
    ensure_tiny_models(folder)
    assert (folder / "notes" / "a.txt").read_bytes() == b"keep me\n"
    # no temporary left; the builders' lock file (`.lock`, so that runs at once build once) is ours
    assert sorted(p.name for p in folder.iterdir()) == [".lock", "nli", "notes", "qa", "qg"]
