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


def test_the_python_api_warns_once_per_scorer_with_the_one_line(tiny_env):
    """`Q2Scorer(tiny=True)`, `Q2Scorer(Q2Config(tiny=True))` and `score(..., tiny=True)` give the
    tiny models' line (the one every front-end prints) as a `TinyModelsWarning`, at the caller's
    line; a configuration a front-end built (models provided, the front-end prints the line) and a
    scorer's later calls give none."""
    import warnings

    from q2_metric import Q2Config, Q2Scorer, TinyModelsWarning, score
    from q2_metric.display import tiny_note
    from q2_metric.frontend import configure

    line = tiny_note(always=True)
    assert line.startswith("These scores are meaningless: the models are tiny and random")
    for make in (
        lambda: Q2Scorer(tiny=True, device="cpu"),
        lambda: Q2Scorer(Q2Config(tiny=True, device="cpu")),
    ):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            scorer = make()
            scorer.score(["Bob Ross hosted the show."], ["Bob Ross hosted it."])
            scorer.score(["Bob Ross hosted the show."], ["Bob Ross hosted it."])
        tiny = [w for w in caught if issubclass(w.category, TinyModelsWarning)]
        assert [str(w.message) for w in tiny] == [line]  # once, for the scorer
        assert tiny[0].filename == __file__  # pointed at the caller's line
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        score(["Bob Ross hosted the show."], ["Bob Ross hosted it."], tiny=True, device="cpu")
    assert [str(w.message) for w in caught if issubclass(w.category, TinyModelsWarning)] == [line]
    assert caught[0].filename == __file__
    built = configure({"device": "cpu"}, tiny=True)  # a front-end's configuration
    assert tiny_note(built) == line
    with warnings.catch_warnings():
        warnings.simplefilter("error", TinyModelsWarning)
        Q2Scorer(built)
        Q2Scorer(Q2Config(tiny=False, device="cpu"))


def test_signature_and_config_say_tiny_the_same_way(tiny_env):
    """The two questions: `uses_tiny(config)` for a configuration, `Signature.tiny()` for a signature
    (`display.tiny_note_for` reads it); they agree on the same run."""
    from q2_metric import Q2Config, Q2Scorer
    from q2_metric.display import tiny_note, tiny_note_for
    from q2_metric.frontend import configure
    from q2_metric.models.tiny import uses_tiny

    built = configure({"device": "cpu"}, tiny=True)
    signature = Q2Scorer(built).signature()
    assert uses_tiny(built) and signature.tiny()
    assert tiny_note_for(signature) == tiny_note_for(str(signature)) == tiny_note(always=True)
    assert not uses_tiny(Q2Config(tiny=False))
    local = str(signature).replace("tiny-random-", "local-")  # the same folders without the mark
    assert "tiny-random" not in local and tiny_note_for(local) is None


def _file_bytes(folder):
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.mark.slow
def test_two_builds_in_two_folders_write_the_same_bytes(tmp_path):
    """`ensure_tiny_models` (the folder `--tiny` uses, with the coreference model of `coref=True`)
    run in two fresh folders: every file of qg/, qa/, nli/ and coref/ is byte for byte the same
    (the seed is `TINY_SEED`, passed explicitly), so the tiny models' scores and signature
    (`tiny-random-<digest of the folder>`) are the same on every machine."""
    from q2_metric.models.tiny import ensure_tiny_models

    first, second = tmp_path / "one", tmp_path / "two"
    ensure_tiny_models(first, coref=True)
    ensure_tiny_models(second, coref=True)
    a, b = _file_bytes(first), _file_bytes(second)
    assert {name.split("/")[0] for name in a} >= {"qg", "qa", "nli", "coref"}
    assert sorted(a) == sorted(b)
    assert [name for name in a if a[name] != b[name]] == []
