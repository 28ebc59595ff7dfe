"""`q2 meta-eval --ladder` and `--control random-knowledge`: the first arXiv version's Table 7 and
Table 8 on the four annotated split files (docs/coref.md).

Table 7, the ladder, each row on top of the previous one:
- base: no personal filter, and only the top beam's question per candidate (k = 1);
- +filter personal: questions about "I"/"you" dropped (`personal_filter`);
- +top-k (k = 5): a candidate's five beam questions examined in rank order, the first that passes
  the filter kept. This is the final paper's and the released code's default (`question_mode
  single`, `num_return_sequences 5`, see `q2_metric.steps.question_filter`): "+top-k" is where the
  ladder reaches the default, the base row departs from it with `num_return_sequences 1`;
- +coreference: the response resolved with its history first (`coref`, `q2_metric.steps.coref`); the split
  files hold only the last user message (`message`) of each dialogue, which is the history here.
Each cell: Q² and coverage (the share of responses with at least one valid question).

Table 8, the control: the responses scored against the knowledge of another turn of the same
dialogue (`episode_idx`, another `round`) or of another dialogue, drawn with a seeded generator
(`donor_knowledge`, a pure function), beside their own knowledge: number of valid questions, Q²,
and the share of questions the knowledge could not answer.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from q2_metric.config import Q2Config
from q2_metric.errors import Q2OptionError
from q2_metric.frontend import Item, score_items

if TYPE_CHECKING:
    from q2_metric.frontend import ItemResult
    from q2_metric.scorer import Q2Scorer

SPLITS = ("dodeca_inconsistent", "dodeca_consistent", "memnet_inconsistent", "memnet_consistent")
LADDER = (
    ("base", dict(personal_filter=False, num_return_sequences=1, coref=False)),
    ("+filter personal", dict(personal_filter=True)),
    ("+top-k (k=5)", dict(num_return_sequences=5)),
    ("+coreference", dict(coref=True)),
)


def ladder_configs(base: Q2Config) -> list[tuple[str, Q2Config]]:
    """The four configurations of Table 7, each adding one change to the previous one."""
    out, config = [], base
    for name, change in LADDER:
        config = config.replace(**change)
        out.append((name, config))
    return out


def donor_knowledge(rows: Sequence[dict], mode: str, seed: int = 0) -> list[str | None]:
    """For each row, the knowledge of another context drawn with `random.Random(seed)`: `same`:
    another round of the same dialogue (`episode_idx`) with other knowledge; `other`: a context of
    another dialogue. None where there is no such context (that response is left out)."""
    if mode not in ("same", "other"):
        raise Q2OptionError(f"Invalid donor mode {mode!r}: use 'same' or 'other'.")
    contexts = list(dict.fromkeys((str(r["episode_idx"]), str(r["round"]), r["knowledge"]) for r in rows))
    rng = random.Random(seed)
    out: list[str | None] = []
    for r in rows:
        ep, rnd, know = str(r["episode_idx"]), str(r["round"]), r["knowledge"]
        if mode == "same":
            pool = [c for c in contexts if c[0] == ep and c[1] != rnd and c[2] != know]
        else:
            pool = [c for c in contexts if c[0] != ep]
        out.append(rng.choice(pool)[2] if pool else None)
    return out


@dataclass(frozen=True)
class Cell:
    """One cell of Table 7 or Table 8: the system Q² and coverage over the scored responses, their
    valid questions, the share of those the knowledge could not answer, and how many were scored."""

    q2: float
    coverage: float
    valid_questions: int
    no_answer_share: float
    responses: int


def _rows(splits: dict[str, list[dict]]) -> list[tuple[str, str, dict]]:
    """(split, the row's key as `read_split`'s messages name it, row) for every row of every split."""
    return [
        (name, f"{name} row {i}", r)
        for name, split_rows in splits.items()
        for i, r in enumerate(split_rows, 1)
    ]


def _cell(items: Sequence[ItemResult], say: Callable[[str], None]) -> Cell:
    """The system figures over the items' scores; a bad item (a response or knowledge that is no
    text) has none: said in its one sentence, and left out as an empty one is."""
    from q2_metric.frontend import system_figures

    for item in items:
        if item.error is not None:
            say(f"{item.error} Left out.")
    s = system_figures([item.score for item in items if item.score is not None])
    return Cell(s.q2, s.coverage, s.num_valid_questions, s.no_answer_share, s.num_scored)


def run_ladder(
    scorer: Q2Scorer, splits: dict[str, list[dict]], say: Callable[[str], None] = lambda m: None
) -> dict[str, dict[str, Cell]]:
    """Table 7: variant -> split -> Cell. One engine call per variant over every split's rows."""
    rows = _rows(splits)
    out = {}
    for name, config in ladder_configs(scorer.config):
        say(f"ladder: {name}")
        scorer.reconfigure(config)
        # with coref, each row's history: the dialogue's last user message
        items = [
            Item(
                key,
                r["response"],
                r["knowledge"],
                ([r["message"]] if r.get("message") else []) if config.coref else None,
            )
            for _, key, r in rows
        ]
        outcome = score_items(scorer, items, emit=False)  # a ladder of configurations: no verdicts
        out[name] = {
            split: _cell([item for (s, _, _), item in zip(rows, outcome.items) if s == split], say)
            for split in splits
        }
    return out


def run_control(
    scorer: Q2Scorer,
    splits: dict[str, list[dict]],
    seed: int = 0,
    say: Callable[[str], None] = lambda m: None,
) -> dict[str, Cell]:
    """Table 8: knowledge source -> Cell over every response that has such knowledge."""
    rows = _rows(splits)
    plain = [r for _, _, r in rows]
    sources = {
        "original": [r["knowledge"] for r in plain],
        "same dialogue, other turn": donor_knowledge(plain, "same", seed),
        "other dialogue": donor_knowledge(plain, "other", seed),
    }
    out = {}
    for name, knowledge in sources.items():
        say(f"control: {name}")
        items = [Item(key, r["response"], k) for (_, key, r), k in zip(rows, knowledge) if k is not None]
        out[name] = _cell(score_items(scorer, items, emit=False).items, say)
    return out


def _f(x: float) -> str:
    from q2_metric.display import figure

    return figure(x, 3)


def ladder_table(table: dict[str, dict[str, Cell]]) -> str:
    """Table 7 in Markdown: a row per variant, Q² and coverage per split."""
    splits = list(next(iter(table.values())))
    head = "| variant | " + " | ".join(f"{s} Q² | {s} coverage" for s in splits) + " |"
    rule = "|---|" + "---:|---:|" * len(splits)
    lines = [head, rule]
    for name, cells in table.items():
        lines.append(
            f"| {name} | " + " | ".join(f"{_f(c.q2)} | {_f(c.coverage)}" for c in cells.values()) + " |"
        )
    return "\n".join(lines)


def control_table(table: dict[str, Cell]) -> str:
    """Table 8 in Markdown: a row per knowledge source."""
    lines = ["| knowledge | responses | valid questions | Q² | no answer |", "|---|---:|---:|---:|---:|"]
    for name, c in table.items():
        lines.append(
            f"| {name} | {c.responses} | {c.valid_questions} | {_f(c.q2)} | {_f(c.no_answer_share)} |"
        )
    return "\n".join(lines)
