"""`q2 meta-eval --dataset NAME=FILE ...`: the command-line side of the benchmark (its flags, Q²
through the normal file scorer, the outputs). The computation is `q2_metric.meta.benchmark.run_benchmark`."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from q2_metric.cli.common import add_option_flags
from q2_metric.meta.datasets import ColumnMapping, Dataset, DatasetError

if TYPE_CHECKING:
    from q2_metric.scorer import Q2Scorer

OUTPUTS = ("benchmark.json", "benchmark.md", "benchmark.tex", "leaderboard.csv")


def add_benchmark_args(me: argparse.ArgumentParser) -> None:
    """The benchmark's flags on the `meta-eval` parser (which already has --scores, --seed,
    --auc-draws, --nli-model, --device, --no-bertscore, --baselines-only and --out-dir)."""
    g = me.add_argument_group("benchmark on labelled sets (--dataset)")
    g.add_argument(
        "--dataset",
        action="append",
        default=[],
        metavar="NAME=FILE",
        help="a labelled set (repeatable): a TRUE-format CSV (grounding, generated_text, label), a "
        "BEGIN .tsv (either release), the paper's annotated folder, RAGTruth's folder, LLM-AggreFact, "
        "FaithDial, SEAHORSE (its folder or a split's TSV), a Mu-SHROOM file, a PsiloQA table, the "
        "translated RAGTruth (a folder of ragtruth_data_LANG.json), or any CSV/TSV/JSONL/Parquet "
        "file whose columns --response-col/--knowledge-col/--label-col name",
    )
    g.add_argument(
        "--calibrate",
        metavar="DEV:TEST",
        default=None,
        help="tune each metric's threshold on DEV (best balanced accuracy) and report it on TEST",
    )
    g.add_argument(
        "--bootstrap", dest="auc_draws", type=int, default=argparse.SUPPRESS, help="same as --auc-draws"
    )
    g.add_argument("--response-col", default="response", help="response column of a file of no known format")
    g.add_argument(
        "--knowledge-col", default="knowledge", help="knowledge column of a file of no known format"
    )
    g.add_argument("--label-col", default="label", help="label column of a file of no known format")
    g.add_argument(
        "--consistent-label",
        action="append",
        default=None,
        metavar="VALUE",
        help="a label value meaning consistent in such a file (repeatable; default 1)",
    )
    rt = me.add_argument_group("RAGTruth (a --dataset folder with response.jsonl and source_info.jsonl)")
    rt.add_argument(
        "--ragtruth-split",
        default="test",
        metavar="SPLIT",
        help="read the rows of this split only (default test, as RAGTruth's baseline; 'all': every row)",
    )
    rt.add_argument(
        "--ragtruth-quality",
        default="good",
        metavar="QUALITY",
        help="read the rows of this quality only (default good, as RAGTruth's baseline; 'all': every row)",
    )
    rt.add_argument(
        "--ragtruth-grounding",
        default="source",
        choices=("source", "prompt"),
        help="the knowledge: the source per task type (QA: question and passages; Summary: the text; "
        "Data2txt: the structured data as key: value lines) or RAGTruth's prompt (LettuceDetect's context)",
    )
    rt.add_argument(
        "--ragtruth-spans",
        "--span-predictions",
        action="append",
        default=[],
        metavar="NAME=FILE",
        help="a metric's span predictions on the set with gold spans (RAGTruth, translated RAGTruth, "
        "PsiloQA, Mu-SHROOM; repeatable): JSON lines of 'id' and 'spans' [{start, end}], offsets in "
        "the response; for Mu-SHROOM also the task's own format ('id', 'soft_labels', 'hard_labels')",
    )
    ml = me.add_argument_group(
        "multilingual sets (a --dataset of SEAHORSE, Mu-SHROOM, PsiloQA or the translated RAGTruth)"
    )
    ml.add_argument(
        "--lang",
        action="append",
        default=[],
        metavar="LANG",
        help="keep only this language's rows (repeatable; SEAHORSE's worker_lang without its region, "
        "Mu-SHROOM's and PsiloQA's lang, the translated RAGTruth's file suffix); default: all",
    )
    ml.add_argument(
        "--seahorse-split",
        default="test",
        choices=("train", "validation", "test"),
        help="the split file of a SEAHORSE folder (default test)",
    )
    ml.add_argument(
        "--seahorse-articles",
        default=None,
        metavar="FILE",
        help="GEM's articles for SEAHORSE: a table of gem_id and text/document/source (default: "
        "articles.jsonl in the SEAHORSE folder)",
    )
    # Q²'s engine options (also of --ladder/--control), with their declared help
    add_option_flags(
        g,
        (
            "qg_model",
            "qa_model",
            "spacy_model",
            "batch_size",
            "max_question_length",
            "language",
            "model_sets",
        ),
    )
    g.add_argument("--cache-dir", default=".q2_cache", help="Q²'s resumable score cache (as in `q2 score`)")
    g.add_argument("--no-cache", action="store_true")
    g.add_argument("--chunk-size", type=int, default=64, help="responses per Q² engine call")
    g.add_argument("--no-progress", action="store_true", help="no progress bars")
    g.add_argument("--ray", nargs="?", const="", default=None, metavar="ADDRESS", help="score Q² on Ray Data")


def _check_paths(args: argparse.Namespace, inputs: list[Path], writes: dict[str, Path | None]) -> None:
    """The one output-path guard (`paths.check_run`): the output folder and the score cache are
    neither an input, nor inside one (a dataset, a score file, a model folder), nor holding one, and
    every file written into the output folder is a regular file or new."""
    from q2_metric.frontend import guard
    from q2_metric.io.paths import check_regular_target

    reads: dict[str, Any] = {f"--dataset/--scores {p}": p for p in inputs}
    reads.update(
        {
            f"--{name.replace('_', '-')}": getattr(args, name, None)
            for name in ("qg_model", "qa_model", "nli_model", "spacy_model")
        }
    )
    guard(
        {k: v for k, v in reads.items() if v and os.path.exists(v)},
        writes,
        folders=[name for name in writes if name != "--write-template"],
    )
    out_dir = writes.get("--out-dir")
    if out_dir is not None:
        for name in OUTPUTS:
            check_regular_target(out_dir / name, "--out-dir")


def q2_runner(
    args: argparse.Namespace, out: Path, reads: dict[str, Path] | None = None
) -> tuple[Callable[[Dataset], dict[str, list[float]]], Q2Scorer]:
    """Q² on a dataset through `q2 score`'s file scorer (cache, resume, progress, Ray): the
    dataset's pairs go to OUT/q2/NAME.input.csv (a RAGTruth set's with its `id` and `task_type`,
    which its scores and spans files carry too), its scores to OUT/q2/NAME.scores.csv, their counts
    and full signature to OUT/q2/NAME.summary.json."""
    from q2_metric.corpus.files import score_file
    from q2_metric.frontend import check_models, configure
    from q2_metric.io import read_rows, write_table
    from q2_metric.options import flag_name
    from q2_metric.scorer import Q2Scorer

    opts = dict(
        qg_model=args.qg_model,
        qa_model=args.qa_model,
        nli_model=args.nli_model,
        spacy_model=args.spacy_model,
        device=args.device,
        max_question_length=args.max_question_length,
        language=getattr(args, "language", None),
        model_sets=getattr(args, "model_sets", None),
    )
    try:
        config = configure(
            opts,
            batch_size=args.batch_size,
            spell=flag_name(),
            tiny=getattr(args, "tiny", None) or None,
            reads=reads,
        )
    except ValueError as err:
        raise DatasetError(str(err)) from None
    scorer = Q2Scorer(config)
    check_models(
        scorer, spell=flag_name()
    )  # a missing model stops here, before any work, in the flags' words
    score: Callable[..., Any] = score_file
    extra: dict[str, Any] = {}
    if args.ray is not None:
        from q2_metric.corpus.ray import score_file_ray

        score, extra = score_file_ray, {"address": args.ray or None}

    def run(ds: Dataset) -> dict[str, list[Any]]:
        folder = out / "q2"
        folder.mkdir(parents=True, exist_ok=True)
        source, scores = folder / f"{ds.name}.input.csv", folder / f"{ds.name}.scores.csv"
        # a RAGTruth set's rows carry its id and task type into every per-response output
        named = {name: v for name, v in (("id", ds.ids), ("task_type", ds.task)) if v}
        records = [
            {**{c: v[i] for c, v in named.items()}, "response": r, "knowledge": k}
            for i, (r, k) in enumerate(ds.keys())
        ]
        write_table(source, records, [*named, "response", "knowledge"])
        # a set with gold spans (RAGTruth) also gets Q²'s unsupported spans, NAME.spans.jsonl
        spans = folder / f"{ds.name}.spans.jsonl" if ds.gold_spans is not None else None
        # Ray ships the scorer to its workers unloaded; this process's one may hold the NLI model
        score(
            Q2Scorer(config) if args.ray is not None else scorer,
            source,
            scores,
            summary_path=folder / f"{ds.name}.summary.json",  # the column's counts and full signature
            cache_dir=None if args.no_cache else args.cache_dir,
            chunk_size=args.chunk_size,
            progress=not args.no_progress,
            **({"spans_path": spans} if spans else {}),
            **extra,
        )
        rows = [r.fields for r in read_rows(scores)]
        result: dict[str, list[Any]] = {
            m: [float("nan") if r.get(m) in (None, "") else float(r[m]) for r in rows]
            for m in ("q2", "q2_no_nli")
        }
        if spans is not None:
            from q2_metric.meta.benchmark import SPANS_KEY

            result[SPANS_KEY] = _unsupported_spans(spans, ds)
        return result

    return run, scorer


def _unsupported_spans(path: Path, ds: Dataset) -> list[list[tuple[int, int]] | None]:
    """Each row's unsupported spans from `q2 score --spans`'s file (None: unscored), each checked
    at its offsets in the row's response."""
    from q2_metric.io import read_table

    out: list[list[tuple[int, int]] | None] = [None] * len(ds.response)
    for row in read_table(path)[0]:
        f = row.fields
        i = int(f.get("row") or 0) - 1
        if not 0 <= i < len(out) or f.get("q2") is None:
            continue
        found = []
        for span in f.get("unsupported_spans") or []:
            start, end = span.get("start"), span.get("end")
            if not (isinstance(start, int) and isinstance(end, int)) or ds.response[i][start:end] != span.get(
                "text"
            ):
                raise DatasetError(
                    f"{path}: row {i + 1} (id {ds.ids[i] if ds.ids else i + 1}): the span {span.get('text')!r} "
                    f"is not at {start}-{end} of the response."
                )
            found.append((start, end))
        out[i] = found
    return out


def _check_multilingual_flags(args: argparse.Namespace, datasets: list[Dataset]) -> None:
    """A flag of the multilingual sets with no such set to apply to is refused, never ignored."""
    from q2_metric.errors import Q2InputError

    if args.lang and not any(d.langs is not None for d in datasets):
        raise Q2InputError(
            "--lang applies to the multilingual sets (SEAHORSE, Mu-SHROOM, PsiloQA, the translated "
            "RAGTruth); no --dataset is one."
        )
    given = [
        f
        for f, on in (
            ("--seahorse-articles", args.seahorse_articles),
            ("--seahorse-split", args.seahorse_split != "test"),
        )
        if on
    ]
    if given and not any(d.format == "seahorse" for d in datasets):
        raise Q2InputError(f"{given[0]} applies to a SEAHORSE --dataset; none is given.")


def cmd_benchmark(args: argparse.Namespace) -> int:
    from q2_metric.errors import Q2InputError
    from q2_metric.io import commit_report, table_writer
    from q2_metric.meta.bench_report import LEADERBOARD_COLUMNS, leaderboard, render_latex, render_markdown
    from q2_metric.meta.benchmark import parse_calibrate, read_span_files, run_benchmark, template_records
    from q2_metric.meta.datasets import load_datasets
    from q2_metric.meta.scores import check_names, parse_score_spec, write_template
    from q2_metric.options import json_safe

    if args.auc_draws is None or args.auc_draws < 1:
        raise Q2InputError(f"--auc-draws/--bootstrap must be at least 1, got {args.auc_draws}.")
    mapping = ColumnMapping(
        args.response_col, args.knowledge_col, args.label_col, tuple(args.consistent_label or ("1",))
    )
    from q2_metric.meta.ragtruth import Selection

    datasets = load_datasets(
        args.dataset,
        mapping,
        Selection(
            args.ragtruth_split,
            args.ragtruth_quality,
            args.ragtruth_grounding,
            langs=tuple(args.lang),
            seahorse_split=args.seahorse_split,
            seahorse_articles=args.seahorse_articles,
        ),
        limit=getattr(args, "limit", None),
    )
    _check_multilingual_flags(args, datasets)
    calibration = parse_calibrate(args.calibrate, [d.name for d in datasets])
    if args.write_template:
        from q2_metric.meta.scores import TEMPLATE_FILE

        _check_paths(
            args,
            [Path(d.path) for d in datasets],
            {"--write-template": Path(args.write_template) / TEMPLATE_FILE},
        )
        records = template_records(datasets)
        path = write_template(args.write_template, records)
        print(
            f"Wrote {len(records)} rows (one per distinct response/knowledge pair of the datasets; id NAME:ROW "
            f"of its first row) to {path}."
        )
        return 0
    extra = [parse_score_spec(text) for text in args.scores]
    check_names(extra)  # before any output
    out = Path(args.out_dir)
    cache = None if args.no_cache or args.baselines_only else Path(args.cache_dir)
    inputs = (
        [Path(d.path) for d in datasets]
        + [s.path for s in extra]
        + [Path(spec.partition("=")[2]) for spec in args.ragtruth_spans]
        + [
            Path(str(d.multilingual["articles"]))
            for d in datasets
            if d.multilingual and "articles" in d.multilingual
        ]
    )
    _check_paths(args, inputs, {"--out-dir": out, "--cache-dir": cache})
    span_predictions = read_span_files(datasets, args.ragtruth_spans)  # before any model or work
    q2, nli, signature = None, None, None
    if not args.baselines_only:
        q2, scorer = q2_runner(args, out, reads={f"--dataset/--scores {p}": p for p in inputs})
        nli = scorer.nli  # the end-to-end NLI baseline with Q²'s own NLI model
        signature = str(scorer.signature())
    elif args.nli_model:
        from q2_metric.meta.baselines import load_nli

        nli = load_nli(args.nli_model, args.device)
    figures: dict[str, bytes] = {}
    report = run_benchmark(
        datasets,
        q2=q2,
        extra=extra,
        nli=nli,
        bertscore=not args.no_bertscore,
        draws=args.auc_draws,
        seed=args.seed,
        calibration=calibration,
        figures=figures,
        progress=lambda msg: print(f"q2 meta-eval: {msg}", file=sys.stderr),
        signature=signature,
        threshold=args.threshold,
        span_predictions=span_predictions,
    )
    markdown, latex = render_markdown(report), render_latex(report)

    commit_report(
        out,
        [
            (
                "benchmark.json",
                lambda f: json.dump(json_safe(report.to_dict()), f, indent=2, allow_nan=False),
            ),
            ("benchmark.md", lambda f: f.write(markdown)),
            ("benchmark.tex", lambda f: f.write(latex)),
            (
                "leaderboard.csv",
                table_writer(out / "leaderboard.csv", leaderboard(report), LEADERBOARD_COLUMNS),
            ),
        ],
        figures,
    )
    print(markdown)
    print(f"Wrote {', '.join(OUTPUTS)} and {len(figures)} plots to {out}", file=sys.stderr)
    return 0
