"""The front-ends of Q², enumerated from the real registry, and an adapter per scoring front-end.

`registry()` lists every name the matrix asks, read from the package's front-end registry
(`q2_metric.registry`: each front-end with its module, extra, page and the names it is driven by,
checked against the `q2` verbs, the entry points, lm-eval's task files and the modules by
`tests/unit/test_registry.py`). A name of that list is either served by an adapter (`ADAPTERS`, here
and in `adapters_harness.py`) or, for a front-end that scores nothing itself, in
`NOT_SCORING` with the reason; `test_matrix.py` fails otherwise.

An adapter drives its front-end the way a user does and reads back what the user sees:
- `score(items, tmp)`: a `Report`: one `Row` per item (its key as the front-end names it, status
  scored/empty/bad, Q²), the counts and the full signature, as the front-end's result carries them;
- `refusal(kind, tmp)`: the one sentence the front-end says for a bad option (`kind`: wrong type,
  out of range, unknown name) or a missing model, before any model loads;
- `bad_item`: "reported" (the item gets its own sentence, the others are scored) or "refused"
  (a list API: the call is refused before any model work, naming the item and the field);
- `spans_reason`: None when `score`'s report carries the spans the front-end shows (issue 43),
  else why it shows none;
- `records_reason`: None when `score`'s report carries each row's verdict word and reason sentence
  (the front-end's record), else why it shows none;
- `write_inside_read(tmp)`: the sentence refusing an output placed inside something read (the QG
  model folder), or None when the front-end writes nothing;
- `op_reason`: None when the front-end takes an operating-point file (`operating_point` among its
  options, spelled as it spells options: the adapter driven with it added to `base`), else why not.
Options are the same for every adapter (`BASE`: the tiny models, greedy short questions), each
spelled as its front-end spells it.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

BAD_OPTION_KINDS = ("wrong type", "out of range", "unknown name")
REFUSALS = BAD_OPTION_KINDS + ("missing model",)


@dataclass
class Row:
    key: str
    status: str  # scored | empty | bad
    q2: float | None
    error: str | None = None


@dataclass
class Report:
    rows: list[Row]
    counts: dict[str, int]
    signature: str
    # per row, its spans as the front-end shows them (dicts with at least start, end, text; None for
    # a bad row); None when the front-end shows no details (its adapter's `spans_reason` says why)
    spans: list | None = None
    # per row, its verdict word and its reason sentence as the front-end shows them (its record,
    # `frontend.Record`); None when it shows none (its adapter's `records_reason` says why)
    verdicts: list | None = None
    reasons: list | None = None


@dataclass
class Item:
    response: Any
    knowledge: Any


class Adapter(Protocol):
    name: str
    slow: bool
    bad_item: str  # "reported" | "refused" | "n/a" (then `bad_item_reason`)
    words: dict  # kind of refusal -> the option as this front-end spells it in its sentence
    foreign_words: tuple  # spellings of other front-ends that its sentences must not use

    def option_word(self, kind: str) -> str: ...

    def score(self, items: list[Item], tmp: Path) -> Report: ...

    def refusal(self, kind: str, tmp: Path) -> str: ...

    def write_inside_read(self, tmp: Path) -> str | None: ...


# -- the registry ---------------------------------------------------------------------------------


def registry() -> list[str]:
    """Every name the matrix asks, from the package's front-end registry (`q2_metric.registry`, which
    `tests/unit/test_registry.py` checks against the `q2` verbs, entry points, task files and modules)."""
    from q2_metric.registry import entries

    return list(entries())


def _not_scoring() -> dict[str, str]:
    from q2_metric.registry import FRONT_ENDS

    return {entry: front.not_scoring for front in FRONT_ENDS if front.not_scoring for entry in front.entries}


NOT_SCORING = _not_scoring()


# -- the options every adapter uses ------------------------------------------------------------------


def base_options(tiny_models: dict[str, str]) -> dict[str, Any]:
    return {
        "qg_model": tiny_models["qg"],
        "qa_model": tiny_models["qa"],
        "nli_model": tiny_models["nli"],
        "device": "cpu",
        "max_question_length": 16,
    }


def flags(options: dict[str, Any], prefix: str = "--") -> list[str]:
    """`q2`'s flags (or ParlAI's with prefix `--q2-`) for the options of `base_options`."""
    out = []
    for name, value in options.items():
        out += [prefix + name.replace("_", "-"), str(value)]
    return out


def nowhere(tmp: Path) -> str:
    return str(tmp / "no_such_model")


@contextlib.contextmanager
def no_model_loads():
    """Every model backend refuses to be built: a refusal must come before any model loads."""
    from q2_metric.models import hf_nli, hf_qa, hf_qg, spacy_parser

    def refuse(*args, **kwargs):
        raise AssertionError("a model was loaded before the refusal")

    classes = [
        hf_qg.HFQuestionGenerator,
        hf_qa.HFQuestionAnswerer,
        hf_nli.HFNLIClassifier,
        spacy_parser.SpacyParser,
    ]
    saved = [c.__init__ for c in classes]
    for c in classes:
        c.__init__ = refuse
    try:
        yield
    finally:
        for c, init in zip(classes, saved):
            c.__init__ = init


def _nan_to_none(value: Any) -> float | None:
    if value is None or value == "":
        return None
    value = float(value)
    return None if math.isnan(value) else value


class Words:
    def option_word(self, kind: str) -> str:
        return self.words[kind]


# -- in-process Python front-ends -----------------------------------------------------------------


@dataclass
class PythonAPI(Words):
    """`q2_metric.score(responses, knowledge, **options)` or `Q2Scorer(**options).score(...)`."""

    name: str
    base: dict[str, Any]
    via_scorer: bool = False
    slow: bool = False
    bad_item: str = "refused"
    words: dict = field(
        default_factory=lambda: {
            "wrong type": "use_nli='false'",
            "out of range": "fallback_scores=(0, 2, 1)",
            "unknown name": "'use_nlii'",
            "missing model": "qg_model",
        }
    )
    foreign_words: tuple = ()
    writes: bool = False

    def _call(self, responses, knowledge, options):
        import q2_metric

        if self.via_scorer:  # the operating point is the call's, the options the scorer's
            rest = {k: v for k, v in options.items() if k != "operating_point"}
            op = options.get("operating_point")
            return q2_metric.Q2Scorer(**rest).score(responses, knowledge, operating_point=op)
        return q2_metric.score(responses, knowledge, **options)

    def score(self, items: list[Item], tmp: Path) -> Report:
        result = self._call([i.response for i in items], [i.knowledge for i in items], self.base)
        rows = [
            Row(f"item {n}", "scored" if r.scored else "empty", _nan_to_none(r.q2))
            for n, r in enumerate(result.responses)
        ]
        spans = [r.span_details()["spans"] for r in result.responses]
        reasons = [r.reason for r in result.responses]
        return Report(rows, result.counts, str(result.signature), spans, reasons=reasons)

    def options_for(self, kind: str, tmp: Path) -> dict[str, Any]:
        return {
            **self.base,
            **{
                "wrong type": {"use_nli": "false"},
                "out of range": {"fallback_scores": (0, 2, 1)},
                "unknown name": {"use_nlii": True},
                "missing model": {"qg_model": nowhere(tmp)},
            }[kind],
        }

    def refusal(self, kind: str, tmp: Path) -> str:
        from q2_metric.errors import Q2Error

        try:
            self._call(["Bob Ross hosted it."], ["Bob Ross hosted the show."], self.options_for(kind, tmp))
        except Q2Error as err:
            return str(err)
        raise AssertionError(f"{self.name} accepted {kind}")

    def refuse_item(self, items: list[Item]) -> str:
        from q2_metric.errors import Q2Error

        try:
            self._call([i.response for i in items], [i.knowledge for i in items], self.base)
        except Q2Error as err:
            return str(err)
        raise AssertionError(f"{self.name} accepted a bad item")

    def write_inside_read(self, tmp: Path) -> str | None:
        return None  # returns a result object; writes nothing


_METRIC: dict[str, Any] = {}


def evaluate_module(name: str, cache_dir: str | None = None):
    """One metric instance per adapter (add_batch's buffered batches stay in an instance until
    its next compute) and cache folder."""
    import evaluate

    import q2_metric

    key = f"{name} {cache_dir}"
    if key not in _METRIC:
        _METRIC[key] = evaluate.load(
            q2_metric.module_path(), **({"cache_dir": cache_dir} if cache_dir else {})
        )
    return _METRIC[key]


@dataclass
class EvaluateModule(Words):
    """The `evaluate` module: `compute(predictions=..., references=..., **options)`, or `add_batch`
    per half and `compute(**options)`."""

    name: str
    base: dict[str, Any]
    batches: bool = False
    slow: bool = False
    bad_item: str = "refused"
    words: dict = field(
        default_factory=lambda: {
            "wrong type": "use_nli='false'",
            "out of range": "fallback_scores=(0, 2, 1)",
            "unknown name": "'use_nlii'",
            "missing model": "qg_model",
        }
    )
    foreign_words: tuple = ()

    def _compute(self, items: list[Item], options: dict[str, Any], metric=None) -> dict:
        metric = evaluate_module(self.name) if metric is None else metric  # (an empty Metric is falsy)
        preds, refs = [i.response for i in items], [i.knowledge for i in items]
        if not self.batches:
            return metric.compute(predictions=preds, references=refs, return_details=True, **options)
        half = len(items) // 2
        metric.add_batch(predictions=preds[:half], references=refs[:half])
        metric.add_batch(predictions=preds[half:], references=refs[half:])
        return metric.compute(return_details=True, **options)

    def score(self, items: list[Item], tmp: Path) -> Report:
        out = self._compute(items, self.base)
        rows = [Row(f"item {n}", "empty" if q is None else "scored", q) for n, q in enumerate(out["scores"])]
        counts = {"scored": out["num_scored"], "empty": out["num_skipped"], "bad": 0}
        reasons = [d["reason"] for d in out["details"]]
        # decisions only at a threshold or an operating point (None: unscored, so unverified)
        verdicts = [d or "unverified" for d in out["decisions"]] if "decisions" in out else None
        spans = [d["spans"] for d in out["details"]]
        return Report(rows, counts, out["signature"], spans, verdicts=verdicts, reasons=reasons)

    def refusal(self, kind: str, tmp: Path) -> str:
        from q2_metric.errors import Q2Error

        options = PythonAPI(self.name, self.base).options_for(kind, tmp)
        try:
            self._compute([Item("Bob Ross hosted it.", "Bob Ross hosted the show.")], options)
        except Q2Error as err:
            return str(err)
        raise AssertionError(f"{self.name} accepted {kind}")

    def refuse_item(self, items: list[Item]) -> str:
        from q2_metric.errors import Q2Error

        try:
            self._compute(items, self.base)
        except Q2Error as err:
            return str(err)
        finally:  # the batches added before the refused one stay in that instance: a new one next
            _METRIC.pop(f"{self.name} None", None)
        raise AssertionError(f"{self.name} accepted a bad item")

    def write_inside_read(self, tmp: Path) -> str | None:
        """evaluate's cache folder (where it writes its arrow files) inside the QG model folder."""
        from q2_metric.errors import Q2Error

        metric = evaluate_module(self.name, str(Path(self.base["qg_model"]) / "evaluate-cache"))
        try:
            self._compute([Item("Bob Ross hosted it.", "Bob Ross hosted the show.")], self.base, metric)
        except Q2Error as err:
            return str(err)
        raise AssertionError(f"{self.name} wrote inside a model folder")


# -- the q2 command (in process: its `main`, as the console script calls it) -----------------------


def run_q2(argv: list[str]) -> tuple[int, str, str]:
    from q2_metric.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as stop:  # argparse
            code = stop.code
    return code, out.getvalue(), err.getvalue()


def write_jsonl(path: Path, items: list[Item]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        "".join(json.dumps({"response": i.response, "knowledge": i.knowledge}) + "\n" for i in items),
        encoding="utf-8",
    )
    return path


@dataclass
class Q2Score(Words):
    """`q2 score IN -o OUT --summary S` (with --ray: on a local Ray); items as a JSONL file, whose
    rows are named by their line (`line N`)."""

    out_suffix = ".jsonl"  # what -o is named in the refusals (not a dataclass field)
    name: str
    base: dict[str, Any]
    ray: bool = False
    slow: bool = False
    bad_item: str = "reported"
    words: dict = field(
        default_factory=lambda: {
            "wrong type": "--max-question-length",
            "out of range": "--batch-size=0",
            "unknown name": "--use-nlii",
            "missing model": "--qg-model",
        }
    )
    foreign_words: tuple = ()

    def _argv(self, source: Path, out: Path, summary: Path | None, options: list[str]) -> list[str]:
        argv = ["score", str(source), "-o", str(out), "--no-cache", "--no-progress", *options]
        if summary:
            argv += ["--summary", str(summary), "--spans", str(summary.with_name("spans.jsonl"))]
        return argv + (["--ray", "--workers", "1"] if self.ray else [])

    def score(self, items: list[Item], tmp: Path) -> Report:
        source, out, summary = (
            write_jsonl(tmp / "in" / "items.jsonl", items),
            tmp / "out.jsonl",
            tmp / "summary.json",
        )
        code, _, err = run_q2(self._argv(source, out, summary, flags(self.base)))
        assert code in (0, 3), err[-3000:]
        rows, reasons, verdicts = [], [], []
        for n, line in enumerate(out.read_text(encoding="utf-8").splitlines(), 1):
            rec = json.loads(line)
            verdicts.append(rec.get("decision") or "unverified" if "decision" in rec else None)
            status = "bad" if rec.get("error") else "empty" if rec.get("q2") is None else "scored"
            rows.append(Row(f"line {n}", status, _nan_to_none(rec.get("q2")), rec.get("error") or None))
            reasons.append(rec.get("error") or rec.get("reason"))
        s = json.loads(summary.read_text(encoding="utf-8"))
        counts = {"scored": s["num_scored"], "empty": s["num_skipped"], "bad": s["num_bad_rows"]}
        spans = [
            None if rec.get("error") else rec["spans"]
            for rec in map(
                json.loads, summary.with_name("spans.jsonl").read_text(encoding="utf-8").splitlines()
            )
        ]
        decided = verdicts if all(v is not None for v in verdicts) else None  # with a decision column only
        return Report(rows, counts, s["signature"], spans, verdicts=decided, reasons=reasons)

    def option_flags(self, kind: str, tmp: Path) -> list[str]:
        return (
            flags(self.base)
            + {
                "wrong type": ["--max-question-length", "eight"],
                "out of range": ["--batch-size", "0"],
                "unknown name": ["--use-nlii"],
                "missing model": ["--qg-model", nowhere(tmp)],
            }[kind]
        )

    def refusal(self, kind: str, tmp: Path) -> str:
        source = write_jsonl(
            tmp / "in" / "items.jsonl", [Item("Bob Ross hosted it.", "Bob Ross hosted the show.")]
        )
        refused = tmp / f"refused{self.out_suffix}"
        code, _, err = run_q2(self._argv(source, refused, None, self.option_flags(kind, tmp)))
        assert code == 2 and not refused.exists(), err
        return err.strip().splitlines()[-1]  # argparse: its usage line, then the one sentence

    def write_inside_read(self, tmp: Path) -> str | None:
        source = write_jsonl(
            tmp / "in" / "items.jsonl", [Item("Bob Ross hosted it.", "Bob Ross hosted the show.")]
        )
        target = Path(self.base["qg_model"]) / f"scores{self.out_suffix}"
        code, _, err = run_q2(self._argv(source, target, None, flags(self.base)))
        assert code == 2 and not target.exists(), err
        return err.strip()


@dataclass
class Q2Agree(Q2Score):
    """`q2 agree IN --fast use_nli=false -o REPORT --per-response ROWS` with the base options as its
    engine flags: the base configuration is the one compared (its scores, `base_q2`, and its
    signature, `base_signature`, are what the matrix reads); the fast one only adds columns. Items
    as a JSONL file, rows named by their line; a bad row is skipped with its sentence and written
    to the per-response table with its `error`, the report counts it."""

    out_suffix = ".json"  # -o: the report, one JSON object
    op_reason: str | None = "compares two configurations' scores; it decides at no operating point"

    fast: tuple = ("--fast", "use_nli=false")
    spans_reason: str | None = (
        "its outputs compare two runs (scores, decisions, how many questions, answers and "
        "labels differ); they show no spans"
    )
    records_reason: str | None = (
        "its outputs compare two runs' scores and decisions; they show no reason sentence per row"
    )

    def _argv(self, source: Path, out: Path, summary: Path | None, options: list[str]) -> list[str]:
        argv = ["agree", str(source), "-o", str(out), *self.fast, *options]
        return argv + (["--per-response", str(summary)] if summary else [])

    def score(self, items: list[Item], tmp: Path) -> Report:
        source, out, per = (
            write_jsonl(tmp / "in" / "items.jsonl", items),
            tmp / "report.json",
            tmp / "rows.jsonl",
        )
        code, _, err = run_q2(self._argv(source, out, per, flags(self.base)))
        assert code in (0, 3), err[-3000:]
        rows = []
        for rec in map(json.loads, per.read_text(encoding="utf-8").splitlines()):
            status = "bad" if rec.get("error") else "empty" if rec.get("base_q2") is None else "scored"
            rows.append(
                Row(f"line {rec['line']}", status, _nan_to_none(rec.get("base_q2")), rec.get("error") or None)
            )
        s = json.loads(out.read_text(encoding="utf-8"))
        counts = {"scored": s["num_scored"], "empty": s["num_skipped"], "bad": s["num_bad_rows"]}
        return Report(rows, counts, s["base_signature"])


def marked_spans(page: str) -> list[dict[str, Any]]:
    """The spans the Space's page marks (`<mark class="q2-span">`), with their character offsets in
    the response as the page shows it (its text, HTML entities read back; the score after a span in
    `<sub>` is no part of the response)."""
    import html
    import re

    found, at = [], 0
    body = re.sub(r"^<div[^>]*>|</div>$", "", page)
    for part in re.split(r"(<mark [^>]*>.*?</mark>)", body, flags=re.S):
        if part.startswith("<mark "):
            text = html.unescape(
                re.sub(r"<sub[^>]*>.*?</sub>", "", re.sub(r"^<mark [^>]*>|</mark>$", "", part))
            )
            found.append({"start": at, "end": at + len(text), "text": text})
        else:
            text = html.unescape(part)
        at += len(text)
    return found


# -- the Space's scoring function ----------------------------------------------------------------


@dataclass
class SpaceFunction(Words):
    """The Space's function (`hub.space.score_or_message`: one pair per request) over the scorer of
    its configuration (`space_config`: the variable Q2_SPACE_OPTIONS, a JSON object)."""

    name: str
    base: dict[str, Any]
    slow: bool = False
    bad_item: str = "reported"
    words: dict = field(
        default_factory=lambda: {
            "wrong type": "use_nli='false'",
            "out of range": "fallback_scores=[0, 2, 1]",
            "unknown name": "'use_nlii'",
            "missing model": "Q2_QG_MODEL",  # the Space reads its models from the environment
        }
    )
    foreign_words: tuple = ("--qg-model",)
    writes: bool = False
    digits: int = 3  # the page shows the score with 3 decimals
    op_reason: str | None = "a demonstration page: it shows scores and spans, and decides nothing"
    marks: bool = True  # the page marks the spans' characters: overlapping spans show as one mark

    @contextlib.contextmanager
    def _env(self, options: dict[str, Any]):
        saved = os.environ.get("Q2_SPACE_OPTIONS")
        os.environ["Q2_SPACE_OPTIONS"] = json.dumps(options)
        try:
            yield
        finally:
            if saved is None:
                os.environ.pop("Q2_SPACE_OPTIONS", None)
            else:
                os.environ["Q2_SPACE_OPTIONS"] = saved

    def _scorer(self, options: dict[str, Any]):
        from q2_metric.hub.space import space_config
        from q2_metric.scorer import Q2Scorer

        with self._env(options):
            return Q2Scorer(space_config())

    def score(self, items: list[Item], tmp: Path) -> Report:
        from q2_metric.hub.space import score_or_message

        scorer = self._scorer(self.base)
        rows, signature, spans, reasons = [], "", [], []
        for item in items:
            score, reason, page, _, sig, message = score_or_message(item.response, item.knowledge, scorer)
            reasons.append(reason)
            if message.startswith("**Not scored:**"):
                rows.append(Row("the request", "bad", None, message))
                spans.append(None)
            else:
                rows.append(
                    Row("the request", "scored" if score else "empty", float(score) if score else None)
                )
                signature = sig
                spans.append(marked_spans(page))
        counts = {s: sum(r.status == s for r in rows) for s in ("scored", "empty", "bad")}
        return Report(rows, counts, signature, spans, reasons=reasons)

    def refusal(self, kind: str, tmp: Path) -> str:
        from q2_metric.errors import Q2Error
        from q2_metric.hub.space import score_or_message

        options = PythonAPI(self.name, self.base).options_for(kind, tmp)
        options = {k: list(v) if isinstance(v, tuple) else v for k, v in options.items()}
        try:
            scorer = self._scorer(options)
        except Q2Error as err:
            return str(err)
        out = score_or_message("Bob Ross hosted it.", "Bob Ross hosted the show.", scorer)
        assert out[0] == "" and out[-1].startswith("**Not scored:**"), out
        return out[-1].removeprefix("**Not scored:** ")

    def write_inside_read(self, tmp: Path) -> str | None:
        return None  # returns its outputs to the page; writes no file


# -- the benchmark's Q² column

LABELLED = (
    "grounding,generated_text,label\nBob Ross hosted the show.,Bob Ross hosted it.,1\n"
    "Bob Ross hosted the show.,Bob Ross never hosted it.,0\n"
)  # a TRUE-format set, both labels ----------------------------------------------------------------------


@dataclass
class BenchmarkColumn(Words):
    """The Q² column of `q2 meta-eval --dataset` (`cli.meta_eval.benchmark.q2_runner`: a labelled set's pairs
    through q2 score's file scorer); its result: the scores, and the summary beside them."""

    name: str
    base: dict[str, Any]
    slow: bool = False
    bad_item: str = "n/a"  # a labelled set is read as text by the dataset reader, row errors there
    bad_item_reason: str = (
        "a labelled set is read by the dataset reader (meta.datasets), whose rows are "
        "text; a row it cannot read is its error, before Q²"
    )
    words: dict = field(
        default_factory=lambda: {
            "wrong type": "--max-question-length",
            "out of range": "--batch-size=0",
            "unknown name": "--use-nlii",
            "missing model": "--qg-model",
        }
    )
    foreign_words: tuple = ("qg_model (--qg-model)",)
    # a set with gold spans (RAGTruth's) gets Q²'s spans beside its scores, OUT/q2/NAME.spans.jsonl
    spans_reason: str | None = None
    records_reason: str | None = (
        "a column of scores for the meta-evaluation's tables; its decisions are the tables' own "
        "(at each threshold), with no reason per row"
    )
    op_reason: str | None = (
        "a column of scores for the meta-evaluation, whose tables choose and report thresholds "
        "themselves (q2 calibrate makes an operating point of them)"
    )

    def _args(self, options: dict[str, Any], tmp: Path) -> argparse.Namespace:
        values = dict(
            qg_model=None,
            qa_model=None,
            nli_model=None,
            spacy_model=None,
            device="auto",
            max_question_length=None,
            batch_size=None,
            tiny=None,
            ray=None,
            no_cache=True,
            cache_dir=str(tmp / "cache"),
            chunk_size=64,
            no_progress=True,
        )
        values.update({k: v for k, v in options.items() if k in values})
        return argparse.Namespace(**values)

    def score(self, items: list[Item], tmp: Path) -> Report:
        from q2_metric.cli.meta_eval.benchmark import q2_runner
        from q2_metric.meta.datasets import Dataset

        out = tmp / "bench"
        run, _ = q2_runner(self._args(self.base, tmp), out)
        ds = Dataset(
            "set",
            "set.csv",
            "true",
            "",
            [i.response for i in items],
            [i.knowledge for i in items],
            [1] * len(items),
            [f"row {n}" for n in range(len(items))],
            ids=[str(n) for n in range(len(items))],
            gold_spans=[[] for _ in items],  # as a RAGTruth set: its spans are written too
        )
        column = run(ds)
        rows = [
            Row(f"row {n}", "empty" if math.isnan(q) else "scored", _nan_to_none(q))
            for n, q in enumerate(column["q2"])
        ]
        s = json.loads((out / "q2" / "set.summary.json").read_text(encoding="utf-8"))
        lines = (out / "q2" / "set.spans.jsonl").read_text(encoding="utf-8").splitlines()
        spans = [None if rec.get("error") else rec["spans"] for rec in map(json.loads, lines)]
        return Report(
            rows,
            {"scored": s["num_scored"], "empty": s["num_skipped"], "bad": s["num_bad_rows"]},
            s["signature"],
            spans,
        )

    def refusal(self, kind: str, tmp: Path) -> str:
        source = tmp / "set.csv"
        source.write_text(LABELLED)
        extra = {
            "wrong type": ["--max-question-length", "eight"],
            "out of range": ["--batch-size", "0"],
            "unknown name": ["--use-nlii"],
            "missing model": ["--qg-model", nowhere(tmp)],
        }[kind]
        base = {k: v for k, v in self.base.items() if k != "decoding"}  # (meta-eval has no --decoding)
        if kind == "missing model":
            base.pop("qg_model")
        code, _, err = run_q2(
            [
                "meta-eval",
                "--dataset",
                f"set={source}",
                "--out-dir",
                str(tmp / "bench-out"),
                "--no-bertscore",
                "--no-cache",
                *flags(base),
                *extra,
            ]
        )
        assert code == 2, err
        return err.strip().splitlines()[-1]

    def write_inside_read(self, tmp: Path) -> str | None:
        source = tmp / "set.csv"
        source.write_text(LABELLED)
        base = {k: v for k, v in self.base.items() if k != "decoding"}
        target = Path(self.base["qg_model"]) / "bench-out"
        code, _, err = run_q2(
            [
                "meta-eval",
                "--dataset",
                f"set={source}",
                "--out-dir",
                str(target),
                "--no-bertscore",
                *flags(base),
            ]
        )
        assert code == 2 and not target.exists(), err
        return err.strip()


def adapters(tiny_models: dict[str, str]) -> dict[str, Adapter]:
    """The adapters of the non-harness front-ends (ParlAI's in `adapters_parlai.py`)."""
    base = base_options(tiny_models)
    found: list[Adapter] = [
        PythonAPI("python score", base),
        PythonAPI("python Q2Scorer", base, via_scorer=True),
        EvaluateModule("evaluate compute", base),
        EvaluateModule("evaluate add_batch", base, batches=True),
        Q2Score("q2 score", base),
        Q2Score("q2 score --ray", base, ray=True, slow=True),
        Q2Agree("q2 agree", base),
        SpaceFunction("space function", base),
        BenchmarkColumn("benchmark q2 column", base),
    ]
    from contract.adapters_parlai import parlai_adapters

    found += parlai_adapters(base)
    from contract.adapters_rescore import Q2Rescore

    found.append(Q2Rescore("q2 rescore", base))
    from contract.adapters_serve import Q2Serve

    found.append(Q2Serve("q2 serve", base))
    return {a.name: a for a in found}
