"""Load benchmark of `q2 serve`: a real async HTTP client (httpx) at several concurrencies against a
real server (`q2 serve`, a subprocess), beside `Q2Scorer` scoring the same items directly in the
same run; the batch invariance of the served results; memory under overload.

    python benchmarks/bench_serve.py                              # tiny shapes, 64 items, c = 1, 8, 64
    python benchmarks/bench_serve.py --size paper --n 16          # paper shapes (random weights)
    python benchmarks/bench_serve.py --overload-seconds 600       # memory through 10 minutes of overload

Figures:
- direct: `Q2Scorer.score` of the N items in ONE call (items/s), timed again just before each served
  run (a shared machine's speed drifts: each ratio is of two runs minutes apart at most);
- c=1 against the direct call: each item scored alone directly, then posted alone, in turn: the
  added milliseconds (p50, p95); and, exactly, each request's latency less the engine call it
  waited for (the server's Server-Timing header): what serving adds. Target: at most 5 ms;
- served at each concurrency C: C client tasks post one item per request until the N items are done:
  items/s and p50/p95/p99 latency; the server's engine calls (how many, how full, how busy: its
  /metrics) and the client's own CPU time, taken from the same cores as the server's. Target: at
  C=64 at least 90% of the direct batched items/s. With N > 64 the direct call of N items has
  bigger model batches than 64 clients can ever fill (one item each): the direct call in calls of
  64 items is printed beside it;
- batch invariance: each item's served result (score, q2_no_nli, spans with their questions), scored
  inside batches of the micro-batcher's choosing, against the same item scored ALONE directly;
- streaming: answers of k responses (--stream-sentences, default 3) streamed a sentence per chunk
  through the stream session at each concurrency, beside the same answers whole through /v1/score:
  per-check, per-sentence and per-final latency (p50, p99), answers/s, the streamed time over the
  whole answers' time (target <= 1.3) and the finals checked equal to /v1/score's entries;
- overload: a server with a small queue (--max-queue) under many more concurrent requests than it
  takes for --overload-seconds: its RSS sampled every second (start, peak, end), the answers' codes.

The models are random-weight ones of the chosen shapes (`build_tiny_models`; the paper's need the
Hub): the scores mean nothing, the work is a real run's (every question generated to the length
limit, every QA and NLI input). Client and server share the machine's cores.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_speed import load_pairs  # noqa: E402 (found through the sys.path line above)


def cpu_name() -> str:
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    import platform

    return platform.processor() or "unknown CPU"


def load_items(n: int) -> list[dict]:
    """`n` distinct items where the data allows (`bench_speed.load_pairs`: the annotated WoW set, then
    BEGIN; the bundled sample's 40 rows repeated where neither is here): repeated items would be
    de-duplicated by the engine and flatter the direct batch."""
    return [{"response": r, "knowledge": k} for r, k in load_pairs(n)]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def rss_mb(pid: int) -> float:
    status = Path(f"/proc/{pid}/status")
    if not status.exists():
        return float("nan")
    for line in status.read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def metrics(url: str) -> dict[str, float]:
    """The server's Prometheus figures (unlabelled samples: sums and counts)."""
    import httpx

    out = {}
    for line in httpx.get(url + "/metrics", timeout=30).text.splitlines():
        name, _, value = line.partition(" ")
        if line and not line.startswith("#") and "{" not in name:
            out[name] = float(value)
    return out


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q / 100 * len(ordered)) - 1))]


@contextlib.contextmanager
def server(flags: list[str], env: dict[str, str] | None = None):
    import httpx

    port = free_port()
    log = Path(tempfile.mkdtemp(prefix="q2-bench-serve-")) / "serve.log"
    with open(log, "w") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "q2_metric.cli", "serve", "--port", str(port), *flags],
            stdout=out,
            stderr=subprocess.STDOUT,
            env={**os.environ, "HF_HUB_OFFLINE": "1", **(env or {})},
        )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.time() + 900
        while True:
            if proc.poll() is not None:
                raise SystemExit(log.read_text())
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(url + "/ready", timeout=5).status_code == 200:
                    break
            if time.time() > deadline:
                raise SystemExit("the server did not get ready")
            time.sleep(0.2)
        yield url, proc
    finally:
        proc.terminate()
        proc.wait(120)


async def load(
    url: str, items: list[dict], concurrency: int
) -> tuple[float, list[float], list[dict], list[float]]:
    """(seconds, per-request latencies, results in item order, per-request latency less the engine
    call it waited for, from the server's Server-Timing header): `concurrency` tasks post one item
    each until every item is done."""
    import httpx

    results: list[dict] = [{} for _ in items]
    latencies: list[float] = []
    beyond: list[float] = []
    todo = iter(range(len(items)))
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    async with httpx.AsyncClient(timeout=600, limits=limits) as client:

        async def worker() -> None:
            for i in todo:
                start = time.perf_counter()
                reply = await client.post(url + "/v1/score", json=items[i])
                latencies.append(time.perf_counter() - start)
                reply.raise_for_status()
                engine = reply.headers["server-timing"].split(",")[0].split("dur=")[1]
                beyond.append(latencies[-1] - float(engine) / 1000)
                results[i] = reply.json()["results"][0]

        start = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(concurrency)))
        return time.perf_counter() - start, latencies, results, beyond


async def stream_load(
    url: str, answers: list[dict], concurrency: int
) -> tuple[float, list[float], list[float], list[dict]]:
    """(seconds, per-sentence latencies, per-final latencies, finals in answer order): `concurrency`
    tasks each stream one answer at a time through `q2 serve`'s stream session, a sentence per chunk
    (`POST /v1/score/stream`, then one chunk per sentence, then `/end`). A sentence's latency is that
    of the chunk that completed it (the next sentence's chunk, or the end), the final's that of `/end`."""
    import httpx

    from q2_metric.runtime.stream import SentenceSplitter

    finals: list[dict] = [{} for _ in answers]
    per_sentence: list[float] = []
    per_final: list[float] = []
    todo = iter(range(len(answers)))
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    async with httpx.AsyncClient(timeout=600, limits=limits) as client:

        async def post(path: str, body: dict) -> tuple[dict, float]:
            start = time.perf_counter()
            reply = await client.post(url + path, json=body)
            reply.raise_for_status()
            return reply.json(), time.perf_counter() - start

        async def worker() -> None:
            for i in todo:
                text = answers[i]["response"]
                splitter = SentenceSplitter()
                ranges = splitter.feed(text) + splitter.end()
                starts = [0] + [a for a, _ in ranges[1:]]  # chunk k completes sentence k - 1
                chunks = [text[a:b] for a, b in zip(starts, [*starts[1:], len(text)])]
                opened, _ = await post("/v1/score/stream", {"knowledge": answers[i]["knowledge"]})
                path = f"/v1/score/stream/{opened['stream']}"
                for chunk in chunks[:-1]:
                    reply, seconds = await post(path, {"text": chunk})
                    per_sentence.extend([seconds] * len(reply["sentences"]))
                reply, seconds = await post(path + "/end", {"text": chunks[-1]})
                per_sentence.extend([seconds] * len(reply["sentences"]))
                per_final.append(seconds)
                finals[i] = reply["final"]

        start = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(concurrency)))
        return time.perf_counter() - start, per_sentence, per_final, finals


async def paired(url: str, items: list[dict], scorer) -> list[tuple[float, float]]:
    """(direct ms, served ms) of each item alone: `Q2Scorer` on it, then one request of it."""
    import httpx

    out = []
    async with httpx.AsyncClient(timeout=600) as client:
        for item in items:
            await asyncio.sleep(0.05)  # neither finds the other's kernel threads still spinning
            start = time.perf_counter()
            scorer.score([item["response"]], [item["knowledge"]])
            direct = time.perf_counter() - start
            await asyncio.sleep(0.05)
            start = time.perf_counter()
            (await client.post(url + "/v1/score", json=item)).raise_for_status()
            out.append((1000 * direct, 1000 * (time.perf_counter() - start)))
    return out


def served_view(entry: dict) -> tuple:
    return (
        entry["status"],
        entry["score"],
        entry["q2_no_nli"],
        [
            (s["start"], s["end"], s["text"], s["question"], s["supported"], s["score"])
            for s in entry["spans"]
        ],
    )


def direct_view(res) -> tuple:
    import math

    def num(x):
        return None if x is None or math.isnan(x) else float(x)

    status = "scored" if res.scored else "empty"
    return (
        status,
        num(res.q2),
        num(res.q2_no_nli) if res.scored else None,
        [(s.start, s.end, s.text, s.question, s.supported, num(s.score)) for s in res.spans],
    )


async def overload(url: str, items: list[dict], concurrency: int, seconds: float, pid: int) -> dict:
    import httpx

    codes: dict[int | str, int] = {}
    samples: list[float] = [rss_mb(pid)]
    stop = time.time() + seconds
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    async with httpx.AsyncClient(timeout=600, limits=limits) as client:

        async def worker(k: int) -> None:
            n = k
            while time.time() < stop:
                try:
                    reply = await client.post(url + "/v1/score", json=items[n % len(items)])
                    code: int | str = reply.status_code
                except httpx.TransportError as err:  # e.g. a keep-alive connection the server closed
                    code = type(err).__name__
                codes[code] = codes.get(code, 0) + 1
                n += concurrency
                if code != 200:
                    await asyncio.sleep(0.01)

        async def sampler() -> None:
            while time.time() < stop:
                await asyncio.sleep(1)
                samples.append(rss_mb(pid))

        await asyncio.gather(sampler(), *(worker(k) for k in range(concurrency)))
    samples.append(rss_mb(pid))
    return {"codes": codes, "rss": samples}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--size", choices=("tiny", "paper"), default="tiny")
    parser.add_argument("--n", type=int, default=64, help="items (default 64)")
    parser.add_argument("--concurrency", default="1,8,64")
    parser.add_argument("--max-question-length", type=int, default=16)
    parser.add_argument(
        "--stream-sentences",
        type=int,
        default=3,
        help="the streaming check's answers: this many responses joined (default 3; 0: no streaming run)",
    )
    parser.add_argument("--overload-seconds", type=float, default=10, help="0: no overload run")
    parser.add_argument("--overload-concurrency", type=int, default=256)
    parser.add_argument(
        "--max-wait", type=float, default=None, help="the server's --max-wait (default: its own)"
    )
    parser.add_argument(
        "--server-env",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="an environment variable of the server only (e.g. OMP_WAIT_POLICY=PASSIVE); repeatable",
    )
    args = parser.parse_args(argv)

    from q2_metric import Q2Config, Q2Scorer
    from q2_metric.models.tiny_builder import build_tiny_models

    items = load_items(args.n)
    folder = tempfile.mkdtemp(prefix="q2-bench-serve-")
    texts = [t for i in items for t in (i["response"], i["knowledge"])]
    models = build_tiny_models(folder, texts, size=args.size)
    options = dict(
        qg_model=models["qg"],
        qa_model=models["qa"],
        nli_model=models["nli"],
        device="cpu",
        max_question_length=args.max_question_length,
    )
    flags = [f"--{k.replace('_', '-')}={v}" for k, v in options.items()]
    print(
        f"CPU: {cpu_name()}, {os.cpu_count()} logical cores; {args.size} shapes (random weights), "
        f"{args.n} items of the annotated WoW set, questions of at most {args.max_question_length} tokens"
    )

    scorer = Q2Scorer(Q2Config(**options)).load()
    responses, knowledge = [i["response"] for i in items], [i["knowledge"] for i in items]
    scorer.score(responses[:1], knowledge[:1])  # warm-up

    def direct(size: int | None = None) -> tuple[float, list]:
        """Seconds of direct calls of `size` items (default: one call of every item), and the results."""
        step, start, out = size or args.n, time.perf_counter(), []
        for at in range(0, args.n, step):
            out += scorer.score(responses[at : at + step], knowledge[at : at + step]).responses
        return time.perf_counter() - start, out

    direct_s, batched = direct()
    alone = [direct_view(scorer.score([r], [k]).responses[0]) for r, k in zip(responses, knowledge)]
    print(f"direct Q2Scorer: one call of {args.n}: {direct_s:.2f} s, {args.n / direct_s:.3g} items/s")
    same_direct = sum(direct_view(r) == a for r, a in zip(batched, alone))
    print(
        f"batch invariance (direct): {same_direct}/{args.n} items identical in the batch of {args.n} and alone"
    )

    levels = [int(x) for x in args.concurrency.split(",") if x.strip()]
    flags_run = [*flags, "--max-batch", str(max(64, args.n)), "--max-queue", str(10 * args.n)]
    if args.max_wait is not None:
        flags_run += ["--max-wait", str(args.max_wait)]
    # the machine's speed drifts (shared hosts): each served run is paired with a direct one just before
    server_env = dict(e.split("=", 1) for e in args.server_env)
    with server(flags_run, server_env) if levels else contextlib.nullcontext((None, None)) as (url, _proc):
        if levels:
            asyncio.run(load(url, items[:2], 1))  # warm the connection
        for c in levels:
            if c == 1:
                pairs = asyncio.run(paired(url, items, scorer))
                added = [s - d for d, s in pairs]
                print(
                    f"c=1, each item alone, direct then served: direct p50 {statistics.median(d for d, _ in pairs):.1f} ms, "
                    f"served p50 {statistics.median(s for _, s in pairs):.1f} ms; added p50 {statistics.median(added):+.1f} ms, "
                    f"p95 {pct(added, 95):+.1f} ms; target <= 5 ms added: "
                    f"{'met' if statistics.median(added) <= 5 else 'NOT met'}"
                )
            direct_s, _ = direct()
            before, cpu = metrics(url), time.process_time()
            secs, lat, results, beyond = asyncio.run(load(url, items, c))
            cpu, after = time.process_time() - cpu, metrics(url)
            ratio = direct_s / secs
            same = sum(served_view(r) == a for r, a in zip(results, alone))
            ms = [1000 * x for x in lat]
            calls = after["q2_serve_engine_seconds_count"] - before["q2_serve_engine_seconds_count"]
            engine = after["q2_serve_engine_seconds_sum"] - before["q2_serve_engine_seconds_sum"]
            print(
                f"served c={c:3d}: {args.n / secs:7.3g} items/s ({100 * ratio:5.1f}% of the direct call of {args.n} just "
                f"before: {args.n / direct_s:.3g} items/s); latency p50 {pct(ms, 50):8.1f} ms, p95 {pct(ms, 95):8.1f} ms, "
                f"p99 {pct(ms, 99):8.1f} ms; identical to alone: {same}/{args.n}\n"
                f"    {calls:.0f} engine calls of {args.n / max(calls, 1):.1f} items on average, busy {100 * engine / secs:.0f}% "
                f"of the run ({args.n / engine:.3g} items/s while busy); the client's own CPU: "
                f"{1000 * cpu / args.n:.1f} ms per item ({100 * cpu / secs / (os.cpu_count() or 1):.0f}% of the cores)"
            )
            extra = [1000 * x for x in beyond]
            print(
                f"    latency less the engine call each request waited for (Server-Timing): p50 {pct(extra, 50):.1f} ms, "
                f"p95 {pct(extra, 95):.1f} ms"
                + (
                    f"; target c=1 <= 5 ms added: {'met' if pct(extra, 50) <= 5 else 'NOT met'}"
                    if c == 1
                    else ""
                )
            )
            if (
                c == 64 and args.n > 64
            ):  # c clients send at most c items at once: no engine call can hold more
                chunked_s, _ = direct(64)
                print(
                    f"    direct in calls of 64 items (the most {c} clients can have in flight): {args.n / chunked_s:.3g} items/s; "
                    f"served: {100 * chunked_s / secs:.1f}% of it"
                )
            if c == 64:
                print(f"target c=64 >= 90% of direct batched: {'met' if ratio >= 0.9 else 'NOT met'}")

        if levels and args.stream_sentences > 0:
            k = (
                args.stream_sentences
            )  # answers of k sentences: k consecutive responses, their knowledge joined
            answers = [
                {
                    "response": " ".join(i["response"].strip() for i in items[a : a + k]),
                    "knowledge": " ".join(i["knowledge"].strip() for i in items[a : a + k]),
                }
                for a in range(0, len(items) - k + 1, k)
            ]
            print(
                f"streaming check: {len(answers)} answers of {k} responses each (their knowledge joined), a "
                "sentence per chunk; the same answers whole through /v1/score at the same concurrency"
            )
            for c in levels:
                whole_s, lat, whole, _ = asyncio.run(load(url, answers, c))
                before = metrics(url)
                secs, sent, fin, finals = asyncio.run(stream_load(url, answers, c))
                after = metrics(url)
                sentences = (
                    after["q2_serve_stream_sentences_total"] - before["q2_serve_stream_sentences_total"]
                )
                same = sum(f == w for f, w in zip(finals, whole))
                ms, sms, fms = ([1000 * x for x in v] for v in (lat, sent, fin))
                print(
                    f"stream c={c:3d}: per check (whole answer, /v1/score) p50 {pct(ms, 50):8.1f} ms, p99 {pct(ms, 99):8.1f} ms, "
                    f"{len(answers) / whole_s:.3g} answers/s; streamed: per sentence p50 {pct(sms, 50):8.1f} ms, "
                    f"p99 {pct(sms, 99):8.1f} ms, final p50 {pct(fms, 50):8.1f} ms, p99 {pct(fms, 99):8.1f} ms, "
                    f"{len(answers) / secs:.3g} answers/s\n"
                    f"    streamed time / whole time: {secs / whole_s:.2f} (target <= 1.3); {sentences:.0f} sentences "
                    f"scored; finals equal to /v1/score's entry: {same}/{len(answers)}"
                )

    if args.overload_seconds > 0:
        with server([*flags, "--max-queue", "32", "--max-batch", "32"], server_env) as (url, proc):
            out = asyncio.run(
                overload(url, items, args.overload_concurrency, args.overload_seconds, proc.pid)
            )
            alive = proc.poll() is None
        rss = out["rss"]
        print(
            f"overload ({args.overload_concurrency} concurrent clients, queue of 32 items, {args.overload_seconds:g} s): "
            f"codes {dict(sorted(out['codes'].items(), key=str))}; server alive at the end: {alive}; server RSS start {rss[0]:.0f} MB, "
            f"peak {max(rss):.0f} MB, end {rss[-1]:.0f} MB ({len(rss)} samples)"
        )
        step = max(1, len(rss) // 10)
        print("server RSS (MB) through the run: " + ", ".join(f"{x:.0f}" for x in rss[::step]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
