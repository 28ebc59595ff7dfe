"""The `evaluate` module for Q²: `evaluate.load(q2_metric.module_path())`.

evaluate requires this file's name to match its folder's; it imports the installed package. The
Space ships a copy of this file as `q2.py` (`q2-metric space`).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from typing import Any

import datasets
import evaluate

from q2_metric import display, frontend
from q2_metric.config import Q2Config
from q2_metric.errors import Q2OptionError
from q2_metric.options import (
    VARIANTS,
    check_option_names,
    choices_text,
    json_safe,
)
from q2_metric.options.help import docstring_entries
from q2_metric.scorer import Q2Scorer
from q2_metric.signature import Signature
from q2_metric.telemetry.events import caller_context
from q2_metric.validation import check_histories, validate_inputs
from q2_metric.version import CITATION, DESCRIPTION, HOMEPAGE, LICENSE, PAPER

_KWARGS_DESCRIPTION = f"""
Scores each prediction (a dialogue response) against its reference (the knowledge it was grounded on).

Configurations (`evaluate.load(..., config_name)`): `default` (= `paper`, the final EMNLP 2021
version) and `dnli` (the paper's DNLI variant: no personal filter, unanswerable questions dropped
when another question of the response is answerable).

Args:
    predictions (list of str): the responses.
    references (list of str, or list of lists of str): the grounding knowledge, one text per
        response; or a list of passages per response (the RAG shape, e.g. the retrieved contexts):
        its passages joined by a space into one knowledge text, as every front-end joins them.
    histories (list of lists of str): per prediction, the dialogue turns before it, oldest first;
        used by `coref=True` (docs/coref.md). Default: none (coreference within the response).
    return_details (bool): also return, per response, each candidate, question, answers, F1,
        NLI label and span score (`details`), with `spans` (every candidate at its character
        offsets in the prediction) and `unsupported_spans` (span score below 1). Default False.
    progress (bool): a progress bar per stage; default: on for more than a few responses.
    verbose (bool): show transformers' model-loading bars and messages. Default False.
    threshold (float): decide each response: `decisions` holds "consistent" (Q² > threshold) or
        "inconsistent" (None when unscored), with `num_consistent`, `num_inconsistent` and
        `threshold`; the signature ends in `thr:T`. Choose one with `q2 calibrate`.
    operating_point (str): an operating-point file `q2 calibrate` wrote: decide at its threshold
        (as `threshold`; both given must agree), the signature ends in `thr:T|op:...` and
        `operating_point` holds its rule, data set and digest.
    Every other option is a field of `q2_metric.Q2Config`, or `variant` (default: the
    configuration's) or `batch_size`; None (the default) keeps the configuration's value, shown
    here for the paper's (made from the one declaration, `q2_metric.config.OPTION_DOCS`):
{docstring_entries()}
    `device` also takes a `torch.device`; each `*_batch_size` given overrides `batch_size`;
    `tiny` puts the tiny random models (built once; no download; the signature says
    `tiny-random`) in place of the models left at their defaults.
    A bad value fails at once with one sentence naming the option and its allowed values.

Returns:
    q2 (float): mean response score (responses with empty input left out; null if none is scored).
    q2_no_nli (float): the same with token F1 only.
    coverage (float): share of responses with at least one valid question.
    no_answer_share (float): share of valid questions the knowledge could not answer.
    num_responses, num_scored, num_skipped, num_valid_questions (int): counts.
    scores, scores_no_nli (list of float): one per response; None (JSON null) for empty input.
    signature (str): how the score was made (models and revisions, options, versions).
    details (list of dict): with `return_details=True`.
    Every value is strict JSON (no NaN).

Examples:
    On tiny random models (meaningless scores; leave the model options out for the paper's):

    >>> import tempfile, evaluate, q2_metric
    >>> from q2_metric.models.tiny_builder import build_tiny_models
    >>> texts = ["Bob Ross hosted The Joy of Painting on PBS.", "The show aired from 1983 to 1994."]
    >>> paths = build_tiny_models(tempfile.mkdtemp(), texts)
    >>> tiny = dict(qg_model=paths["qg"], qa_model=paths["qa"], nli_model=paths["nli"],
    ...             device="cpu", decoding="greedy", max_question_length=8)
    >>> q2 = evaluate.load(q2_metric.module_path())
    >>> results = q2.compute(predictions=["bob ross hosted the joy of painting"], references=texts[:1], **tiny)
    >>> sorted(results)[:4]
    ['coverage', 'no_answer_share', 'num_responses', 'num_scored']
    >>> 0.0 <= results["q2"] <= 1.0
    True

    The DNLI variant, chosen as evaluate's configuration; an empty response scores None:

    >>> q2_dnli = evaluate.load(q2_metric.module_path(), "dnli")
    >>> results = q2_dnli.compute(predictions=["the show aired until 1994", ""], references=texts, **tiny)
    >>> results["scores"][1], results["num_skipped"], "dnli:yes" in results["signature"]
    (None, 1, True)

    Bad values are refused before any model loads:

    >>> q2.compute(predictions=["a"], references=["b"], decoding="sampling")
    Traceback (most recent call last):
    ...
    q2_metric.errors.Q2OptionError: Invalid Q² option decoding='sampling': allowed values are 'beam' or 'greedy'.
"""

_LOCKS_GUARD = threading.Lock()
_EXTRA = (
    "return_details",
    "variant",
    "progress",
    "verbose",
    "batch_size",
    "tiny",
    "threshold",
    "operating_point",
    "histories",
)
PROGRESS_MIN = 8  # the bar shows by default from this many responses on


def _check(predictions: Any, references: Any, start: int = 0) -> tuple[list[str], list[str]]:
    """The inputs as lists of clean strings (`q2_metric.validation.clean_text`): one reference per
    prediction, a reference given as a list of passages joined as every front-end joins them
    (`validation.knowledge_text`). Items are named from `start` (the items added before, by
    `add_batch`)."""
    predictions = [] if predictions is None else predictions
    references = [] if references is None else references
    return validate_inputs(predictions, references, "predictions", "references", start)


@evaluate.utils.file_utils.add_start_docstrings(DESCRIPTION, _KWARGS_DESCRIPTION)
class Q2(evaluate.Metric):
    """Q² factual consistency of knowledge-grounded dialogue responses."""

    def _info(self) -> evaluate.MetricInfo:
        if self.config_name not in VARIANTS:
            raise Q2OptionError(
                f"Invalid Q² configuration name {self.config_name!r}: allowed values are "
                f"{choices_text(VARIANTS)}."
            )
        return evaluate.MetricInfo(
            module_type="metric",
            description=DESCRIPTION,
            citation=CITATION,
            inputs_description=_KWARGS_DESCRIPTION,
            features=[
                datasets.Features(
                    {"predictions": datasets.Value("string"), "references": datasets.Value("string")}
                ),
                datasets.Features(
                    {
                        "predictions": datasets.Value("string"),
                        "references": datasets.Sequence(datasets.Value("string")),
                    }
                ),
            ],
            homepage=HOMEPAGE,
            license=LICENSE,
            codebase_urls=[HOMEPAGE],
            reference_urls=[PAPER],
        )

    def _config(
        self,
        variant: str | None = None,
        batch_size: int | None = None,
        tiny: bool | None = None,
        **options: Any,
    ) -> Q2Config:
        return frontend.configure(
            options, variant=variant or self.config_name, batch_size=batch_size, tiny=tiny
        )

    def _build_data_dir(self) -> str:
        """evaluate's cache folder (`cache_dir/q2/<config>`), which evaluate creates as the module
        loads; here it is created by `compute`, once the output-path rule has checked it against
        the model folders of the call's options."""
        return os.path.join(self._data_dir_root, self.name, self.config_name)

    def _lock(self) -> threading.RLock:
        """One lock per instance: evaluate keeps one cache file and one writer per instance, which
        calls from several threads would share (and remove under each other)."""
        with _LOCKS_GUARD:
            lock = self.__dict__.get("_q2_lock")
            if lock is None:
                lock = self.__dict__["_q2_lock"] = threading.RLock()
            return lock

    def _check_cache_dir(self, config: Q2Config) -> None:
        """The output-path rule: evaluate's cache folder is not, and is not inside, a model folder."""
        from q2_metric.frontend import guard

        guard({}, {"cache_dir": getattr(self, "data_dir", None)}, config=config, folders=["cache_dir"])

    def compute(
        self,
        *,
        predictions: Sequence[str] | None = None,
        references: Sequence[str] | None = None,
        **kwargs: Any,
    ) -> dict[str, Any] | None:
        """Compute Q² (inputs and options are checked first, so errors name the item or option).
        Safe to call from several threads on one instance: the calls take turns (a lock)."""
        if predictions is not None or references is not None:
            predictions, references = _check(predictions, references, self.__dict__.get("_q2_added", 0))
        check_option_names(kwargs, _EXTRA)
        # the threshold checked and the operating point read before any model work
        frontend.decision(kwargs.get("operating_point"), kwargs.get("threshold"))
        config = self._config(
            **{
                k: v
                for k, v in kwargs.items()
                if k
                not in ("return_details", "progress", "verbose", "threshold", "operating_point", "histories")
            }
        )
        self._check_cache_dir(config)
        if kwargs.get("histories") is not None and not config.coref:
            # as `q2 score --history-col` without --coref: histories would be silently ignored
            raise Q2OptionError(
                "Invalid Q² option histories: it is read by coref=True only; add coref=True "
                "or leave histories out."
            )
        if kwargs.get("histories") is not None:
            # the one check of the histories, over every item: the batches added, then this call's
            count = sum(len(b["predictions"]) for b in self.__dict__.get("_q2_pending", []))
            kwargs["histories"] = check_histories(kwargs["histories"], count + len(predictions or []))
        with self._lock():
            # Only now, with the options and the cache folder checked, does evaluate write its cache:
            # the batches held by `add_batch`/`add` first, then this call's own (through `add_batch`).
            self.__dict__["_q2_writing"] = True
            try:
                if not self.keep_in_memory:
                    os.makedirs(self.data_dir, exist_ok=True)
                for batch in self.__dict__.pop("_q2_pending", []):
                    super().add_batch(**batch)
                return super().compute(predictions=predictions, references=references, **kwargs)
            finally:
                self.__dict__["_q2_writing"] = False
                self.__dict__["_q2_added"] = 0  # evaluate drops the added batches with the compute

    def add_batch(
        self,
        *,
        predictions: Sequence[str] | None = None,
        references: Sequence[str] | None = None,
        **kwargs: Any,
    ) -> None:
        """Add a batch of responses and their knowledge (checked as `compute` checks them). The batch
        is held until `compute`, which writes evaluate's cache once the model options it is given
        show that the cache folder lies in no model folder (the output-path rule)."""
        with self._lock():
            if self.__dict__.get("_q2_writing"):  # evaluate's compute adding its own inputs
                return super().add_batch(predictions=predictions, references=references, **kwargs)
            # a bad item is named by its place among every item added since the last compute
            predictions, references = _check(predictions, references, self.__dict__.get("_q2_added", 0))
            self.__dict__.setdefault("_q2_pending", []).append(
                {"predictions": predictions, "references": references, **kwargs}
            )
            self.__dict__["_q2_added"] = self.__dict__.get("_q2_added", 0) + len(predictions)

    def add(self, *, prediction: Any = None, reference: Any = None, **kwargs: Any) -> None:
        """Add one response and its knowledge (held until `compute`, as `add_batch` holds a batch;
        calls from several threads take turns)."""
        # evaluate's own `add` takes the plural names too (`add(predictions=..., references=...)`)
        prediction = kwargs.pop("predictions", prediction)
        reference = kwargs.pop("references", reference)
        with self._lock():
            start = self.__dict__.get("_q2_added", 0)
            predictions, references = _check([prediction], [reference], start)
            self.__dict__.setdefault("_q2_pending", []).append(
                {"predictions": predictions, "references": references, **kwargs}
            )
            self.__dict__["_q2_added"] = start + 1

    def _infer_feature_from_batch(self, batch: dict[str, Any]) -> Any:
        # evaluate infers the format (one reference or a list per prediction) from the first item:
        # an empty batch has none, and is read as one reference per prediction.
        if not batch.get("references"):
            return self.features[0]
        return super()._infer_feature_from_batch(batch)

    def scorer(self, config: Q2Config) -> Q2Scorer:
        """The scorer of this metric instance; models reload only when a model option changes."""
        current = getattr(self, "_scorer", None)
        if current is None or current.config.model_key() != config.model_key():
            self._scorer = current = Q2Scorer(config)
        else:
            current.reconfigure(config)
        return current

    def _compute(
        self,
        predictions: Any,
        references: Any,
        return_details: bool = False,
        variant: Any = None,
        progress: Any = None,
        verbose: bool = False,
        batch_size: Any = None,
        tiny: Any = None,
        qg_model: Any = None,
        qa_model: Any = None,
        nli_model: Any = None,
        spacy_model: Any = None,
        drop_candidates: Any = None,
        decoding: Any = None,
        num_beams: Any = None,
        num_return_sequences: Any = None,
        no_repeat_ngram_size: Any = None,
        early_stopping: Any = None,
        max_question_length: Any = None,
        qg_max_input_tokens: Any = None,
        long_inputs: Any = None,
        personal_filter: Any = None,
        personal_subjects: Any = None,
        personal_possessives: Any = None,
        question_mode: Any = None,
        qa_decoding: Any = None,
        qa_max_length: Any = None,
        qa_doc_stride: Any = None,
        qa_max_answer_tokens: Any = None,
        use_nli: Any = None,
        discard_unanswerable_if_any_answerable: Any = None,
        fallback_nli: Any = None,
        fallback_scores: Any = None,
        fallback_lowercase: Any = None,
        device: Any = None,
        dtype: Any = None,
        quantize: Any = None,
        qg_batch_size: Any = None,
        qa_batch_size: Any = None,
        nli_batch_size: Any = None,
        spacy_batch_size: Any = None,
        qg_max_tokens: Any = None,
        qa_max_tokens: Any = None,
        nli_max_tokens: Any = None,
        qa_packing: Any = None,
        cpu_matmul: Any = None,
        qg_decoder: Any = None,
        threshold: Any = None,
        operating_point: Any = None,
        histories: Any = None,
        coref: Any = None,
        coref_model: Any = None,
        coref_max_tokens: Any = None,
        language: Any = None,
        model_sets: Any = None,
    ) -> dict[str, Any]:
        options = {
            k: v for k, v in locals().items() if k not in _EXTRA + ("self", "predictions", "references")
        }
        from q2_metric.progress import stage_progress

        config = self._config(variant, batch_size, tiny, **options)
        display.warn_if_tiny(config)  # the tiny models' one line, as the Python API gives it
        show = len(predictions) >= PROGRESS_MIN if progress is None else bool(progress)
        # `compute`, `add_batch` and `add` checked every item (`_check`) and `compute` the histories
        # (`check_histories`) before evaluate wrote them: clean strings, none bad, checked once
        turns = [None] * len(predictions) if histories is None else histories
        decision = frontend.decision(operating_point, threshold)
        decides = threshold is not None or operating_point is not None
        parent = caller_context()  # each response's OpenTelemetry event: the caller's span
        items = [  # the language gate of the one item check (`frontend.language_checked`)
            frontend.language_checked(
                frontend.CheckedItem(f"item {i}", p, r, h, decision.threshold if decides else None, parent),
                config.language,
            )
            for i, (p, r, h) in enumerate(zip(predictions, references, turns))
        ]
        with display.loading_output(bool(verbose)):
            outcome = frontend.score_checked(
                self.scorer(config), items, progress=stage_progress("Q²") if show else None
            )
        out = outcome.as_result().to_dict(details=bool(return_details))
        if decides:
            decisions, counts = display.decisions(out["scores"], decision.threshold)
            signed = decision.sign(Signature.parse(out["signature"]).with_threshold(decision.threshold))
            out.update(decisions=decisions, **counts, signature=str(signed))
            if decision.operating_point is not None:
                out["operating_point"] = decision.summary()
        return json_safe(out)
