"""The streaming check's work against the batch check of the same answers (docs/streaming.md).

    python benchmarks/bench_stream.py                 # tiny shapes, answers of 1, 2, 3, 5 and 8 sentences
    python benchmarks/bench_stream.py --size paper    # paper shapes (random weights; slow on a CPU)

For each N, answers of N sentences (the first sentences of N consecutive rows of the annotated WoW
set, or of the bundled sample, with their knowledge joined) are checked twice by the same engine:
- batch: the whole answer alone, one engine call (what `POST /v1/score` does);
- stream: as `q2 serve` and `Q2Stream` do when each chunk completes one sentence: each sentence
  alone, scored with the previous one as context (`StreamCore`), one engine call each, the last
  sentence and the whole answer (the final) in one call.
The work is the stage profile's (`q2_metric.progress`): model inputs (tokens through the models,
every role) and FLOPs, summed over the calls. Printed: per N, the batch's and the stream's totals and
their ratio, and the provisional sentences' share. The final of every stream is checked equal to
the batch result. The models are random-weight ones (`build_tiny_models`): the scores mean nothing,
the work is a real run's.
"""

from __future__ import annotations

import argparse
import csv
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_serve import cpu_name  # noqa: E402 (found through the sys.path line above)

ANNOTATED = ROOT / "data" / "q2_wow"
SAMPLE = ROOT / "q2_metric" / "data" / "wow_sample.csv"


def rows() -> list[dict]:
    splits = ("dodeca_inconsistent", "dodeca_consistent", "memnet_inconsistent", "memnet_consistent")
    files = [ANNOTATED / f"{s}.csv" for s in splits if (ANNOTATED / f"{s}.csv").exists()] or [SAMPLE]
    out: list[dict] = []
    for path in files:
        with open(path, newline="", encoding="utf-8") as f:
            out += [r for r in csv.DictReader(f) if r["response"].strip() and r["knowledge"].strip()]
    return out


def answers(n: int, count: int, table: list[dict]) -> list[tuple[str, str]]:
    """`count` answers of `n` sentences: the first sentence of `n` consecutive rows, knowledge joined."""
    from q2_metric.runtime.stream import SentenceSplitter

    def first(text: str) -> str:
        s = SentenceSplitter()
        done = s.feed(text.strip()) + s.end()
        a, b = done[0]
        out = text.strip()[a:b]
        return out if out[-1] in ".!?" else out + "."

    out = []
    for k in range(count):
        group = [table[(k * n + j) % len(table)] for j in range(n)]
        out.append((" ".join(first(r["response"]) for r in group), " ".join(r["knowledge"] for r in group)))
    return out


def add_stages(into: dict[str, int], outcome) -> None:
    """Tokens per stage of an engine call, added to `into`."""
    for p in outcome.profile:
        into[p.stage] = into.get(p.stage, 0) + sum(p.tokens.values())


def work(outcome) -> tuple[int, int]:
    """(tokens, FLOPs) of an engine call's stage profile, every role."""
    return (
        sum(sum(p.tokens.values()) for p in outcome.profile),
        sum(sum(p.flops.values()) for p in outcome.profile),
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--size", choices=("tiny", "paper"), default="tiny")
    parser.add_argument("--sentences", default="1,2,3,5,8", help="the N of the answers (comma-separated)")
    parser.add_argument("--answers", type=int, default=8, help="answers per N")
    parser.add_argument("--max-question-length", type=int, default=16)
    args = parser.parse_args(argv)

    from q2_metric import Q2Config, frontend
    from q2_metric.models.tiny_builder import build_tiny_models
    from q2_metric.runtime.engine import Engine
    from q2_metric.runtime.stream import StreamCore

    table = rows()
    sizes = [int(x) for x in args.sentences.split(",")]
    todo = {n: answers(n, args.answers, table) for n in sizes}
    texts = [t for pairs in todo.values() for p in pairs for t in p]
    models = build_tiny_models(tempfile.mkdtemp(prefix="q2-bench-stream-"), texts, size=args.size)
    config = Q2Config(
        qg_model=models["qg"],
        qa_model=models["qa"],
        nli_model=models["nli"],
        device="cpu",
        max_question_length=args.max_question_length,
    )
    engine = Engine(config)
    engine.scorer.load()
    print(
        f"CPU: {cpu_name()}, {os.cpu_count()} logical cores; {args.size} shapes (random weights), "
        f"{args.answers} answers per N from {len(table)} WoW rows, questions of at most "
        f"{args.max_question_length} tokens"
    )
    print(
        "| N sentences | batch tokens | stream tokens | ratio (tokens) | batch GFLOP | stream GFLOP | ratio (FLOPs) | sentences' share | finals equal |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    stages_batch: dict[str, int] = {}
    stages_stream: dict[str, int] = {}
    for n, pairs in todo.items():
        bt = bf = st = sf = pt = 0
        equal = 0
        for answer, knowledge in pairs:
            item = frontend.check_items([frontend.Item("the stream", answer, knowledge)])[0]
            batch = engine.score_checked([item])
            add_stages(stages_batch, batch)
            t, f = work(batch)
            bt, bf = bt + t, bf + f
            core = StreamCore(knowledge)
            sentences = core.take(answer)  # one chunk per sentence: each its own engine call
            last, whole = core.finish("")
            calls = [[i] for _, i in sentences] + [[i for _, i in last] + [whole]]
            for call in calls:
                out = engine.score_checked(call)
                add_stages(stages_stream, out)
                t, f = work(out)
                st, sf = st + t, sf + f
                if call[-1] is whole:
                    final = out.items[-1]
                    alone = engine.score_checked([whole])
                    pt += t - work(alone)[0]
                else:
                    pt += t
            equal += frontend.record_of(final, out.signature) == frontend.record_of(
                batch.items[0], batch.signature
            )
        print(
            f"| {n} | {bt:,} | {st:,} | {st / bt:.2f} | {bf / 1e9:.3f} | {sf / 1e9:.3f} | {sf / bf:.2f} "
            f"| {pt / st:.0%} | {equal}/{len(pairs)} |"
        )
    print("\nTokens per stage, every N together (which model inputs the sentences add):")
    print("| stage | batch | stream | ratio |")
    print("|---|---|---|---|")
    for stage, tokens in stages_batch.items():
        if tokens:
            print(
                f"| {stage} | {tokens:,} | {stages_stream.get(stage, 0):,} | {stages_stream.get(stage, 0) / tokens:.2f} |"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
