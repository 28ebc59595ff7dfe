"""Loading on transformers 5 / huggingface_hub 1.x: models by Hub id from an offline cache carry the
snapshot's revision in the signature, the offline hint names `hf download`, loading is quiet."""

import json
import os
import shutil
import subprocess
import sys
from importlib import metadata

import pytest
from packaging.version import Version

from q2_metric.errors import ModelNotAvailable
from q2_metric.models.checks import check_model
from q2_metric.models.loading import load_pretrained, verbose_loading

COMMITS = {"qg": "a" * 8 + "1" * 32, "qa": "b" * 8 + "2" * 32, "nli": "c" * 8 + "3" * 32}


def test_current_majors_installed():
    """The README's set-up resolves the current majors; the tests run on them."""
    assert Version(metadata.version("transformers")).major == 5
    assert Version(metadata.version("huggingface_hub")).major == 1
    assert Version(metadata.version("tokenizers")) >= Version("0.22")


def prepared_cache(root, tiny_models) -> dict[str, str]:
    """A Hugging Face cache (refs/main -> snapshots/<commit>) holding the tiny models under Hub ids,
    as `hf download` leaves it."""
    ids = {}
    for role, path in tiny_models.items():
        repo_id = f"q2-test/tiny-{role}"
        repo = root / f"models--q2-test--tiny-{role}"
        shutil.copytree(path, repo / "snapshots" / COMMITS[role])
        (repo / "refs").mkdir()
        (repo / "refs" / "main").write_text(COMMITS[role])
        ids[role] = repo_id
    return ids


@pytest.mark.slow  # a subprocess
def test_hub_id_from_offline_cache_signs_snapshot_revision(tiny_models, tmp_path):
    ids = prepared_cache(tmp_path / "hub", tiny_models)
    code = (
        "import json; from q2_metric import Q2Scorer, Q2Config; "
        f"s = Q2Scorer(Q2Config(qg_model={ids['qg']!r}, qa_model={ids['qa']!r}, nli_model={ids['nli']!r}, "
        "device='cpu', decoding='greedy', "
        "max_question_length=8)).load(); "  # every model, whether or not this input needs NLI
        "r = s.score(['bob ross hosted the joy of painting'], ['Bob Ross hosted The Joy of Painting.']); "
        "print(json.dumps(r.signature.to_dict()))"
    )
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_HUB_CACHE": str(tmp_path / "hub")}
    run = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    signature = json.loads(run.stdout.strip().splitlines()[-1])
    for role in ("qg", "qa", "nli"):
        assert signature[role] == f"{ids[role]}@{COMMITS[role][:10]}"
    assert "Loading weights" not in run.stderr  # quiet unless verbose


def test_offline_hint_names_hf_download(monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(ModelNotAvailable) as err:
        check_model("q2-test/not-cached-anywhere", "qg")
    message = str(err.value)
    assert "`hf download q2-test/not-cached-anywhere`" in message and "huggingface-cli" not in message
    assert message.count(". ") == 0 and message.endswith(".") and "\n" not in message


def test_loading_is_quiet_unless_verbose(tiny_models, capfd):
    from transformers import AutoModelForQuestionAnswering

    load_pretrained(AutoModelForQuestionAnswering, tiny_models["qa"])
    assert "Loading weights" not in capfd.readouterr().err
    with verbose_loading():
        load_pretrained(AutoModelForQuestionAnswering, tiny_models["qa"])
    assert "Loading weights" in capfd.readouterr().err
    load_pretrained(AutoModelForQuestionAnswering, tiny_models["qa"])  # quiet again afterwards
    assert "Loading weights" not in capfd.readouterr().err


def test_auto_dtype_is_float32_on_cuda_without_a_gpu():
    """The default precision is the released code's (float32) on every device: resolved for a
    CUDA device given as a string and as a torch.device, on a machine with no GPU (resolving
    needs none). Half precision only when asked."""
    import torch

    from q2_metric.models.loading import resolve_dtype

    for device in (
        "cuda",
        "cuda:0",
        torch.device("cuda"),
        torch.device("cuda", 1),
        "cpu",
        torch.device("cpu"),
    ):
        assert resolve_dtype("auto", device) is torch.float32
    assert resolve_dtype("float16", "cuda") is torch.float16
    assert resolve_dtype("bfloat16", torch.device("cuda")) is torch.bfloat16


def test_default_signature_says_float32_on_cuda(monkeypatch):
    """A CUDA user's default signature names float32, the paper's precision (no GPU needed:
    the device resolution is what a CUDA machine would see)."""
    import torch

    from q2_metric import Q2Config, Q2Scorer
    from q2_metric.models import loading

    monkeypatch.setattr(loading, "resolve_device", lambda device: torch.device("cuda"))
    assert Q2Scorer(Q2Config(tiny=False))._dtype_name() == "float32"
    assert Q2Scorer(Q2Config(dtype="bfloat16", tiny=False))._dtype_name() == "bfloat16"
