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
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from q2_metric.config import Q2Config

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
        raise ValueError(f"mode must be 'same' or 'other', got {mode!r}")
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


@dataclass
class Cell:
    q2: float
    coverage: float
    valid_questions: int
    no_answer_share: float
    responses: int


def _cell(scores) -> Cell:
    from q2_metric.frontend import system_figures

    s = system_figures(scores)
    return Cell(s.q2, s.coverage, s.num_valid_questions, s.no_answer_share, s.num_scored)


def run_ladder(
    scorer, splits: dict[str, list[dict]], say: Callable[[str], None] = lambda m: None
) -> dict[str, dict[str, Cell]]:
    """Table 7: variant -> split -> Cell. One engine call per variant over every split's rows."""
    rows = [(name, r) for name, split_rows in splits.items() for r in split_rows]
    out = {}
    for name, config in ladder_configs(scorer.config):
        say(f"ladder: {name}")
        scorer.reconfigure(config)
        result = scorer.score(
            [r["response"] for _, r in rows],
            [r["knowledge"] for _, r in rows],
            histories=[[r["message"]] if r.get("message") else [] for _, r in rows],
        )
        out[name] = {
            split: _cell([res for (s, _), res in zip(rows, result.responses) if s == split])
            for split in splits
        }
    return out


def run_control(
    scorer, splits: dict[str, list[dict]], seed: int = 0, say: Callable[[str], None] = lambda m: None
) -> dict[str, Cell]:
    """Table 8: knowledge source -> Cell over every response that has such knowledge."""
    rows = [r for split_rows in splits.values() for r in split_rows]
    sources = {
        "original": [r["knowledge"] for r in rows],
        "same dialogue, other turn": donor_knowledge(rows, "same", seed),
        "other dialogue": donor_knowledge(rows, "other", seed),
    }
    out = {}
    for name, knowledge in sources.items():
        say(f"control: {name}")
        kept = [(r, k) for r, k in zip(rows, knowledge) if k is not None]
        result = scorer.score([r["response"] for r, _ in kept], [k for _, k in kept])
        out[name] = _cell(result.responses)
    return out


def _f(x: float) -> str:
    from q2_metric.frontend import figure

    return figure(x, 3)


def ladder_table(table: dict[str, dict[str, Cell]]) -> str:
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
    lines = ["| knowledge | responses | valid questions | Q² | no answer |", "|---|---:|---:|---:|---:|"]
    for name, c in table.items():
        lines.append(
            f"| {name} | {c.responses} | {c.valid_questions} | {_f(c.q2)} | {_f(c.no_answer_share)} |"
        )
    return "\n".join(lines)


# -- the command line ----------------------------------------------------------------------------


def add_ladder_args(parser) -> None:
    g = parser.add_argument_group("Table 7 ladder and Table 8 control (docs/coref.md)")
    g.add_argument(
        "--ladder",
        action="store_true",
        help="score the split files four ways: base, +filter personal, +top-k (k=5), +coreference",
    )
    g.add_argument(
        "--control",
        choices=("random-knowledge",),
        default=None,
        help="score the split files against knowledge of another turn / another dialogue",
    )
    g.add_argument("--tiny", action="store_true", help="tiny random models (meaningless numbers)")
    g.add_argument("--limit", type=int, default=None, help="first N rows of each split (default all)")
    g.add_argument("--coref-model", default=None, help="F-Coref model of the +coreference row")


def cmd_ladder(args) -> int:
    """`q2 meta-eval --ladder / --control random-knowledge`: print the tables."""
    from q2_metric.errors import Q2InputError
    from q2_metric.meta.evaluation import read_split
    from q2_metric.scorer import Q2Scorer

    def say(msg: str) -> None:
        print(f"q2 meta-eval: {msg}", file=sys.stderr, flush=True)

    if args.limit is not None and args.limit < 1:
        raise Q2InputError(f"--limit must be at least 1, got {args.limit}.")
    from q2_metric.io.paths import check_run

    out = Path(args.out_dir)
    outputs = {
        f"--out-dir ({name})": out / name
        for name, run in (("ladder.md", args.ladder), ("control.md", args.control))
        if run
    }
    paths = {
        f"--{name.replace('_', '-')}": getattr(args, name, None)
        or (Path(args.annotated_dir) / f"{name}.csv" if args.annotated_dir else None)
        for name in SPLITS
    }
    config = _config(args, reads=paths)
    # before any model work; the output folder may be the annotated folder (only the files read count)
    check_run(paths, outputs, config=config)
    check_run({}, {"--out-dir": out}, config=config, folders=["--out-dir"])
    splits = {}
    for name in SPLITS:
        path = getattr(args, name, None) or (
            Path(args.annotated_dir) / f"{name}.csv" if args.annotated_dir else None
        )
        if path is None:
            raise Q2InputError(
                f"--ladder and --control need the split files: pass --annotated-dir or --{name.replace('_', '-')}."
            )
        rows = read_split(path)[: args.limit]
        for i, r in enumerate(rows, 1):
            missing = [c for c in ("response", "knowledge", "message", "episode_idx", "round") if c not in r]
            if missing:
                raise Q2InputError(f"{path}: column '{missing[0]}' is missing (row {i}).")
        splits[name] = rows
    scorer = Q2Scorer(config)
    scorer.reconfigure(config.replace(coref=True))
    scorer.check_models()  # every model, the coreference one included, before any work
    scorer.reconfigure(config)
    texts = {}
    from q2_metric.frontend import tiny_note

    tiny = tiny_note(config)
    note = f"\n{tiny}\n" if tiny else ""
    if args.ladder:
        texts["ladder.md"] = (
            "# Table 7 (first arXiv version): each row adds one step to the previous one\n\n"
            + ladder_table(run_ladder(scorer, splits, say))
            + "\n"
            + note
        )
        print(texts["ladder.md"])
    if args.control:
        scorer.reconfigure(config)
        texts["control.md"] = (
            f"# Table 8 (first arXiv version): knowledge from elsewhere, seed {args.seed}\n\n"
            + control_table(run_control(scorer, splits, args.seed, say))
            + "\n"
            + note
        )
        print(texts["control.md"])
    from q2_metric.io import commit_report

    commit_report(out, [(name, lambda f, text=text: f.write(text)) for name, text in texts.items()], {})
    say(f"wrote {' and '.join(texts)} to {out}")
    return 0


def _config(args, reads: dict | None = None) -> Q2Config:
    """The ladder's configuration through the one options path; the coreference model is provided
    too (the +coreference row turns `coref` on), so the models stay loaded across the rows."""
    from q2_metric.options import build_config, flag_name

    opts = dict(
        qg_model=args.qg_model,
        qa_model=args.qa_model,
        nli_model=args.nli_model,
        coref_model=args.coref_model,
        device=args.device,
        coref=True,
    )
    return build_config("paper", opts, spell=flag_name(), tiny=args.tiny or None, reads=reads).replace(
        coref=False
    )
