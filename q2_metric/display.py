"""What front-ends show, in one place: each rule of what a person reads has its one function here.

- figures: `figure` (the one number formatter: `n/a` where undefined; its code is in the leaf
  `q2_metric.figures`, which the results print with) and `figures_text` (the
  system figures, each with what it means);
- decisions at a threshold: `check_threshold`, and `decide` (the released code's rule: consistent
  iff Q² > threshold), with `decisions`, `decision_counts` and `is_consistent` built on it;
- the reason line: `reason_line` (the engine writes it into `ResponseScore.reason`);
- the tiny line: `tiny_note` (its one text), `tiny_note_once` (once per process), `tiny_note_for`
  (from a signature), `warn_if_tiny` (as a `TinyModelsWarning`, for the Python API);
- the history cell format: `history_separator`, `history_turns`;
- text for a terminal: `for_terminal` (wrapped at word boundaries to its width), `terminal_width`;
- model loading's own output: `loading_output`.

Front-ends import this module; it sits on the core side (it may read `steps/` and `models/`, and
imports no front-end).
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Sequence
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any, Literal, overload

from q2_metric.components import CONTRADICTION, ENTAILMENT, NEUTRAL
from q2_metric.errors import Q2OptionError
from q2_metric.figures import figure as figure
from q2_metric.progress import plural

if TYPE_CHECKING:  # annotations only
    from q2_metric.config import Q2Config
    from q2_metric.results import ResponseScore
    from q2_metric.signature import Signature
    from q2_metric.steps.system_score import SystemScore

# -- figures -----------------------------------------------------------------------------------------


def unscored_text(responses: Sequence[ResponseScore]) -> str:
    """How many responses have no number, by their own reason (as each row's `reason` gives it):
    `2 with an empty response, 1 past spaCy's length limit`; "" when every one has a number.

    >>> from q2_metric.results import ResponseScore
    >>> nan = float("nan")
    >>> unscored_text([ResponseScore(0, nan, nan, reason="empty response"), ResponseScore(1, 0.5, 0.5),
    ...                ResponseScore(2, nan, nan, reason="the response has 1,000,001 characters, above the 1,000,000 spaCy parses")])
    "1 with an empty response, 1 past spaCy's length limit"
    """
    kinds: dict[str, int] = {}
    for res in responses:
        if res.scored:
            continue
        why = (res.reason or "").removeprefix(NOT_SCORED).rstrip(".")
        if why in ("empty response", "empty knowledge"):
            kind = f"with an {why}"
        elif "spaCy parses" in why:
            kind = "past spaCy's length limit"
        else:  # no valid question, and the end-to-end fallback off: no number
            kind = "with no valid question and no fallback"
        kinds[kind] = kinds.get(kind, 0) + 1
    return ", ".join(f"{count} {kind}" for kind, count in kinds.items())


def figures_text(s: SystemScore, responses: Sequence[ResponseScore] | None = None) -> str:
    """The system figures, each with what it means, one per line (no NaN: undefined is `n/a`, with why);
    with the `responses`, those left out are counted by their own reason (`unscored_text`)."""
    why_out = unscored_text(responses) if responses is not None else f"{s.num_skipped} not scored"
    empty = f"; {why_out}, left out" if s.num_skipped else ""
    why_q2 = "" if s.num_scored else " (no response could be scored)"
    why_na = "" if s.num_valid_questions else " (no valid question)"
    long_texts = long_text_line(responses) if responses is not None else ""
    return (
        f"Q2 = {figure(s.q2)}{why_q2}: mean response score over {s.num_scored} of "
        f"{plural(s.num_responses, 'response')}{empty}; 0 to 1, higher is more consistent\n"
        f"Q2 without NLI = {figure(s.q2_no_nli)}: the same, spans compared by token F1 only\n"
        f"coverage = {figure(s.coverage, 3)}: share of scored responses with at least one valid question "
        f"(the others are scored by end-to-end NLI)\n"
        f"no-answer share = {figure(s.no_answer_share, 3)}{why_na}: share of the "
        f"{plural(s.num_valid_questions, 'valid question')} that the knowledge does not answer"
        + (f"\n{long_texts}" if long_texts else "")
    )


# -- decisions at a threshold --------------------------------------------------------------------------
# The released code's rule (`precision_recall.py`, which made the paper's Table 3): a response is
# *inconsistent* iff its score <= the threshold, *consistent* iff its score is above it. The one rule
# of the whole project: `q2 score --threshold`, `compute(threshold=)`, meta-eval's Table 3, `q2 agree`
# and the benchmark's `--calibrate` all decide through `decide`.

CONSISTENT, INCONSISTENT = "consistent", "inconsistent"
# what a guard says of a response Q² could not check (unscored, bad, or no answer from the service):
# never passed as consistent (fail closed). The one place the word is written; the three verdict
# words are `frontend.VERDICTS`, a response's verdict `frontend.verdict_of`.
UNVERIFIED = "unverified"


def check_threshold(threshold: Any) -> float:
    """The threshold as a float in [0, 1] (Q²'s range; -0 is 0), else `Q2OptionError` (also a
    `ValueError`) in one sentence.

    >>> check_threshold(-0.0), check_threshold(1)
    (0.0, 1.0)
    """
    if isinstance(threshold, bool):  # True would pass as 1
        raise Q2OptionError(f"the threshold must be a number in [0, 1], not the bool {threshold}")
    try:
        value = float(threshold)
    except (TypeError, ValueError):
        raise Q2OptionError(f"the threshold must be a number in [0, 1], got {threshold!r}") from None
    if not 0.0 <= value <= 1.0 or math.isnan(value):
        raise Q2OptionError(f"the threshold must lie in [0, 1] (Q²'s range), got {threshold}")
    return value + 0.0  # -0.0 + 0.0 is 0.0: the signature says thr:0, never thr:-0


def decide(score: float | None, threshold: float) -> str | None:
    """`inconsistent` iff score <= threshold, else `consistent`; None for an unscored response.

    >>> decide(0.51, 0.5), decide(0.5, 0.5), decide(float("nan"), 0.5)
    ('consistent', 'inconsistent', None)
    """
    if score is None or math.isnan(score):
        return None
    return CONSISTENT if score > threshold else INCONSISTENT


def is_consistent(score: float | None, threshold: float) -> bool:
    """Whether `decide` says "consistent" (an unscored response is not)."""
    return decide(score, threshold) == CONSISTENT


def decision_counts(made: Sequence[str | None], threshold: float) -> dict[str, Any]:
    """The threshold and how many responses each decision got (unscored ones in neither)."""
    return {
        "threshold": threshold,
        "num_consistent": sum(d == CONSISTENT for d in made),
        "num_inconsistent": sum(d == INCONSISTENT for d in made),
    }


def decisions(scores: Sequence[float | None], threshold: float) -> tuple[list[str | None], dict[str, Any]]:
    """Each score's decision at `threshold` (`decide`; None when unscored) and their counts
    (`decision_counts`)."""
    made = [decide(s, threshold) for s in scores]
    return made, decision_counts(made, threshold)


# -- the reason line ---------------------------------------------------------------------------------

# How a valid question's span score came about, in the order the reason line names them: each a
# predicate with its verb in the singular ("was ..."; `verdict_text` gives the plural).
VERDICTS = (
    ("same", "was answered the same way from the knowledge"),
    ("entailed", "was answered differently, but NLI found the answers consistent (entailment)"),
    ("partly", "was partly matched (token F1, NLI neutral)"),
    ("unmatched", "was answered with no word in common (token F1 0, NLI neutral)"),
    ("contradicted", "was answered in contradiction of the response (NLI)"),
    ("unanswered", "was not answered by the knowledge"),
)


def verdict_text(key: str, count: int = 1) -> str:
    """The predicate of verdict `key` (`VERDICTS`) for `count` questions: "was ..." for one,
    "were ..." for several.

    >>> verdict_text("unanswered"), verdict_text("same", 3)
    ('was not answered by the knowledge', 'were answered the same way from the knowledge')
    """
    text = dict(VERDICTS)[key]
    return text if count == 1 else "were" + text.removeprefix("was")


def verdict(trace: Any) -> str:
    """`same`, `entailed`, `partly`, `unmatched`, `contradicted` or `unanswered` for a valid
    question's trace (`unmatched`: neutral, or no span NLI, and a token F1 of 0)."""
    if trace.unanswered:
        return "unanswered"
    if trace.f1 is not None and trace.f1 >= 1.0:
        return "same"
    if trace.nli_label == ENTAILMENT:
        return "entailed"
    if trace.nli_label == CONTRADICTION:
        return "contradicted"
    if not trace.f1:  # neutral, or no span NLI, and not one word in common: nothing matched
        return "unmatched"
    return "partly"  # neutral, or no span NLI: the score is the token F1


NOT_SCORED = "Not scored: "


def span_reason(span: Any) -> str:
    """Why one span (`results.Span`) is supported or not, in one sentence (`VERDICTS`' phrases):
    "Its question was answered the same way from the knowledge.", "No valid question was asked
    about it.". The one phrase of a span in every front-end (`frontend.SpanRecord.reason`)."""
    if span.supported is None:
        return "No valid question was asked about it."
    unanswered = span.knowledge_has_answer is False
    trace = SimpleNamespace(unanswered=unanswered, f1=span.f1, nli_label=span.nli_label)
    return f"Its question {verdict_text(verdict(trace))}."


def reason_line(res: ResponseScore) -> str:
    """Why the response scored what it did, in one sentence, e.g. "3 of 4 questions were answered
    the same way from the knowledge; 1 was not answered by the knowledge."; "No valid question (...); end-to-end NLI: the
    knowledge entails the response."; "Not scored: empty response."; with coreference, what it
    replaced (`coref_note`).

    The engine calls it once per response and stores the sentence as `res.reason`; called again on
    such a finished result it gives the same sentence."""
    if not res.scored and res.reason is not None and res.reason.startswith(NOT_SCORED):
        return res.reason  # already the sentence (the cause it names is gone from the fields)
    return _score_reason(res) + long_text_note(res) + coref_note(res)


def long_text_note(res: ResponseScore) -> str:
    """What a long text made the models leave out or read in windows (`Q2Config.long_inputs`), e.g.
    ` The response is longer than question generation reads: 12 of its 12 inputs were cut at the
    input limit.`; "" when nothing was long."""
    out = ""
    inputs = len(res.candidates)
    windows, cut = res.qg_windows, res.qg_cut
    if windows:
        still = f", and {cut} of them still cut at the input limit (one sentence is longer)" if cut else ""
        out += (
            " The response is longer than question generation reads: "
            f"{windows} of its {inputs} inputs were windows of its sentences around the candidate{still}."
        )
    elif cut:
        out += (
            " The response is longer than question generation reads: "
            f"{cut} of its {inputs} inputs were cut at the input limit, so a candidate past it was "
            "asked about without its context."
        )
    if res.fallback and res.fallback_cut:
        out += (
            " The end-to-end NLI pair was cut to the NLI model's window (the texts are longer than "
            "it reads beside each other), so only part of the knowledge was read."
        )
    parts = res.fallback_parts
    if res.fallback and parts > 1:
        out += (
            f" The end-to-end NLI read the response in {parts} parts of its sentences, each beside "
            "every knowledge window (contradiction if any part is contradicted, else entailment if "
            "every part is entailed, else neutral)."
        )
    return out


def long_text_counts(responses: Sequence[ResponseScore]) -> dict[str, int]:
    """How many responses had long texts cut: `num_cut_for_qg` (a question generation input cut
    at the input limit) and `num_nli_cut` (the end-to-end NLI pair cut to the NLI model's window),
    and `num_qg_windows` (question generation read windows of the response's sentences)."""
    return {
        "num_cut_for_qg": sum(1 for r in responses if r.qg_cut),
        "num_nli_cut": sum(1 for r in responses if r.fallback and r.fallback_cut),
        "num_qg_windows": sum(1 for r in responses if r.qg_windows),
    }


def long_text_line(responses: Sequence[ResponseScore]) -> str:
    """The summary's line about long texts ("" when none was cut or read in windows), e.g.
    `long texts: 2 responses cut for question generation, 1 end-to-end NLI pair cut`."""
    n = long_text_counts(responses)
    parts = []
    if n["num_cut_for_qg"]:
        parts.append(f"{plural(n['num_cut_for_qg'], 'response')} cut for question generation")
    if n["num_qg_windows"]:
        parts.append(
            f"{plural(n['num_qg_windows'], 'response')} read in sentence windows for question generation"
        )
    if n["num_nli_cut"]:
        parts.append(f"{plural(n['num_nli_cut'], 'end-to-end NLI pair')} cut to the NLI window")
    return "long texts: " + ", ".join(parts) if parts else ""


def coref_note(res: ResponseScore) -> str:
    """With `coref=True`: the spans replaced and the resolved response that was scored, e.g.
    ` Coreference (1 earlier turn): "it" -> "the caffeine"; scored: "Yes, the caffeine ..."`."""
    trace = res.coref
    if trace is None:
        return ""
    turns = trace.history_turns
    where = (
        f"{turns} earlier turn{'s' * (turns != 1)}"
        if turns
        else "within the response alone: no history given"
    )
    if getattr(trace, "skipped", None):
        return f" Coreference ({where}): nothing replaced, {trace.skipped}; scored as written."
    if not trace.replacements:
        return f" Coreference ({where}): nothing replaced."
    spans = "; ".join(f'"{r.original}" -> "{r.replacement}"' for r in trace.replacements)
    return f' Coreference ({where}): {spans}; scored: "{trace.resolved}".'


def _score_reason(res: ResponseScore) -> str:
    if not res.scored:
        return f"{NOT_SCORED}{res.reason}."
    valid = res.valid_questions
    if not valid:
        asked = len(res.questions)
        why = (
            f"none of the {asked} generated questions was answered by the response with its own span"
            if asked
            else "the response has no answer candidate"
        )
        label = {
            ENTAILMENT: "entails",
            NEUTRAL: "neither entails nor contradicts",
            CONTRADICTION: "contradicts",
        }.get(res.fallback_label or "", "was compared with")
        windows = res.fallback_windows
        read = (
            f", read in {windows} knowledge windows (entailment if any window entails, else "
            "contradiction if any contradicts, else neutral)"
            if windows > 1
            else ""
        )
        return f"No valid question ({why}); end-to-end NLI: the knowledge {label} the response{read}."
    counts = {key: 0 for key, _ in VERDICTS}
    for t in valid:
        counts[verdict(t)] += 1
    parts = [(n, key) for key, _ in VERDICTS if (n := counts[key])]
    first_n, first_key = parts[0]
    noun = "question" if len(valid) == 1 else "questions"
    if first_n == len(valid):
        whole = "The question" if len(valid) == 1 else f"All {len(valid)} questions"
        head = f"{whole} {verdict_text(first_key, first_n)}"
    else:
        head = f"{first_n} of {len(valid)} {noun} {verdict_text(first_key, first_n)}"
    return "; ".join([head] + [f"{n} {verdict_text(key, n)}" for n, key in parts[1:]]) + "."


# -- the tiny line -----------------------------------------------------------------------------------

# How the tiny line says to turn the tiny models off, in the words of most front-ends (the Space,
# which has no --tiny flag, passes its own).
TINY_OFF = "leave out --tiny / Q2_TINY"


@overload
def tiny_note(
    config: Q2Config | None = None,
    *,
    always: Literal[True],
    turn_off: str = TINY_OFF,
    question_cap: int | None = None,
) -> str: ...
@overload
def tiny_note(
    config: Q2Config | None = None,
    *,
    always: bool = False,
    turn_off: str = TINY_OFF,
    question_cap: int | None = None,
) -> str | None: ...
def tiny_note(
    config: Q2Config | None = None,
    *,
    always: bool = False,
    turn_off: str = TINY_OFF,
    question_cap: int | None = None,
) -> str | None:
    """The one short line every front-end shows after scoring on the tiny random models (when a
    model of `config` is one of them, or `always`), else None; `turn_off` says how to leave them out
    (the run then names any model still to download, with its `hf download` command). The question
    cap it names is the run's (`question_cap`, else `config`'s `max_question_length`, else the tiny
    models' own, `TINY_QUESTION_LENGTH`), as the signature's `dec` entry names it."""
    from q2_metric.models.tiny import TINY_QUESTION_LENGTH, uses_tiny

    if not always and (config is None or not uses_tiny(config)):
        return None
    if question_cap is None:
        question_cap = config.max_question_length if config is not None else TINY_QUESTION_LENGTH
    return (
        "These scores are meaningless: the models are tiny and random (questions capped at "
        f"{question_cap} tokens). For the paper's scores, {turn_off}: Q² then names any model to download."
    )


_TINY_SAID: list[bool] = []  # whether `tiny_note_once` has given the line in this process


def tiny_note_once(config: Q2Config | None = None) -> str | None:
    """`tiny_note(config)` the first time a run on the tiny models asks for it in this process,
    then None: for the front-ends that report from inside another tool's run (Inspect, lm-eval,
    LightEval), which may ask once per task, batch or epoch, and by more than one way (the models'
    check logs it; a report on stderr prints it unless that was done)."""
    note = tiny_note(config)
    if note is None or _TINY_SAID:
        return None
    _TINY_SAID.append(True)
    return note


def tiny_note_for(signature: str | Signature) -> str | None:
    """The tiny line for a run whose (full) signature is `signature` (it names tiny models), or None."""
    import re

    from q2_metric.signature import Signature

    parsed = signature if isinstance(signature, Signature) else Signature.parse(str(signature))
    if not parsed.tiny():
        return None
    cap = re.search(r"-max(\d+)-", parsed.to_dict().get("dec", ""))  # the run's question cap
    return tiny_note(always=True, question_cap=int(cap.group(1)) if cap else None)


def warn_if_tiny(config: Q2Config | None = None, *, always: bool = False) -> None:
    """For Python front-ends (the Python API, the `evaluate` module): the tiny line as a
    `TinyModelsWarning` when a model of `config` is a tiny random one (or `always`), pointed at
    the caller's line outside this package (Python's default filter then shows it once per line)."""
    import sys
    import warnings

    from q2_metric.errors import TinyModelsWarning

    note = tiny_note(config, always=always)
    if note is None:
        return
    frame, level = sys._getframe(0), 1
    while frame.f_back is not None and str(frame.f_globals.get("__name__", "")).startswith("q2_metric."):
        frame, level = frame.f_back, level + 1
    warnings.warn(note, TinyModelsWarning, stacklevel=level)


# -- the history cell format ---------------------------------------------------------------------------


def history_separator() -> str:
    """The separator of the turns in a history column's text cell (the documented format)."""
    return " ||| "


def history_turns(cell: str) -> list[str]:
    """A history column's text cell as its turns (`history_separator()` between turns; an empty
    cell: no history).

    >>> history_turns("Do you like coffee? ||| I love caffeine.")
    ['Do you like coffee?', 'I love caffeine.']
    """
    return [t.strip() for t in cell.split(history_separator())] if cell.strip() else []


# -- text for a terminal ------------------------------------------------------------------------------


def terminal_width(stream: Any = None) -> int | None:
    """The width of the terminal that `stream` (default: stdout) writes to; None when it writes to
    no terminal (a pipe, a file: then nothing is wrapped)."""
    import shutil
    import sys

    stream = sys.stdout if stream is None else stream
    try:
        if not stream.isatty():
            return None
    except (AttributeError, ValueError):  # no isatty, or a closed stream
        return None
    return shutil.get_terminal_size().columns


def for_terminal(text: str, indent: int = 0, width: int | None = None, stream: Any = None) -> str:
    """`text` wrapped at word boundaries to `width` (default: the terminal's that `stream` writes
    to, `terminal_width`; off a terminal, `text` as it is), each of its lines on its own: a wrapped
    line goes on under its first word, or `indent` columns in (a table's last column). A word longer
    than a line (a signature) is never cut.

    >>> print(for_terminal("  3  gpt2  The question was not answered by the knowledge.", 10, width=30))
      3  gpt2  The question was
              not answered by the
              knowledge.
    """
    import textwrap

    width = terminal_width(stream) if width is None else width
    if width is None:
        return text
    out = []
    for line in text.split("\n"):
        lead = line[: len(line) - len(line.lstrip(" "))]
        out.extend(
            textwrap.wrap(
                line,
                max(width - 1, 20),  # the last column left free: no terminal wraps a full line again
                initial_indent="",
                subsequent_indent=" " * max(indent, len(lead)),
                break_long_words=False,
                break_on_hyphens=False,
            )
            or [""]
        )
    return "\n".join(out)


# -- model loading -----------------------------------------------------------------------------------


def loading_output(verbose: bool = True) -> contextlib.AbstractContextManager:
    """Within the block, transformers' model-loading bars and messages are shown when `verbose`
    (the front-ends' --verbose), else kept quiet."""
    from q2_metric.models.loading import verbose_loading

    return verbose_loading(bool(verbose))
