"""The Q² engine: calls the stages in order, each over all responses of a call.

(with `coref=True`: text -> resolved text (`coref`), first)
text -> answer candidates (`candidates`) -> questions (`questions`) -> filtered questions
(`question_filter`) -> answers (`answers`) -> span scores (`span_scores`) -> response scores
(`response_scores`) -> system score (`system_score`). Each stage de-duplicates its model inputs and
makes one component call (the question filter: one per question rank in `single` mode); the
components batch internally (see `q2_metric.components`).
"""

from __future__ import annotations

import dataclasses
import functools
import os
import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from q2_metric.components import (
    NLIClassifier,
    Parser,
    QuestionAnswerer,
    QuestionGenerator,
    cls_text,
    describe,
)
from q2_metric.config import Q2Config
from q2_metric.display import reason_line
from q2_metric.errors import Q2OptionError
from q2_metric.models.provision import provide_models
from q2_metric.options import with_options
from q2_metric.options.operating_point import OperatingPoint, read_operating_point
from q2_metric.progress import DONE, ProgressCallback, StageProfile, notify, run_stage, stage
from q2_metric.results import DISCARDED, Pair, Q2Result, ResponseScore
from q2_metric.signature import Signature, qg_path
from q2_metric.steps.answers import KnowledgeAnswer, answer_from_knowledge
from q2_metric.steps.candidates import find_candidates, keep_in_focus
from q2_metric.steps.coref import CorefResolver, resolve_pairs
from q2_metric.steps.normalize import TokenRules
from q2_metric.steps.question_filter import filter_questions
from q2_metric.steps.questions import generate_questions
from q2_metric.steps.response_scores import score_responses
from q2_metric.steps.span_scores import SpanScore, score_spans
from q2_metric.steps.spans import locate_spans
from q2_metric.steps.system_score import system_of
from q2_metric.validation import check_histories, empty_reason, validate_inputs, warn_if_not_english

if TYPE_CHECKING:
    from q2_metric.languages import ModelSet

T = TypeVar("T")


class Q2Scorer:
    """Scores (response, knowledge) pairs. Models load on first use and are kept for later calls.

    Pass `parser`, `qg`, `qa` or `nli` to replace a backend (tests script them this way). Single
    `options` are checked as every front-end checks them (`options.with_options`): a bad value or
    an unknown name is one `Q2OptionError` sentence (an unknown name is also a `TypeError`).

    One scorer may be shared by threads: its calls take turns (the models and their shared
    patches are not safe to run twice at once), each with its own scorer's options.

    Examples:
        >>> from q2_metric.testing.scripted import scripted_scorer
        >>> scorer = scripted_scorer()
        >>> result = scorer.score(["Bob Ross hosted the show."], ["Bob Ross hosted the show."])
        >>> result.q2
        1.0
    """

    def __init__(
        self,
        config: Q2Config | None = None,
        *,
        parser: Parser | None = None,
        qg: QuestionGenerator | None = None,
        qa: QuestionAnswerer | None = None,
        nli: NLIClassifier | None = None,
        coref: CorefResolver | None = None,
        **options: Any,
    ) -> None:
        self.config = _provided(with_options(config, options))
        self._parser, self._qg, self._qa, self._nli = parser, qg, qa, nli
        self._coref = coref
        self._lock = threading.RLock()  # one call at a time on these components
        self._origin: Q2Scorer | None = None  # `with_config`: the scorer whose components are shared

    def __getstate__(self) -> dict:
        """Pickled (Ray ships scorers to its workers) without its lock, and on its own: a copy
        shares neither components' loading nor turns with the scorer it came from."""
        state = dict(self.__dict__)
        state["_lock"], state["_origin"] = None, None
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._lock = threading.RLock()

    def with_config(self, config: Q2Config) -> Q2Scorer:
        """A scorer with other options over the same components (loaded once, in this scorer) and
        the same lock: calls of both take turns, each scoring and signing with its own options.
        The model options must be the same (`Q2Config.model_key`)."""
        config = provide_models(config)
        if config.model_key() != self.config.model_key():
            raise Q2OptionError(
                "Q2Scorer.with_config keeps the scorer's models: use a new Q2Scorer for other model options."
            )
        view = Q2Scorer(
            config, parser=self._parser, qg=self._qg, qa=self._qa, nli=self._nli, coref=self._coref
        )
        view._lock, view._origin = self._lock, self._origin or self
        return view

    def _component(self, attr: str, build: Callable[[], Any]) -> Any:
        """The component in `attr`, built on first use (or taken from the origin's, built with the
        origin's options), bound to this scorer's options."""
        with self._lock:
            comp = getattr(self, attr)
            if comp is None:
                comp = getattr(self._origin, attr[1:]) if self._origin is not None else build()
                setattr(self, attr, comp)
            self._bind_one(comp)
            return comp

    def _bind(self) -> None:
        """Components built from a configuration read this scorer's options during its call (a
        shared component may have served another scorer's options last; one taken from the origin
        during the call is bound as it is taken, `_component`)."""
        for comp in (self._parser, self._qg, self._qa, self._nli, self._coref):
            self._bind_one(comp)

    def _bind_one(self, comp: object) -> None:
        if (
            comp is not None
            and type(comp).__module__.startswith("q2_metric.models.")
            and getattr(comp, "config", self.config) is not self.config
        ):
            comp.config = self.config  # type: ignore[attr-defined]  # the package's backends: each has .config

    # -- components, loaded lazily and once ------------------------------------------------
    @property
    def needs_nli(self) -> bool:
        return self.config.use_nli or self.config.fallback_nli

    def check_models(self) -> dict[str, str]:
        """Check, before any work and without loading weights, the device and every model this
        scorer will build from its config: it exists, has weights and a tokenizer, and is the right
        kind (seq2seq for QG, an extractive QA head, three NLI labels by name); see
        `q2_metric.models.checks`. Injected components are not checked.

        Returns each checked role's identity (`qg`/`qa`/`nli`/`parser` -> `id@revision`, the Hub
        commit or a digest of a local directory). Raises `ModelNotAvailable`, `ModelCheckError`
        or `DeviceNotAvailable`: one error naming every model that failed (all the missing ones
        in one sentence).
        """
        from q2_metric.models import checks

        def built_from_config(component: object) -> bool:
            return component is None or type(component).__module__.startswith("q2_metric.models.")

        c = self.config
        roles: list[tuple[str, object, str]] = [("qg", self._qg, c.qg_model), ("qa", self._qa, c.qa_model)]
        if self.needs_nli:
            roles.append(("nli", self._nli, c.nli_model))
        wanted = [(role, model_id) for role, component, model_id in roles if built_from_config(component)]
        if wanted:
            checks.check_device(c.device)
            if (
                c.dtype in ("bfloat16", "float16") or c.quantize != "none"
            ):  # a fast mode this device cannot run (torch is
                from q2_metric.models.loading import resolve_device  # imported only for one)
                from q2_metric.models.speed.precision import check_precision

                check_precision(c.dtype, c.quantize, resolve_device(c.device))
        todo: dict[str, Callable[[], str]] = {
            role: functools.partial(_checked_model, model_id, role) for role, model_id in wanted
        }
        specs = self.candidate_specs()
        if built_from_config(self._parser) and specs is not None:
            todo["parser"] = functools.partial(_available_extractor, specs)
        elif built_from_config(self._parser):
            todo["parser"] = lambda: checks.check_spacy(c.spacy_model)
        if c.coref and built_from_config(self._coref):
            from q2_metric.models.hf_coref import check_coref_model

            todo["coref"] = lambda: str(check_coref_model(c.coref_model))
        return checks.check_each(todo)  # one error naming every model that failed

    def load(self) -> Q2Scorer:
        """Load every component now (otherwise each loads on first use)."""
        self.check_models()
        _ = self.parser, self.qg, self.qa
        if self.needs_nli:
            _ = self.nli
        if self.config.coref:
            _ = self.coref
        return self

    # -- the language's model set (`q2_metric.languages`): None on the paper's English path ------
    def language_set(self) -> ModelSet | None:
        """The model set of the scorer's language, or None for English (the paper's path: its
        spaCy candidates, its QG input, its QA decoding and its token F1, whatever the table says)."""
        c = self.config
        if c.language == "en":
            return None
        from q2_metric.languages import model_set

        return model_set(c.language, c.model_sets)

    def candidate_specs(self) -> tuple[str, ...] | None:
        """The answer-candidate extractors of the language's set, in the order they are tried
        (with `tiny`: the tiny multilingual token classifier, then the rules); None for English."""
        found = self.language_set()
        if found is None:
            return None
        if self.config.tiny:
            from q2_metric.models.tiny import tiny_model_id

            return (f"token-classification:{tiny_model_id('ner')}", "rules")
        return found.candidates

    def token_rules(self) -> TokenRules | None:
        """The token rules of token F1 for the language (None: the released English rule)."""
        found = self.language_set()
        return None if found is None else found.tokens

    @property
    def parser(self) -> Parser:
        def build() -> Parser:
            specs = self.candidate_specs()
            if specs is not None:  # another language: the first available extractor of its set
                from q2_metric.models.candidate_extractors import ExtractorParser, resolve_extractor
                from q2_metric.models.loading import resolve_device

                device = str(resolve_device(self.config.device))
                return ExtractorParser(resolve_extractor(specs, device=device))
            from q2_metric.models.spacy_parser import SpacyParser

            return SpacyParser(self.config)

        return self._component("_parser", build)

    @property
    def qg(self) -> QuestionGenerator:
        def build() -> QuestionGenerator:
            from q2_metric.models.hf_qg import HFQuestionGenerator

            found = self.language_set()
            if found is not None:  # the set's input: the paper's or lmqg's highlighted answer
                return HFQuestionGenerator(self.config, prompt=found.qg_prompt)
            return HFQuestionGenerator(self.config)

        return self._component("_qg", build)

    @property
    def qa(self) -> QuestionAnswerer:
        def build() -> QuestionAnswerer:
            from q2_metric.models.hf_qa import HFQuestionAnswerer

            if self.language_set() is not None:  # another language: answers sliced from the text
                return HFQuestionAnswerer(self.config, exact_offsets=True)
            return HFQuestionAnswerer(self.config)

        return self._component("_qa", build)

    @property
    def nli(self) -> NLIClassifier:
        def build() -> NLIClassifier:
            from q2_metric.models.hf_nli import HFNLIClassifier

            return HFNLIClassifier(self.config)

        return self._component("_nli", build)

    @property
    def coref(self) -> CorefResolver:
        def build() -> CorefResolver:
            from q2_metric.models.hf_coref import HFCorefResolver

            return HFCorefResolver(self.config)

        return self._component("_coref", build)

    def reconfigure(self, config: Q2Config) -> None:
        """Use new options; components are dropped (and reloaded on use) only if their model
        options changed, otherwise they read the new options on their next call."""
        config = provide_models(config)
        with self._lock:
            if config.model_key() != self.config.model_key():
                self._parser = self._qg = self._qa = self._nli = self._coref = None
                self._origin = None
            for comp in (self._parser, self._qg, self._qa, self._nli, self._coref):
                if comp is not None and hasattr(comp, "config"):
                    comp.config = config
            self.config = config

    def component_names(self) -> dict[str, str]:
        """`describe()` of each component in hand (loaded or injected), and the resolved dtype."""
        names = {
            name: describe(comp)
            for name, comp in (
                ("parser", self._parser),
                ("qg", self._qg),
                ("qa", self._qa),
                ("nli", self._nli),
                ("coref", self._coref),
            )
            if comp is not None
        }
        names["dtype"] = self._dtype_name()
        names["tok"] = self._tokenization()
        if getattr(self._qa, "exact_offsets", False):  # another language's QA: SQuAD 2.0, exact spans
            names["qaspan"] = "squad2-exact"
        decoder = getattr(self._qg, "decoder", None)  # the path the loaded generator runs for these options
        if decoder in ("reference", "fast"):
            names["qgdec"] = qg_path(decoder)
        return names

    def _tokenization(self) -> str:
        """Each model's tokenization path, qg/qa/nli: `ref32` (the released code's transformers 3.2
        tokenizers; QG `+xbias`: the checkpoint's 3.x cross-attention bias applied), `hf`
        (transformers' own), or `custom` for an injected component."""
        from q2_metric.models.paper.reference_tokenization import tokenization_path

        c = self.config
        out = []
        for role, comp, model_id in (
            ("qg", self._qg, c.qg_model),
            ("qa", self._qa, c.qa_model),
            ("nli", self._nli, c.nli_model),
        ):
            if comp is not None:
                out.append(getattr(comp, "tokenization", "custom"))
                continue
            try:
                out.append(tokenization_path(model_id, role, c.qa_decoding))
            except Exception:
                out.append("hf")
        return "/".join(out)

    def _dtype_name(self) -> str:
        """The precision models run in (`auto` resolved: float32 on every device, CPU and CUDA;
        bfloat16/float16 only when asked)."""
        from q2_metric.errors import DeviceNotAvailable
        from q2_metric.models.loading import resolve_device, resolve_dtype

        try:
            return str(resolve_dtype(self.config.dtype, resolve_device(self.config.device))).replace(
                "torch.", ""
            )
        except (ValueError, DeviceNotAvailable):
            return self.config.dtype

    def signature(self, identities: dict[str, str] | None = None) -> Signature:
        """How scores are made: options, versions, and each model's checked identity (`id@commit`
        or `local-<digest>`, from `check_models()` unless given) or `describe()` when injected."""
        if identities is None:
            identities = self.check_models()
        return Signature.create(self.config, {**self.component_names(), **identities})

    def _identities_if_available(self) -> dict[str, str]:
        """`check_models()` for the signature of a call with nothing to score, which needs no model:
        models that are not available are named without their revision."""
        from q2_metric.errors import DeviceNotAvailable, ModelCheckError, ModelNotAvailable

        try:
            return self.check_models()
        except (ModelNotAvailable, ModelCheckError, DeviceNotAvailable):
            return {}

    # -- scoring -----------------------------------------------------------------------------
    def score(
        self,
        responses: Sequence[str],
        knowledge: Sequence[str],
        *,
        histories: Sequence[Sequence[str]] | None = None,
        progress: ProgressCallback | None = None,
        operating_point: OperatingPoint | str | os.PathLike[str] | None = None,
    ) -> Q2Result:
        """Score each response against its knowledge, every stage over the whole batch.

        Args:
            responses: the dialogue responses (any ordered sequence of strings).
            knowledge: the knowledge each response was grounded on, one per response.
            histories: per response, the dialogue turns before it (read with `coref=True`, which
                resolves the response turn by turn with them; without them, within the response).
            progress: `progress(stage, done, total)`, called as each stage starts and as its model
                inputs go through, batch by batch (see `q2_metric.progress`).
            operating_point: an operating-point file (`q2 calibrate`) or one read
                (`options.operating_point.read_operating_point`): its threshold labels each
                response's OpenTelemetry event (`q2_metric.telemetry.events`), and the result's
                signature names it (`thr` and `op` fields).

        Returns:
            The system figures, one `ResponseScore` per response (NaN with a reason for an empty
            response or knowledge), the signature and the time per stage.

        Raises:
            Q2InputError: a malformed input, naming the item and the field, before any model work.
            ModelNotAvailable: a model is missing (one sentence saying how to get it).
        """
        texts, passages = validate_inputs(responses, knowledge)  # the one check of this path
        turns = check_histories(histories, len(texts)) if self.config.coref else None
        op = operating_point
        if op is not None and not isinstance(op, OperatingPoint):
            op = read_operating_point(op)  # before any model work
        unverified = language_problems(texts, passages, self.config.language)  # the language gate
        if self.config.language == "en":
            warn_if_not_english(texts, passages)
        with self._lock:
            self._bind()
            result = self._score(texts, passages, turns, progress, unverified=unverified)
        from q2_metric.telemetry.events import emit_evaluations

        emit_evaluations(result.responses, None if op is None else op.threshold)  # one event a response
        if op is not None:  # decisions at the operating point: its threshold and file signed
            result = dataclasses.replace(result, signature=result.signature.with_operating_point(op))
        return result

    def score_checked(
        self,
        responses: list[str],
        knowledge: list[str],
        histories: list[list[str]] | None = None,
        *,
        progress: ProgressCallback | None = None,
        focus: Sequence[tuple[int, int] | None] | None = None,
    ) -> Q2Result:
        """`score` of inputs already checked by their front-end's one check (`validation`: the
        contract's `frontend.score_items` checks each item, `score` its lists): plain clean strings,
        knowledge passages joined, one list of clean turns per response or None. Each item is
        checked once on every path; this method checks nothing again.

        `focus` (default None: the paper's path, unchanged): per response, None or a character
        range [start, end) whose candidates alone are scored (`results.Pair.focus`; the streaming
        check's sentence, the sentence before it carried as context). Not with `coref=True`."""
        if focus is not None and (len(focus) != len(responses) or self.config.coref):
            raise Q2OptionError("A focus needs one range (or None) per response, and coref off.")
        with self._lock:  # calls on one scorer (or its `with_config` views) take turns
            self._bind()
            return self._score(responses, knowledge, histories, progress, focus)

    def _score(
        self,
        responses: list[str],
        knowledge: list[str],
        histories: list[list[str]] | None,
        progress: ProgressCallback | None,
        focus: Sequence[tuple[int, int] | None] | None = None,
        unverified: dict[int, str] | None = None,
    ) -> Q2Result:
        c = self.config
        turns = (histories if histories is not None else [[] for _ in responses]) if c.coref else []
        gated = unverified or {}
        results = [
            ResponseScore(
                index=i,
                q2=float("nan"),
                q2_no_nli=float("nan"),
                reason=empty_reason(r, k) or gated.get(i),
            )
            for i, (r, k) in enumerate(zip(responses, knowledge))
        ]
        pairs = [Pair(responses[r.index], knowledge[r.index], r) for r in results if r.reason is None]
        if focus is not None:
            for p in pairs:
                p.focus = focus[p.result.index]
        identities = self.check_models() if pairs else self._identities_if_available()
        profile: list[StageProfile] = []
        names: list[str] = []

        def run(name: str, work: Callable[[], T], empty: T) -> T:
            """One stage over the batch, profiled (`empty`: its output when nothing is scored)."""
            names.append(name)
            with stage(progress, name):  # reports the stage's model inputs as they go (progress.STAGES)
                if not pairs:
                    return empty
                out: list[T] = []
                profile.append(run_stage(name, lambda: out.append(work()), self._loaded))
                return out[0]

        if c.coref:
            run("coreference", lambda: resolve_pairs(pairs, turns, self.coref), None)
        run("candidates", lambda: find_candidates(pairs, self.parser, c.drop_candidates), None)
        if focus is not None:
            keep_in_focus(pairs)  # no model: the candidates outside each focus dropped
        run(
            "questions",
            lambda: generate_questions(pairs, self.qg, c.qg_max_input_tokens, c.long_inputs),
            None,
        )
        run("question filter", lambda: self._filter(pairs), 0)
        answers: list[KnowledgeAnswer] = run("knowledge answers", lambda: self._answers(pairs), [])
        spans: list[SpanScore] = run("span scores", lambda: self._span_scores(answers), [])
        run("response scores", lambda: self._response_scores(pairs, spans), None)
        notify(progress, DONE, len(names), len(names))
        locate_spans(pairs)  # no model: the candidates' offsets carried to the response as given
        for r in results:  # the one sentence every front-end shows
            r.reason = reason_line(r)

        return Q2Result(
            system=system_of(results),
            responses=results,
            signature=self.signature(identities),
            profile=profile,
        )

    # -- the stages that record what their step returns -----------------------------------------
    def _loaded(self) -> dict[str, object]:
        return {"qg": self._qg, "qa": self._qa, "nli": self._nli}  # coref: not metered

    def _filter(self, pairs: list[Pair]) -> int:
        c = self.config
        return filter_questions(
            pairs,
            self.parser,
            self.qa,
            mode=c.question_mode,
            personal_filter=c.personal_filter,
            subjects=c.personal_subjects,
            possessives=c.personal_possessives,
            rules=self.token_rules(),
        )

    def _answers(self, pairs: list[Pair]) -> list[KnowledgeAnswer]:
        """Knowledge answers, recorded on their traces (DNLI: the discarded ones marked so)."""
        found = answer_from_knowledge(
            pairs,
            self.qa,
            discard_unanswerable=self.config.discard_unanswerable_if_any_answerable,
            rules=self.token_rules(),
        )
        for a in found:
            t = a.trace
            t.knowledge_answer, t.knowledge_has_answer, t.f1 = a.text, a.has_answer, a.f1
            if not a.kept:
                t.status = DISCARDED
        return found

    def _span_scores(self, answers: list[KnowledgeAnswer]) -> list[SpanScore]:
        """Span scores, recorded on their traces."""
        c = self.config
        found = score_spans(answers, self.nli if c.use_nli else None, cls_text=cls_text(self.qa))
        for s in found:
            t = s.answer.trace
            t.nli_label, t.score, t.score_no_nli = s.nli_label, s.score, s.score_no_nli
        return found

    def _response_scores(self, pairs: list[Pair], spans: list[SpanScore]) -> None:
        """Response scores (the fallback's included), recorded on each pair's `ResponseScore`."""
        c = self.config
        found = score_responses(
            pairs,
            spans,
            self.nli if c.fallback_nli else None,
            fallback=c.fallback_nli,
            lowercase=c.fallback_lowercase,
            scores=c.fallback_scores,
        )
        for p, o in zip(pairs, found):
            r = p.result
            r.q2, r.q2_no_nli = o.q2, o.q2_no_nli
            if o.fallback:
                r.fallback, r.fallback_label, r.fallback_windows = True, o.fallback_label, o.fallback_windows
                r.fallback_cut, r.fallback_parts = o.fallback_cut, o.fallback_parts
            if o.reason is not None:
                r.reason = o.reason


def language_problems(responses: Sequence[str], knowledge: Sequence[str], language: str) -> dict[int, str]:
    """The Python API's language gate (`languages.identify`, as the front-ends' one item check):
    item index -> the reason of an item with a field in a language the `language` set does not
    cover (a non-empty item only: an empty one is unscored for that already)."""
    from q2_metric.languages.identify import language_problem

    out = {}
    for i, (r, k) in enumerate(zip(responses, knowledge)):
        if empty_reason(r, k) is None:
            problem = language_problem(f"item {i}", {"response": r, "knowledge": k}, language)
            if problem is not None:
                out[i] = problem.removesuffix(".")
    return out


def _available_extractor(specs: Sequence[str]) -> str:
    """The first answer-candidate extractor of `specs` that can run here (none downloaded), named
    by its spec; none: `ModelNotAvailable` in one sentence."""
    from q2_metric.errors import ModelNotAvailable
    from q2_metric.models.candidate_extractors import parse_spec, spec_available

    for spec in specs:
        parse_spec(spec)
    for spec in specs:
        if spec_available(spec):
            return spec
    raise ModelNotAvailable(
        f"None of the answer-candidate extractors {', '.join(specs)} is available: install the spaCy "
        "pipeline, download the model, or add 'rules' to the language's model set."
    )


def _checked_model(model_id: str, role: str) -> str:
    from q2_metric.models import checks

    return str(checks.check_model(model_id, role))


def score(
    responses: Sequence[str],
    knowledge: Sequence[str],
    config: Q2Config | None = None,
    *,
    progress: bool | ProgressCallback | None = None,
    operating_point: OperatingPoint | str | os.PathLike[str] | None = None,
    **options: Any,
) -> Q2Result:
    """Score once with a scorer cached per model options (`cached_scorer`).

    Args:
        responses: the dialogue responses.
        knowledge: the knowledge of each response.
        config: the options (default: the paper's); `options` override single ones, e.g.
            `tiny=True` or `device="cpu"`.
        progress: True for a progress bar per stage on stderr (as `compute(progress=True)`),
            False or None for none (the default), or a callback `progress(stage, done, total)`.
        operating_point: an operating-point file (`q2 calibrate`): its threshold labels each
            response's OpenTelemetry event, and the signature names it (as `Q2Scorer.score`).

    Returns:
        The `Q2Result`: `.q2`, `.scores`, `.responses`, `.signature`.

    Raises:
        Q2OptionError: a bad option value, or an unknown name (then also a `TypeError`), before
            any model loads; one sentence naming the option.
    """
    if progress is True:
        from q2_metric.progress import stage_progress

        progress = stage_progress("Q²")
    elif progress is False:
        progress = None
    elif progress is not None and not callable(progress):
        raise Q2OptionError(
            f"Invalid Q² option progress={progress!r}: use True, False or a callback progress(stage, done, total)."
        )
    return cached_scorer(config, **options).score(
        responses, knowledge, progress=progress, operating_point=operating_point
    )


def _provided(config: Q2Config) -> Q2Config:
    """`provide_models(config)`; when that puts the tiny random models in place (the Python API's
    `tiny=True`), the one tiny-models line as a `TinyModelsWarning` (front-ends provide their
    models first, through `options.build_config`, and show the line themselves)."""
    provided = provide_models(config)
    if provided is not config:
        from q2_metric.display import warn_if_tiny

        warn_if_tiny(always=True)
    return provided


_CACHE: dict[tuple, Q2Scorer] = {}
_CACHE_LOCK = threading.Lock()


def cached_scorer(config: Q2Config | None = None, **options: Any) -> Q2Scorer:
    """A scorer whose models are reused while the model options stay the same.

    Args:
        config: the options (default: the paper's); `options` override single ones.

    Returns:
        A `Q2Scorer` with these options over the cached models (one set in memory): its own
        options, so that calls from threads with other options never score or sign with them.
    """
    config = _provided(with_options(config, options))
    key = config.model_key()
    with _CACHE_LOCK:
        scorer = _CACHE.get(key)
        if scorer is None:
            _CACHE.clear()  # keep one set of models in memory
            scorer = _CACHE[key] = Q2Scorer(config)
    return scorer.with_config(config)  # same models; decoding, rule and batch options may differ
