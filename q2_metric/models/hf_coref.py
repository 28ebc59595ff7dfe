"""F-Coref (`biu-nlp/f-coref`, MIT) through the `fastcoref` package: the `CorefResolver` of
`coref=True` (an optional extra: `pip install "q2-metric[coref]"`).

fastcoref 2.1.6 was written for transformers 4; this module wraps it for transformers 5 without
touching the installed package:
- its model calls `init_weights()` in `__init__`, which on transformers 5 fails before
  `post_init()` has run; `FCorefModel` below runs `post_init()` there instead;
- it uses spaCy only to split words, and would download `en_core_web_sm` when that is missing: a
  blank English pipeline (the same tokenizer rules) is passed instead, so nothing is downloaded;
- it drops documents longer than the model's `max_doc_len` without a word: such a text gets None
  here (not read; `skipped` counts them, `max_tokens` is the limit) instead of shifting every later
  result, and the explanation says it was too long;
- its import-time `logging.basicConfig`, its global transformers verbosity change and its progress
  bars are undone or hidden.
The model loads once per scorer; `clusters` sends every text of a turn step in one `predict` call,
which batches by tokens (`coref_max_tokens`).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from q2_metric.config import Q2Config
from q2_metric.errors import ModelNotAvailable
from q2_metric.models.checks import ModelIdentity, check_model
from q2_metric.models.loading import _is_cached, _offline, _quiet, resolve_device
from q2_metric.steps.coref import Clusters

INSTALL = 'pip install fastcoref --no-deps (or pip install "q2-metric[coref]")'


@contextlib.contextmanager
def _keep_global_logging() -> Iterator[None]:
    """Undo what fastcoref does to the root logger and to transformers' verbosity."""
    from transformers.utils import logging as hf_logging

    root = logging.getLogger()
    handlers, level, hf_level = list(root.handlers), root.level, hf_logging.get_verbosity()
    try:
        yield
    finally:
        root.handlers[:] = handlers
        root.setLevel(level)
        hf_logging.set_verbosity(hf_level)


def _fastcoref() -> tuple[Any, Any, Any]:
    """The fastcoref modules, or a one-sentence error naming how to install them."""
    try:
        with _keep_global_logging():
            from fastcoref import modeling
            from fastcoref.coref_models import modeling_fcoref
            from fastcoref.utilities import collate
    except ImportError as err:
        raise ModelNotAvailable(
            f"The coreference step (coref=True, --coref) needs the fastcoref package, which "
            f"is not installed ({err.name or err}); install it with {INSTALL}."
        ) from None
    return modeling_fcoref, modeling, collate


def model_class() -> Any:
    """fastcoref's `FCorefModel`, made to build on transformers 5 (see the module docstring)."""
    global _MODEL_CLASS
    if _MODEL_CLASS is None:
        modeling_fcoref, _, _ = _fastcoref()

        class FCorefModel(modeling_fcoref.FCorefModel):  # type: ignore[name-defined]  # the optional extra's class, imported at run time
            def init_weights(self) -> None:
                if getattr(self, "all_tied_weights_keys", None) is None:  # from fastcoref's __init__
                    self.post_init()  # transformers 5: registers the model's properties, then init_weights()
                else:
                    super().init_weights()

        _MODEL_CLASS = FCorefModel
    return _MODEL_CLASS


_MODEL_CLASS: Any = None


def check_coref_model(model_id: str) -> ModelIdentity:
    """Check, from files only, that fastcoref is installed and `model_id` is an F-Coref model."""
    _fastcoref()
    return check_model(model_id, "coref")


def _local_folder(model_id: str) -> str:
    if Path(model_id).expanduser().is_dir():
        return str(Path(model_id).expanduser())
    from huggingface_hub import snapshot_download

    return snapshot_download(model_id, local_files_only=_is_cached(model_id) or _offline())


class HFCorefResolver:
    """Coreference clusters from F-Coref, as character spans."""

    def __init__(self, config: Q2Config) -> None:
        import spacy

        _, modeling, collate = _fastcoref()
        self.config, self.model_id = config, config.coref_model
        self.skipped = 0  # texts longer than the model's max_doc_len (no clusters)
        fcoref_class = model_class()

        class _FCoref(modeling.CorefModel):  # type: ignore[name-defined]  # the optional extra's class, imported at run time
            def __init__(self, path: str, device: str) -> None:
                super().__init__(
                    path, fcoref_class, collate.LeftOversCollator, False, device, spacy.blank("en")
                )

        with _quiet(), _keep_global_logging():
            self.coref = _FCoref(_local_folder(config.coref_model), str(resolve_device(config.device)))
        self.model = self.coref.model
        limit = getattr(self.coref, "max_doc_len", None)
        self.max_tokens: int | None = int(limit) if limit else None  # longer texts are not read

    def describe(self) -> str:
        return f"fcoref:{self.model_id}"

    def clusters(self, texts: Sequence[str]) -> list[Clusters | None]:
        import datasets

        texts = list(texts)
        if not texts:
            return []
        bars = datasets.is_progress_bar_enabled()
        datasets.disable_progress_bars()
        try:
            with _quiet(), _keep_global_logging(), _no_info(), _no_future_warnings():
                results = self.coref.predict(texts, max_tokens_in_batch=self.config.coref_max_tokens)
        finally:
            if bars:
                datasets.enable_progress_bars()
        by_index = {int(r.text_idx): r for r in results}
        self.skipped += len(texts) - len(by_index)
        out: list[Clusters | None] = []
        for i in range(len(texts)):
            r = by_index.get(i)
            if r is None:  # dropped by fastcoref: longer than max_doc_len
                out.append(None)
                continue
            spans = r.get_clusters(as_strings=False)
            out.append([[tuple(s) for s in cluster if s is not None and None not in s] for cluster in spans])
        return out


@contextlib.contextmanager
def _no_info() -> Iterator[None]:
    log = logging.getLogger("fastcoref")
    level = log.level
    log.setLevel(logging.WARNING)
    try:
        yield
    finally:
        log.setLevel(level)


@contextlib.contextmanager
def _no_future_warnings() -> Iterator[None]:
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # pyarrow's, from datasets' sort in fastcoref
        yield


def build_tiny_coref_model(
    out_dir: str | Path, texts: Sequence[str], seed: int = 0, max_doc_len: int = 4096
) -> str:
    """A randomly initialised F-Coref model of the real architecture (a RoBERTa encoder and the
    coref head) at tiny size, with the tiny models' word tokenizer of `texts` (fixed ids:
    `tiny_builder.word_tokenizer`), saved where `from_pretrained` reads it: for tests and offline
    demos. The same bytes on every build (weights drawn from `seed`). Its clusters mean nothing."""
    import torch
    from transformers import RobertaConfig

    from q2_metric.models.tiny_builder import word_tokenizer

    torch.manual_seed(seed)
    tokenizer = word_tokenizer(texts)  # (a trained tokenizer breaks ties differently from run to run)
    # the coref head of biu-nlp/f-coref's config.json, with a smaller feed-forward size
    head = dict(
        max_span_length=30,
        top_lambda=0.4,
        ffnn_size=16,
        dropout_prob=0.3,
        max_segment_len=512,
        max_doc_len=max_doc_len,
    )
    config = RobertaConfig(
        vocab_size=len(tokenizer),
        pad_token_id=tokenizer.pad_token_id,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=64,
        max_position_embeddings=514,
        coref_head=head,
    )
    with _quiet(), _keep_global_logging():
        model = model_class()(config)
        model.save_pretrained(out_dir)
    tokenizer.save_pretrained(out_dir)
    return str(out_dir)
