"""Result objects: per-question traces, per-response scores with explanations, the system score."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, fields
from typing import TYPE_CHECKING, Any

from q2_metric.steps.system_score import SystemScore

if TYPE_CHECKING:
    from q2_metric.progress import StageProfile
    from q2_metric.signature import Signature
    from q2_metric.steps.coref import CorefTrace


# Status of a generated question, as shown in explanations and steps files.
VALID = "valid"
PERSONAL = "personal"
NO_MATCH = "no_match"  # the response answer is "no answer" or differs from the candidate
UNUSED = "unused"  # never examined: `single` mode already had a valid question for this occurrence
DISCARDED = "discarded_unanswerable"  # DNLI variant: unanswerable while others are answerable


@dataclass
class QuestionTrace:
    """One generated question of one candidate occurrence and what happened to it (one row of a
    steps file)."""

    candidate: str
    question: str
    rank: int  # 0 = the generator's best
    status: str  # valid | personal | no_match | unused | discarded_unanswerable
    occurrence: int = 0  # index of the candidate in `ResponseScore.candidates` (repeats count apart)
    response_answer: str | None = None  # None: not asked (personal) ; "" with no answer
    response_has_answer: bool | None = None
    knowledge_answer: str | None = None
    knowledge_has_answer: bool | None = None
    f1: float | None = None
    nli_label: str | None = None
    score: float | None = None  # span score with NLI
    score_no_nli: float | None = None  # span score, token F1 only

    @property
    def unanswered(self) -> bool:
        """The knowledge gave "no answer" or the empty answer (neither is compared)."""
        return not self.knowledge_has_answer or not self.knowledge_answer


@dataclass
class Span:
    """One answer candidate occurrence of a response and what Q² found about it.

    `start`/`end` are character offsets (Python string indices: code points) in the response as
    the user gave it, so `response[start:end] == text`. With `coref=True` the candidate was found
    in the resolved response: when it holds a replaced mention, the span covers the whole mention
    as written (`replaced` is True and `text` is what the user wrote, e.g. "it"), and `candidate`
    is the text that was scored (e.g. "caffeine"); otherwise `candidate == text`.

    A span with a valid question has its span scores; it is `supported` when its span score (with
    NLI when `use_nli` is on: the score that enters Q²) is 1, and unsupported below 1. NLI enters
    only where the knowledge answer differs from the candidate (token F1 < 1): entailment makes the
    span score 1 (supported), contradiction 0, neutral leaves the F1. A span without a valid
    question (none survived the filter, or its questions were discarded) is not checked:
    `supported` is None. In `multi` mode an occurrence has one span per valid question.
    """

    start: int | None  # None only when a parser without offsets gave a candidate not in the text
    end: int | None
    text: str
    candidate: str
    occurrence: int  # index in `ResponseScore.candidates`
    question: str | None = None
    response_answer: str | None = None
    knowledge_answer: str | None = None  # "" with no answer
    knowledge_has_answer: bool | None = None
    f1: float | None = None
    nli_label: str | None = None
    score: float | None = None  # span score with NLI (as in Q²)
    score_no_nli: float | None = None  # span score, token F1 only (as in Q² without NLI)
    supported: bool | None = None  # score == 1; None: no valid question
    replaced: bool = False  # coref: the span holds a mention that coreference replaced


@dataclass
class ResponseScore:
    """The score of one response and how it was made."""

    index: int
    q2: float
    q2_no_nli: float
    fallback: bool = False  # scored by end-to-end NLI (no valid question)
    fallback_label: str | None = None
    fallback_windows: int = 0  # premise windows of the fallback NLI (more than 1: knowledge was long)
    # why the score is what it is, in one sentence (`display.reason_line`, written by the engine);
    # while the stages run: why the response is not scored (empty input, fallback off), else None
    reason: str | None = None
    candidates: list[str] = field(default_factory=list)
    questions: list[QuestionTrace] = field(default_factory=list)
    coref: CorefTrace | None = None  # with `coref=True`: the resolved response and its replacements
    spans: list[Span] = field(default_factory=list)  # every candidate occurrence (`steps.spans`)
    # offsets of each candidate in the text parsed (the resolved response with coref); not in to_dict
    candidate_offsets: list = field(default_factory=list, repr=False)
    # long texts (`Q2Config.long_inputs`): QG inputs cut to `qg_max_input_tokens` (a long response;
    # with "windows", only those whose candidate's one sentence is too long), QG inputs read as a
    # window of the response's sentences, whether the fallback NLI's pair was cut to the NLI model's
    # window, and the response's parts the fallback NLI read (more than 1: "windows", a long response)
    qg_cut: int = 0
    qg_windows: int = 0
    fallback_cut: bool = False
    fallback_parts: int = 0

    @property
    def valid_questions(self) -> list[QuestionTrace]:
        return [q for q in self.questions if q.status == VALID]

    @property
    def scored(self) -> bool:
        return not math.isnan(self.q2)

    @property
    def unsupported_spans(self) -> list[Span]:
        """The spans whose span score (with NLI) is below 1 (see `Span`)."""
        return [s for s in self.spans if s.supported is False]

    def span_details(self) -> dict[str, list[dict[str, Any]]]:
        """`spans` and `unsupported_spans` as plain dicts (what a front-end's details carry)."""
        return {
            "spans": [asdict(s) for s in self.spans],
            "unsupported_spans": [asdict(s) for s in self.unsupported_spans],
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ResponseScore:
        """The `ResponseScore` that `to_dict` wrote (a cached or a worker's result), objects all
        the way down: its questions, spans and coreference trace; null scores as NaN.
        `unsupported_spans` is not read: it is derived from `spans`."""
        from q2_metric.steps.coref import CorefTrace, Replacement

        known = {f.name for f in fields(cls)} - {"questions", "spans", "coref", "candidate_offsets"}
        values = {k: v for k, v in data.items() if k in known}
        for name in ("q2", "q2_no_nli"):
            values[name] = math.nan if values.get(name) is None else float(values[name])
        coref = data.get("coref")
        if coref is not None:
            coref = CorefTrace(
                **{k: v for k, v in coref.items() if k != "replacements"},
                replacements=[Replacement(**r) for r in coref.get("replacements", [])],
            )
        return cls(
            **values,
            questions=[QuestionTrace(**q) for q in data.get("questions", [])],
            spans=[Span(**s) for s in data.get("spans", [])],
            coref=coref,
        )

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        del out["candidate_offsets"]
        out.update(self.span_details())
        if out["coref"] is None:  # off by default: the default output keeps its keys
            del out["coref"]
        elif out["coref"].get("skipped") is None:  # only when the model could not read the text
            out["coref"].pop("skipped", None)
        return out


@dataclass
class Pair:
    """A response being scored, its knowledge, and its `ResponseScore` as the stages fill it in.

    `focus` (default None: the whole response, the paper's path): a character range [start, end)
    of the response; only the candidates inside it are scored (`steps.candidates.keep_in_focus`,
    right after the candidates stage), and the fallback NLI reads that range alone (`focused`).
    The streaming check scores a sentence this way, with the sentence before it as context."""

    response: str
    knowledge: str
    result: ResponseScore
    focus: tuple[int, int] | None = None

    def focused(self) -> str:
        """The text of the focus (the whole response without one)."""
        return self.response if self.focus is None else self.response[self.focus[0] : self.focus[1]]


@dataclass
class Q2Result:
    """Scores of a batch of responses: system figures, per-response scores, the signature."""

    system: SystemScore
    responses: list[ResponseScore]
    signature: Signature
    # wall time, model tokens and FLOPs per stage (`q2_metric.progress`); not part of `to_dict()`
    profile: list[StageProfile] = field(default_factory=list)

    @property
    def q2(self) -> float:
        return self.system.q2

    @property
    def q2_no_nli(self) -> float:
        return self.system.q2_no_nli

    @property
    def coverage(self) -> float:
        return self.system.coverage

    @property
    def scores(self) -> list[float]:
        return [r.q2 for r in self.responses]

    @property
    def counts(self) -> dict[str, int]:
        """{"scored": n, "empty": n, "bad": 0} (the front-end contract's counts; a list call
        refuses a bad item, so none is ever in a result)."""
        return {"scored": self.system.num_scored, "empty": self.system.num_skipped, "bad": 0}

    @property
    def scores_no_nli(self) -> list[float]:
        return [r.q2_no_nli for r in self.responses]

    def to_dict(self, details: bool = False) -> dict[str, Any]:
        out: dict[str, Any] = {
            **self.system.to_dict(),
            "scores": self.scores,
            "scores_no_nli": self.scores_no_nli,
            "signature": str(self.signature),
        }
        if details:
            out["details"] = [r.to_dict() for r in self.responses]
        return out

    def __str__(self) -> str:
        from q2_metric.figures import figure

        s = self.system
        return (
            f"Q2 = {figure(s.q2)}  Q2(no NLI) = {figure(s.q2_no_nli)}  coverage = {figure(s.coverage, 3)}  "
            f"no-answer share = {figure(s.no_answer_share, 3)}  ({s.num_scored}/{s.num_responses} scored)\n"
            f"{self.signature}"
        )
