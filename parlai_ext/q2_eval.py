"""The part shared by every Q² teacher: flags, a response buffer, batched scoring, metrics."""

from __future__ import annotations

import json
from typing import Any, Callable

from q2_metric.config import Q2Config
from q2_metric.scorer import Q2Scorer, cached_scorer

NO_PASSAGES = "no_passages_used"

# Tests may replace this to script the engine; it receives the Q2Config built from the flags.
SCORER_FACTORY: Callable[[Q2Config], Q2Scorer] = cached_scorer


class Q2DataError(ValueError):
    """The data cannot be scored with Q² (e.g. it has no checked sentence)."""


def q2_requested(opt: dict) -> bool:
    names = {m.strip() for m in str(opt.get("metrics") or "default").split(",")}
    return bool(names & {"q2", "all"})


def add_q2_args(parser) -> None:
    d = Q2Config()
    g = parser.add_argument_group("Q² metric (with --metrics q2)")
    g.add_argument("--q2-qg-model", type=str, default=d.qg_model, help="question generation model")
    g.add_argument("--q2-qa-model", type=str, default=d.qa_model, help="SQuAD 2.0 QA model")
    g.add_argument("--q2-nli-model", type=str, default=d.nli_model, help="NLI model")
    g.add_argument("--q2-spacy-model", type=str, default=None, help="spaCy pipeline")
    g.add_argument("--q2-device", type=str, default="auto", choices=["auto", "cpu", "cuda"])
    g.add_argument("--q2-batch-size", type=int, default=64,
                   help="responses buffered per engine call (and the engine's batch size)")
    g.add_argument("--q2-decoding", type=str, default=d.decoding, choices=["beam", "greedy"])
    g.add_argument("--q2-max-question-length", type=int, default=d.max_question_length)
    g.add_argument("--q2-question-mode", type=str, default=d.question_mode, choices=["single", "multi"])
    g.add_argument("--q2-variant", type=str, default="paper", choices=["paper", "dnli"])
    g.add_argument("--q2-explain-file", type=str, default=None,
                   help="append one JSON line per scored turn: questions, answers, scores")


def config_from_opt(opt: dict) -> Q2Config:
    base = Q2Config.dnli if opt.get("q2_variant") == "dnli" else Q2Config.paper
    bs = int(opt.get("q2_batch_size") or 64)
    return base(qg_model=opt["q2_qg_model"], qa_model=opt["q2_qa_model"], nli_model=opt["q2_nli_model"],
                spacy_model=opt.get("q2_spacy_model"), device=opt.get("q2_device") or "auto",
                decoding=opt.get("q2_decoding") or "beam", question_mode=opt.get("q2_question_mode") or "single",
                max_question_length=int(opt.get("q2_max_question_length") or 128),
                qg_batch_size=bs, qa_batch_size=bs, nli_batch_size=bs)


class Q2Buffer:
    """Responses waiting to be scored; shared by a teacher and its batch copies."""

    def __init__(self, opt: dict) -> None:
        self.size = int(opt.get("q2_batch_size") or 64)
        self.explain_file = opt.get("q2_explain_file")
        self.config = config_from_opt(opt)
        self.items: list[tuple[str, str, dict]] = []
        self.engine_calls = 0

    def flush(self, metrics) -> None:
        from parlai.core.metrics import AverageMetric, SumMetric

        if not self.items:
            return
        items, self.items = self.items, []
        result = SCORER_FACTORY(self.config).score([r for r, _, _ in items], [k for _, k, _ in items])
        self.engine_calls += 1
        lines = []
        for (response, knowledge, info), res in zip(items, result.responses):
            if not res.scored:
                metrics.add("q2_empty", SumMetric(1))
                continue
            metrics.add("q2", AverageMetric(res.q2))
            metrics.add("q2_no_nli", AverageMetric(res.q2_no_nli))
            metrics.add("q2_scored", SumMetric(1))
            if self.explain_file:
                lines.append(json.dumps({**info, "response": response, "knowledge": knowledge,
                                         **res.to_dict()}, ensure_ascii=False))
        if lines:
            with open(self.explain_file, "a", encoding="utf-8") as f:
                f.write("\n".join(lines) + "\n")


class Q2EvalMixin:
    """Mix into a ParlAI teacher before its base class. The subclass says where the knowledge is
    (`q2_knowledge(teacher_action)`); everything else is here."""

    @classmethod
    def add_cmdline_args(cls, parser, partial_opt=None):
        super().add_cmdline_args(parser, partial_opt)
        add_q2_args(parser)
        return parser

    def _q2_setup(self, opt: dict, shared: dict | None) -> None:
        self.q2_on = q2_requested(opt)
        self.q2_buffer = (shared or {}).get("q2_buffer") or (Q2Buffer(opt) if self.q2_on else None)

    def share(self):
        shared = super().share()
        shared["q2_buffer"] = self.q2_buffer
        return shared

    def q2_knowledge(self, teacher_action) -> str | None:
        raise NotImplementedError

    def custom_evaluation(self, teacher_action, labels, model_response) -> None:
        super().custom_evaluation(teacher_action, labels, model_response)
        if not self.q2_on or model_response is None or "text" not in model_response:
            return
        knowledge = self.q2_knowledge(teacher_action)
        if knowledge is None or knowledge == NO_PASSAGES:
            from parlai.core.metrics import SumMetric
            self.metrics.add("q2_skipped", SumMetric(1))
            return
        info: dict[str, Any] = {"id": teacher_action.get("id"), "text": teacher_action.get("text")}
        self.q2_buffer.items.append((model_response["text"], knowledge, info))
        if len(self.q2_buffer.items) >= self.q2_buffer.size:
            self.q2_buffer.flush(self.metrics)

    def report(self):
        if self.q2_buffer is not None:
            self.q2_buffer.flush(self.metrics)
        return super().report()
