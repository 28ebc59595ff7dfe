"""Pre-flight model and device checks: one sentence, before any work; exit code 2 from the CLI."""

import json
import os
import shutil
from pathlib import Path

import pytest

from q2_metric import ModelNotAvailable, Q2Config, Q2Scorer
from q2_metric.errors import DeviceNotAvailable, ModelCheckError
from q2_metric.models import checks
from q2_metric.models.checks import check_model
from q2_metric.testing.scripted import ScriptedParser, ScriptedQA, ScriptedQG


def copy_model(src, dst, keep=None):
    """A copy of the model folder `src`, with only the files named in `keep` when given."""
    shutil.copytree(src, dst)
    if keep is not None:
        for path in list(dst.iterdir()):
            if path.name not in keep:
                path.unlink()
    return dst


def test_good_models_pass_with_local_identity(tiny_models):
    for role in ("qg", "qa", "nli"):
        identity = check_model(tiny_models[role], role)
        # a local folder is named by its digest only, not by its path
        assert str(identity) == identity.revision and identity.revision.startswith("local-")
        assert len(identity.revision) == 18


@pytest.mark.parametrize(
    "keep, message",
    [
        (
            [],
            "The question-answering model directory '{p}' has no config.json; pass a directory written by "
            "save_pretrained() as qa_model (--qa-model).",
        ),
        (
            ["config.json"],
            "The question-answering model directory '{p}' has no weights (model.safetensors, "
            "pytorch_model.bin or a sharded index with all its shards); save the model with "
            "save_pretrained() or copy its weights there, or pass another model as qa_model (--qa-model).",
        ),
        (
            ["config.json", "tokenizer.json", "tokenizer_config.json"],
            "The question-answering model directory '{p}' has no weights (model.safetensors, pytorch_model.bin or "
            "a sharded index with all its shards); save the model with save_pretrained() or copy its weights "
            "there, or pass another model as qa_model (--qa-model).",
        ),
        (
            ["config.json", "model.safetensors"],
            "The question-answering model directory '{p}' has no tokenizer files (tokenizer.json, "
            "tokenizer_config.json or a vocabulary); save its tokenizer there too (tokenizer.save_pretrained()), "
            "or pass another model as qa_model (--qa-model).",
        ),
    ],
)
def test_incomplete_model_folders(tiny_models, tmp_path, keep, message):
    folder = copy_model(tiny_models["qa"], tmp_path / "qa", keep)
    with pytest.raises(ModelCheckError) as err:
        check_model(str(folder), "qa")
    assert str(err.value) == message.format(p=folder)


def test_sharded_weights_need_every_shard(tiny_models, tmp_path):
    folder = copy_model(tiny_models["qa"], tmp_path / "qa")
    (folder / "model.safetensors").rename(folder / "model-00001-of-00002.safetensors")
    index = {"weight_map": {"a": "model-00001-of-00002.safetensors", "b": "model-00002-of-00002.safetensors"}}
    (folder / "model.safetensors.index.json").write_text(json.dumps(index))
    with pytest.raises(ModelCheckError, match="has no weights"):
        check_model(str(folder), "qa")
    shutil.copy(folder / "model-00001-of-00002.safetensors", folder / "model-00002-of-00002.safetensors")
    check_model(str(folder), "qa")


def test_missing_path_and_uncached_hub_id():
    with pytest.raises(ModelNotAvailable) as err:
        check_model("/nonexistent/qg", "qg")
    assert str(err.value) == (
        "The question-generation model path '/nonexistent/qg' is not a directory with a "
        "saved model (nothing is there); pass a directory written by save_pretrained() as "
        "qg_model (--qg-model)."
    )
    with pytest.raises(ModelNotAvailable) as err:
        check_model("nobody/no-such-model", "nli")
    assert str(err.value) == (
        "The NLI model 'nobody/no-such-model' is not in the Hugging Face cache and the Hub cannot be reached "
        "(HF_HUB_OFFLINE is set): download it once where the Hub is reachable (`hf download "
        "nobody/no-such-model`) or pass a local model directory as nli_model (--nli-model)."
    )


@pytest.mark.parametrize(
    "given, role, message",
    [
        (
            "nli",
            "qa",
            "The question-answering model '{p}' is a sequence-classification model "
            "(RobertaForSequenceClassification), not an extractive question-answering model; pass the "
            "right model as qa_model (--qa-model).",
        ),
        (
            "qa",
            "qg",
            "The question-generation model '{p}' is an extractive question-answering model "
            "(AlbertForQuestionAnswering), not a sequence-to-sequence generation model such as T5; pass "
            "the right model as qg_model (--qg-model).",
        ),
        (
            "qg",
            "nli",
            "The NLI model '{p}' is a sequence-to-sequence generation model (T5ForConditionalGeneration), "
            "not a sequence-classification (NLI) model; pass the right model as nli_model (--nli-model).",
        ),
    ],
)
def test_wrong_kind_of_model(tiny_models, given, role, message):
    with pytest.raises(ModelCheckError) as err:
        check_model(tiny_models[given], role)
    assert str(err.value) == message.format(p=tiny_models[given])


def test_head_must_be_named(tiny_models, tmp_path):
    folder = copy_model(tiny_models["qa"], tmp_path / "qa")
    config = json.loads((folder / "config.json").read_text())
    config["architectures"] = ["AlbertModel"]
    (folder / "config.json").write_text(json.dumps(config))
    with pytest.raises(ModelCheckError, match=r"is a base model without a task head \(AlbertModel\)"):
        check_model(str(folder), "qa")
    del config["architectures"]
    (folder / "config.json").write_text(json.dumps(config))
    with pytest.raises(ModelCheckError, match=r"does not name its architecture in config.json"):
        check_model(str(folder), "qa")


def bad_label_nli(tiny_models, tmp_path):
    folder = copy_model(tiny_models["nli"], tmp_path / "nli")
    config = json.loads((folder / "config.json").read_text())
    config["id2label"] = {"0": "LABEL_0", "1": "LABEL_1", "2": "LABEL_2"}
    config["label2id"] = {v: int(k) for k, v in config["id2label"].items()}
    (folder / "config.json").write_text(json.dumps(config))
    return folder


def test_nli_labels_must_be_named_before_any_work(tiny_models, tmp_path):
    folder = bad_label_nli(tiny_models, tmp_path)
    qg = ScriptedQG()
    scorer = Q2Scorer(
        Q2Config(nli_model=str(folder), device="cpu"), parser=ScriptedParser(), qg=qg, qa=ScriptedQA()
    )
    with pytest.raises(ModelCheckError) as err:
        scorer.score(["Paris is big."], ["Paris is big."])
    assert str(err.value) == (
        f"The NLI model '{folder}' has the labels (0: LABEL_0, 1: LABEL_1, 2: LABEL_2), not the three labels "
        "entailment, neutral and contradiction by name; set id2label in its config.json to the model's label "
        "names, or pass another NLI model as nli_model (--nli-model)."
    )
    assert qg.calls == []  # raised before the first QG call


def test_identity_of_local_folder_follows_its_files(tiny_models, tmp_path):
    folder = copy_model(tiny_models["qa"], tmp_path / "qa")
    first = check_model(str(folder), "qa").revision
    assert check_model(str(folder), "qa").revision == first  # stable
    weights = folder / "model.safetensors"
    weights.write_bytes(weights.read_bytes())  # same bytes, rewritten: a new modification time
    assert check_model(str(folder), "qa").revision == first  # identity is content (issue 49)
    weights.write_bytes(weights.read_bytes() + b"\0")
    second = check_model(str(folder), "qa").revision
    assert second != first
    (folder / "README.md").write_text("notes")  # not a model file
    assert check_model(str(folder), "qa").revision == second


def fake_hub_cache(root, repo, commit, model_dir):
    """A Hugging Face cache holding `model_dir` as snapshot `commit` of `repo`, refs/main pointing at it."""
    repo_dir = root / f"models--{repo.replace('/', '--')}"
    shutil.copytree(model_dir, repo_dir / "snapshots" / commit)
    (repo_dir / "refs").mkdir(exist_ok=True)
    (repo_dir / "refs" / "main").write_text(commit)


def test_cached_hub_model_identity_is_its_snapshot_commit(tiny_models, tmp_path, monkeypatch):
    import huggingface_hub.constants

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path))
    old, new = "a" * 40, "b" * 40
    fake_hub_cache(tmp_path, "org/qa", old, tiny_models["qa"])
    assert str(check_model("org/qa", "qa")) == "org/qa@aaaaaaaaaa"
    fake_hub_cache(tmp_path, "org/qa", new, tiny_models["qa"])  # updated upstream and downloaded again
    assert check_model("org/qa", "qa").revision == new

    from q2_metric.corpus.cache import cache_key

    scorer = Q2Scorer(
        Q2Config(qa_model="org/qa", qg_model=tiny_models["qg"], nli_model=tiny_models["nli"], device="cpu")
    )
    key_new = cache_key(scorer)
    (tmp_path / "models--org--qa" / "refs" / "main").write_text(old)
    assert cache_key(scorer) != key_new
    fake_hub_cache(tmp_path, "org/nli", old, tiny_models["qa"])  # a QA model published as NLI
    with pytest.raises(ModelCheckError, match=r"The NLI model 'org/nli' is an extractive question-answering"):
        check_model("org/nli", "nli")


def test_device_cuda_without_gpu():
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    with pytest.raises(DeviceNotAvailable) as err:
        checks.check_device("cuda")
    assert str(err.value).startswith("The device 'cuda' was asked for but torch sees no CUDA GPU (torch ")
    assert str(err.value).endswith(
        "pass --device cpu (device='cpu') or --device auto, or install a CUDA "
        "build of torch on a machine with a GPU."
    )


def test_spacy_model_must_be_installed():
    with pytest.raises(ModelNotAvailable) as err:
        checks.check_spacy("xx_no_such_pipeline")
    assert str(err.value) == (
        "The spaCy model 'xx_no_such_pipeline' is not installed; install it (`python -m "
        "spacy download xx_no_such_pipeline`) or pass an installed one as spacy_model "
        "(--spacy-model)."
    )


def test_injected_components_are_not_checked():
    from q2_metric.testing.scripted import scripted_scorer

    assert scripted_scorer(Q2Config(qg_model="/nonexistent/qg", device="cuda")).check_models() == {}


def test_cli_model_errors_exit_2_in_one_line(tiny_models, tmp_path, capsys):
    """Each failure: exit code 2, one line on stderr, and no output written (checked before any work)."""
    from q2_metric.cli import main

    (tmp_path / "in.csv").write_text("response,knowledge\nParis is big.,Paris is big.\n")
    empty = tmp_path / "empty"
    empty.mkdir()
    bad_nli = bad_label_nli(tiny_models, tmp_path)
    base = {
        "--qg-model": tiny_models["qg"],
        "--qa-model": tiny_models["qa"],
        "--nli-model": tiny_models["nli"],
        "--device": "cpu",
    }
    cases = [
        ({"--qa-model": tiny_models["nli"]}, "is a sequence-classification model"),
        ({"--qg-model": str(empty)}, "has no config.json"),
        ({"--nli-model": str(bad_nli)}, "not the three labels entailment, neutral and contradiction"),
    ]
    import torch

    if not torch.cuda.is_available():
        # the option checks every front-end shares, naming the flag (issue 19)
        cases.append(
            (
                {"--device": "cuda"},
                "Invalid Q² option --device='cuda': torch sees 0 CUDA device(s) here; use 'auto' or 'cpu'.",
            )
        )
    for change, expected in cases:
        flags = [x for k, v in {**base, **change}.items() for x in (k, v)]
        assert (
            main(["score", str(tmp_path / "in.csv"), "-o", str(tmp_path / "out.csv"), "--no-cache", *flags])
            == 2
        )
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and err.startswith("q2: ") and expected in err
        assert not (tmp_path / "out.csv").exists()


def test_evaluate_module_runs_the_same_checks(tiny_models, tmp_path):
    import evaluate

    import q2_metric

    folder = copy_model(tiny_models["qa"], tmp_path / "qa", keep=["config.json"])
    q2 = evaluate.load(q2_metric.module_path())
    with pytest.raises(ModelCheckError, match="has no weights"):
        q2.compute(
            predictions=["Paris is big."],
            references=["Paris is big."],
            qg_model=tiny_models["qg"],
            qa_model=str(folder),
            nli_model=tiny_models["nli"],
            device="cpu",
        )


def test_offline_error_names_every_missing_model(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    scorer = Q2Scorer(Q2Config(qg_model="nobody/qg-x", qa_model="nobody/qa-x", nli_model="nobody/nli-x"))
    with pytest.raises(ModelNotAvailable) as err:
        scorer.check_models()
    assert str(err.value) == (
        "The question-generation model 'nobody/qg-x', the question-answering model 'nobody/qa-x' and the NLI "
        "model 'nobody/nli-x' are not in the Hugging Face cache and the Hub cannot be reached (HF_HUB_OFFLINE "
        "is set): download them once where the Hub is reachable (`hf download nobody/qg-x`, `hf download "
        "nobody/qa-x`, `hf download nobody/nli-x`) or pass local model directories as qg_model (--qg-model), "
        "qa_model (--qa-model) and nli_model (--nli-model)."
    )


def test_spacy_folder_identity_covers_every_file(tmp_path):
    spacy = pytest.importorskip("spacy")
    from q2_metric.models.checks import check_spacy

    folder = tmp_path / "pipeline"
    spacy.blank("en").to_disk(folder)
    seen = {check_spacy(str(folder))}
    config = (folder / "config.cfg").read_text()
    (folder / "config.cfg").write_text(config.replace("[nlp]", "[nlp]\n# changed", 1))
    seen.add(check_spacy(str(folder)))
    vocab = next(p for p in sorted((folder / "vocab").iterdir()) if p.is_file())
    vocab.write_bytes(vocab.read_bytes() + b"\0")  # a component's file in a subfolder
    seen.add(check_spacy(str(folder)))
    assert len(seen) == 3 and all(s.startswith("spacy:local-") for s in seen)


def test_a_model_folders_identity_comes_from_its_bytes_not_its_file_times(tiny_models, tmp_path):
    """A byte-identical copy (`cp -r`: new file times) is the same model; one changed byte is
    another. The same for a spaCy folder (`tree_digest`)."""
    from q2_metric.models.checks import tree_digest

    original = check_model(tiny_models["qa"], "qa").revision
    copy = tmp_path / "qa-copy"
    shutil.copytree(tiny_models["qa"], copy, copy_function=shutil.copyfile)  # new times
    for path in copy.iterdir():
        os.utime(path, ns=(1, 1))  # and, to be sure, times no build gives
    assert check_model(str(copy), "qa").revision == original
    assert tree_digest(copy) == tree_digest(Path(tiny_models["qa"]))
    weights = next(p for p in copy.iterdir() if p.suffix == ".safetensors")
    data = bytearray(weights.read_bytes())
    data[-1] ^= 1
    weights.write_bytes(bytes(data))
    assert check_model(str(copy), "qa").revision != original
    assert tree_digest(copy) != tree_digest(Path(tiny_models["qa"]))
