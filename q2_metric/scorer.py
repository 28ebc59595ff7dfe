"""The Q² engine: runs every stage batched over all responses of a call.

text -> answer candidates -> questions -> filtered questions -> answers -> span scores
-> response scores -> system score. Each stage makes one component call with the de-duplicated
inputs of the whole batch; the components batch internally (see `q2_metric.components`).
"""

from __future__ import annotations

from typing import Callable, Hashable, Sequence, TypeVar

from q2_metric import question_filter as qf
from q2_metric.candidates import answer_candidates
from q2_metric.components import (Answer, NLIClassifier, Parser, QuestionAnswerer, QuestionGenerator,
                                  describe)
from q2_metric.config import Q2Config
from q2_metric.normalize import f1_score
from q2_metric.progress import ProgressCallback, notify
from q2_metric.response_scores import fallback_score, keep_answerable, mean
from q2_metric.results import Q2Result, QuestionTrace, ResponseScore
from q2_metric.signature import Signature
from q2_metric.span_scores import needs_nli, nli_pair, span_score
from q2_metric.system_score import system_score
from q2_metric.validation import empty_reason, validate_inputs

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


def unique_call(keys: Sequence[K], run: Callable[[list[K]], list[V]]) -> dict[K, V]:
    """Call `run` once on the distinct keys (in first-seen order); nothing when there are none."""
    distinct = list(dict.fromkeys(keys))
    return dict(zip(distinct, run(distinct))) if distinct else {}


class Q2Scorer:
    """Scores (response, knowledge) pairs. Models load on first use and are kept for later calls.

    Pass `parser`, `qg`, `qa` or `nli` to replace a backend (tests script them this way).

    >>> from q2_metric.testing import scripted_scorer
    >>> scorer = scripted_scorer()
    >>> result = scorer.score(["Bob Ross hosted the show."], ["Bob Ross hosted the show."])
    >>> result.q2
    1.0
    """

    def __init__(self, config: Q2Config | None = None, *, parser: Parser | None = None,
                 qg: QuestionGenerator | None = None, qa: QuestionAnswerer | None = None,
                 nli: NLIClassifier | None = None, **options) -> None:
        config = config or Q2Config()
        self.config = config.replace(**options) if options else config
        self._parser, self._qg, self._qa, self._nli = parser, qg, qa, nli

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
        or `DeviceNotAvailable`, each with a one-sentence message.
        """
        from q2_metric.models import checks

        def built_from_config(component: object) -> bool:
            return component is None or type(component).__module__.startswith("q2_metric.models.")

        c = self.config
        wanted = [("qg", self._qg, c.qg_model), ("qa", self._qa, c.qa_model)]
        if self.needs_nli:
            wanted.append(("nli", self._nli, c.nli_model))
        wanted = [(role, model_id) for role, component, model_id in wanted if built_from_config(component)]
        identities: dict[str, str] = {}
        if wanted:
            checks.check_device(c.device)
        for role, model_id in wanted:
            identities[role] = str(checks.check_model(model_id, role))
        if built_from_config(self._parser):
            identities["parser"] = checks.check_spacy(c.spacy_model)
        return identities

    def load(self) -> "Q2Scorer":
        """Load every component now (otherwise each loads on first use)."""
        self.check_models()
        _ = self.parser, self.qg, self.qa
        if self.needs_nli:
            _ = self.nli
        return self

    @property
    def parser(self) -> Parser:
        if self._parser is None:
            from q2_metric.models.spacy_parser import SpacyParser
            self._parser = SpacyParser(self.config)
        return self._parser

    @property
    def qg(self) -> QuestionGenerator:
        if self._qg is None:
            from q2_metric.models.hf_qg import HFQuestionGenerator
            self._qg = HFQuestionGenerator(self.config)
        return self._qg

    @property
    def qa(self) -> QuestionAnswerer:
        if self._qa is None:
            from q2_metric.models.hf_qa import HFQuestionAnswerer
            self._qa = HFQuestionAnswerer(self.config)
        return self._qa

    @property
    def nli(self) -> NLIClassifier:
        if self._nli is None:
            from q2_metric.models.hf_nli import HFNLIClassifier
            self._nli = HFNLIClassifier(self.config)
        return self._nli

    def reconfigure(self, config: Q2Config) -> None:
        """Use new options; components are dropped (and reloaded on use) only if their model
        options changed, otherwise they read the new options on their next call."""
        if config.model_key() != self.config.model_key():
            self._parser = self._qg = self._qa = self._nli = None
        for comp in (self._parser, self._qg, self._qa, self._nli):
            if comp is not None and hasattr(comp, "config"):
                comp.config = config
        self.config = config

    def component_names(self) -> dict[str, str]:
        """`describe()` of each component in hand (loaded or injected)."""
        return {name: describe(comp) for name, comp in
                (("parser", self._parser), ("qg", self._qg), ("qa", self._qa), ("nli", self._nli))
                if comp is not None}

    def signature(self) -> Signature:
        return Signature.create(self.config, self.component_names())

    # -- scoring -----------------------------------------------------------------------------
    def score(self, responses: Sequence[str], knowledge: Sequence[str], *,
              progress: ProgressCallback | None = None) -> Q2Result:
        """Score each response against its knowledge; see `Q2Result` for what comes back.

        `progress(stage, done, total)` is called as each stage advances (see `q2_metric.progress`).
        """
        responses, knowledge = validate_inputs(responses, knowledge)
        c = self.config
        if any(empty_reason(r, k) is None for r, k in zip(responses, knowledge)):
            self.check_models()
        results = [ResponseScore(index=i, q2=float("nan"), q2_no_nli=float("nan"),
                                 reason=empty_reason(r, k))
                   for i, (r, k) in enumerate(zip(responses, knowledge))]
        active = [res for res in results if res.reason is None]

        # 1. answer candidates
        parsed = unique_call([responses[r.index] for r in active], self.parser.parse)
        for r in active:
            r.candidates = answer_candidates(parsed[responses[r.index]], c.drop_candidates)

        # 2. questions, ranked per candidate
        qg_keys = [(cand, responses[r.index]) for r in active for cand in r.candidates]
        generated = unique_call(qg_keys, lambda keys: self.qg.generate([a for a, _ in keys],
                                                                        [ctx for _, ctx in keys]))
        for r in active:
            r.questions = [QuestionTrace(cand, q, rank, qf.VALID)
                           for cand in r.candidates
                           for rank, q in enumerate(generated[(cand, responses[r.index])])]

        # 3. personal filter
        traces = [(r, t) for r in active for t in r.questions]
        if c.personal_filter:
            q_parses = unique_call([t.question for _, t in traces], self.parser.parse)
            for _, t in traces:
                if qf.is_personal(q_parses[t.question].tokens, c.personal_subjects, c.personal_possessives):
                    t.status = qf.PERSONAL

        # 4. question filter: the response must answer with the candidate
        asked = [(r, t) for r, t in traces if t.status != qf.PERSONAL]
        from_response = self._answers([(t.question, responses[r.index]) for r, t in asked])
        for r, t in asked:
            ans = from_response[(t.question, responses[r.index])]
            t.response_answer, t.response_has_answer = ans.text, ans.has_answer
            t.status = qf.VALID if qf.is_valid_question(t.candidate, ans) else qf.NO_MATCH
        for r in active:
            for cand in r.candidates:
                ts = [t for t in r.questions if t.candidate == cand]
                for t, status in zip(ts, qf.select_questions([t.status for t in ts], c.question_mode)):
                    t.status = status

        # 5. knowledge answers
        valid = [(r, t) for r in active for t in r.valid_questions]
        from_knowledge = self._answers([(t.question, knowledge[r.index]) for r, t in valid])
        for r, t in valid:
            ans = from_knowledge[(t.question, knowledge[r.index])]
            t.knowledge_answer, t.knowledge_has_answer = ans.text, ans.has_answer
            t.f1 = f1_score(t.candidate, ans.text) if ans.has_answer else 0.0
        if c.discard_unanswerable_if_any_answerable:
            for r in active:
                vq = r.valid_questions
                for t, keep in zip(vq, keep_answerable([bool(t.knowledge_has_answer) for t in vq])):
                    if not keep:
                        t.status = qf.DISCARDED
            valid = [(r, t) for r in active for t in r.valid_questions]

        # 6-7. NLI for differing answers and for the fallback, in one batched call
        k_answers = {id(t): Answer(t.knowledge_answer or "", bool(t.knowledge_has_answer)) for _, t in valid}
        span_pairs = [nli_pair(t.question, t.candidate, t.knowledge_answer or "") for _, t in valid
                      if c.use_nli and needs_nli(k_answers[id(t)], t.f1)]
        uncovered = [r for r in active if not r.valid_questions]
        fallback_pairs = [(knowledge[r.index], responses[r.index]) for r in uncovered] if c.fallback_nli else []
        labels = unique_call(span_pairs + fallback_pairs,
                             lambda pairs: self.nli.classify([p for p, _ in pairs], [h for _, h in pairs]))

        for _, t in valid:
            k_answer = k_answers[id(t)]
            if c.use_nli and needs_nli(k_answer, t.f1):
                t.nli_label = labels[nli_pair(t.question, t.candidate, t.knowledge_answer or "")]
            t.score = span_score(k_answer, t.f1, t.nli_label)
            t.score_no_nli = span_score(k_answer, t.f1, None)
        for r in active:
            vq = r.valid_questions
            if vq:
                r.q2 = mean([t.score for t in vq])
                r.q2_no_nli = mean([t.score_no_nli for t in vq])
            elif c.fallback_nli:
                r.fallback, r.reason = True, "no valid question"
                r.fallback_label = labels[(knowledge[r.index], responses[r.index])]
                r.q2 = r.q2_no_nli = fallback_score(r.fallback_label, c.fallback_scores)
            else:
                r.reason = "no valid question (fallback off)"

        all_valid = [t for r in active for t in r.valid_questions]
        system = system_score(
            [r.q2 for r in results], [r.q2_no_nli for r in results],
            [bool(r.valid_questions) for r in results],
            valid_questions=len(all_valid),
            unanswered_questions=sum(not t.knowledge_has_answer for t in all_valid),
        )
        return Q2Result(system=system, responses=results, signature=self.signature())

    def _answers(self, pairs: list[tuple[str, str]]) -> dict[tuple[str, str], Answer]:
        return unique_call(pairs, lambda keys: self.qa.answer([q for q, _ in keys], [ctx for _, ctx in keys]))


def score(responses: Sequence[str], knowledge: Sequence[str], config: Q2Config | None = None,
          **options) -> Q2Result:
    """Functional API: score once with a scorer cached per model options."""
    return cached_scorer(config, **options).score(responses, knowledge)


_CACHE: dict[tuple, Q2Scorer] = {}


def cached_scorer(config: Q2Config | None = None, **options) -> Q2Scorer:
    """A scorer whose models are reused while the model options stay the same."""
    config = (config or Q2Config()).replace(**options) if options else (config or Q2Config())
    key = config.model_key()
    scorer = _CACHE.get(key)
    if scorer is None:
        _CACHE.clear()  # keep one set of models in memory
        scorer = _CACHE[key] = Q2Scorer(config)
    else:
        scorer.reconfigure(config)  # same models; decoding, rule and batch options may differ
    return scorer
