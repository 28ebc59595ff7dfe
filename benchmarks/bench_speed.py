"""Speed benchmark: the batched engine against a faithful emulation of the released code's loop.

    python benchmarks/bench_speed.py --size paper --n 16 --reference-n 8   # paper shapes, CPU
    python benchmarks/bench_speed.py --n 6 --size tiny                     # CI-sized
    python benchmarks/bench_speed.py --device cuda --n 600                 # a GPU
    python benchmarks/bench_speed.py --size paper --n 16 --reference-n 8 --precisions float32,bfloat16,int8
    python benchmarks/bench_speed.py --size paper --growth 16,64,256       # engine seconds and peak RSS

`--precisions` runs the engine again in each fast mode (bfloat16: every model; int8: the QA and NLI
encoders quantized) on the same models, responses and scripted decisions, and prints each mode's
speed-up over the float32 engine and over the released loop, its fraction of the peak of the
precision it runs in, and the agreement of the random models' own decisions (generated questions,
QA answers, NLI labels) with the float32 run's. `--growth` runs the engine alone at each size, each
in a fresh process (so that peak RSS is that size's), and prints seconds and peak RSS.

Both runs use the same models on the same responses (the annotated WoW set):
- reference: the released code's loop (`q2_metric.testing.reference_loop`), one example per model call:
  per candidate occurrence generate (cross-attention keys and values per beam, as 3.2 made them);
  per question in rank order until the first valid one the personal check, QA on the response, QA
  on the knowledge; span NLI one pair at a time; the fallback one response at a time. Its QA
  call is the released `get_answer`'s: one `encode_plus` and one forward pass, on the model as
  `from_pretrained` builds it, with autograd left on, as the released code has no `no_grad`
  (`--reference-no-grad` runs it in inference mode, a faster baseline than the released code);
- engine: `Q2Scorer.score`, batched.
With the paper's weights available they are used as they are. Without them (this workplace),
random-weight models of the chosen shapes do every forward pass and generation step that the
decisions call for (questions are generated to the scripted question's token length with
`min_new_tokens`/`max_new_tokens`), while the decisions themselves (question text, answers, NLI
labels) come from deterministic scripted components, so validity and no-answer rates resemble a
real run instead of random weights' "every question invalid".
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import json
import platform
import resource
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import torch

from q2_metric import ModelNotAvailable, Q2Config, Q2Error, Q2Scorer
from q2_metric.components import NO_ANSWER, Answer
from q2_metric.models.hf_nli import HFNLIClassifier
from q2_metric.models.hf_qa import HFQuestionAnswerer
from q2_metric.models.hf_qg import HFQuestionGenerator, qg_input
from q2_metric.models.loading import uses_segment_ids
from q2_metric.models.speed.cpu_matmul import uses_onednn
from q2_metric.models.speed.flops import FlopMeter, matmul_peak
from q2_metric.models.tiny_builder import build_tiny_models
from q2_metric.progress import format_profile
from q2_metric.testing.reference_loop import reference_q2

ROOT = Path(__file__).resolve().parents[1]
ANNOTATED = ROOT / "data" / "q2_wow"  # data/README.md: the published sets the repository holds
SAMPLE = ROOT / "q2_metric" / "data" / "wow_sample.csv"
SPLITS = ("dodeca_inconsistent", "dodeca_consistent", "memnet_inconsistent", "memnet_consistent")
BEGIN_DIR = ROOT / "data" / "begin"  # the files missing here (q2 data fetch begin) are left out
BEGIN = (  # (file, its knowledge column)
    ("v1/dev_05_24_21.tsv", "evidence"),
    ("v1/test_05_24_21.tsv", "evidence"),
    ("wow/begin_dev_wow.tsv", "knowledge"),
    ("wow/begin_test_wow.tsv", "knowledge"),
    ("topicalchat/begin_dev_tc.tsv", "knowledge"),
    ("cmu-dog/begin_dev_cmu.tsv", "knowledge"),
)


def load_pairs(n: int) -> list[tuple[str, str]]:
    """The first `n` (response, knowledge) pairs: the annotated WoW set's 600 rows, then BEGIN's
    (about 11,000 more distinct pairs, for growth beyond 600), repeated past their end."""
    files = [ANNOTATED / f"{s}.csv" for s in SPLITS if (ANNOTATED / f"{s}.csv").exists()] or [SAMPLE]
    pairs = []
    for path in files:
        with open(path, newline="", encoding="utf-8") as f:
            pairs += [(r["response"], r["knowledge"]) for r in csv.DictReader(f)]
    for name, knowledge in BEGIN if n > len(pairs) else ():
        if (BEGIN_DIR / name).exists():
            with open(BEGIN_DIR / name, newline="", encoding="utf-8") as f:
                rows = csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE)
                pairs += [
                    (r["response"], r[knowledge])
                    for r in rows
                    if r["response"].strip() and r[knowledge].strip()
                ]
    return [pairs[i % len(pairs)] for i in range(n)]


def model_texts(pairs: list[tuple[str, str]]) -> list[str]:
    """What the random models' vocabulary is made of (`build_tiny_models`, one token per word):
    the responses and knowledge, QG's prompt and the scripted questions' words, so that the
    benchmark's models read whole words as trained tokenizers mostly do, not spelled-out letters."""
    return [t for p in pairs for t in p] + [qg_input("", ""), *Decisions.TEMPLATES]


def pick(n: int, *parts: str) -> int:
    return int(hashlib.md5("\x1f".join(parts).encode()).hexdigest(), 16) % n


class Decisions:
    """Deterministic decisions with a real run's mix: about 60% of questions asked of the response
    come back with the candidate; of valid questions, about 45% answered identically from the
    knowledge, 25% partly (NLI decides), 15% not at all; about 1 question in 12 is personal."""

    TEMPLATES = (
        "what is the name of the {a} mentioned here?",
        "which {a} is being talked about?",
        "what do you know about {a}?",
        "who or what is {a} in this context?",
        "what is {a} known for according to the text?",
    )

    def __init__(self, responses: set[str]) -> None:
        self.responses, self.candidate_of = responses, {}

    def questions(self, answer: str, context: str, k: int) -> list[str]:
        start = pick(5, answer, context)
        out = [self.TEMPLATES[(start + i) % 5].format(a=answer) for i in range(k)]
        self.candidate_of.update((q, answer) for q in out)
        return out

    def answer(self, question: str, context: str) -> Answer:
        cand, h = self.candidate_of.get(question, ""), pick(100, question, context)
        other = (
            context.split()[pick(max(1, len(context.split())), context, question)] if context.split() else "x"
        )
        if context in self.responses:
            return Answer(cand) if h < 60 else Answer(other) if h < 90 else NO_ANSWER
        if h < 45:
            return Answer(cand)
        if h < 70:
            return Answer(f"{cand.split()[0]} {other}")
        return NO_ANSWER if h < 85 else Answer(other)

    def label(self, premise: str, hypothesis: str) -> str:
        return ("entailment", "neutral", "contradiction")[pick(3, premise, hypothesis)]


class WorkingQG(HFQuestionGenerator):
    """The real generator runs beam search to the scripted question's length; the text is scripted."""

    def __init__(self, config: Q2Config, decisions: Decisions) -> None:
        super().__init__(config)
        self.decisions = decisions
        self.model_decisions: list = []  # the random model's own questions, for the precision comparison

    def generate(self, answers, contexts, new_tokens=None):
        k = self.config.questions_per_candidate
        out = [self.decisions.questions(a, c, k) for a, c in zip(answers, contexts)]
        # each batch generates its longest scripted question's number of tokens (`new_tokens`)
        # (one tokenizer call for all of them: the script's own cost stays out of the engine's time)
        flat = [q for qs in out for q in qs]
        sizes = iter([len(ids) for ids in self.tokenizer(flat)["input_ids"]] if flat else [])
        scripted = [max(next(sizes) for _ in qs) for qs in out]
        lengths = scripted if new_tokens is None else list(new_tokens)
        self.model_decisions.extend(map(tuple, super().generate(answers, contexts, new_tokens=lengths)))
        return out


class WorkingQA(HFQuestionAnswerer):
    def __init__(self, config: Q2Config, decisions: Decisions) -> None:
        super().__init__(config)
        self.decisions = decisions
        self.model_decisions: list = []

    def answer(self, questions, contexts):
        # every forward pass and window of a real run; the model's own answers kept for comparison
        self.model_decisions.extend(super().answer(questions, contexts))
        return [self.decisions.answer(q, c) for q, c in zip(questions, contexts)]


class ReleasedQA:
    """The reference loop's QA call as the released code makes it (`get_answer` in its
    `question_answering.py`): one `encode_plus` of (question, text) with no truncation and one
    forward pass with autograd left on (the released code has no `no_grad`), then the scripted
    decision. `grad=False` runs it in inference mode instead, a faster baseline than the released code."""

    def __init__(self, qa: WorkingQA, grad: bool = True) -> None:
        from transformers import AutoModelForQuestionAnswering
        from transformers.utils import logging as hf_logging

        self.qa, self.grad = qa, grad
        # a second copy of the weights on purpose: the model as the released code loads it (plain
        # from_pretrained, none of the engine's kernel choices)
        hf_logging.disable_progress_bar()
        self.model = (
            AutoModelForQuestionAnswering.from_pretrained(qa.model_id, dtype=qa.model.dtype)
            .to(qa.device)
            .eval()
        )

    def answer(self, questions, contexts):
        qa = self.qa
        for question, text in zip(questions, contexts):
            inputs = qa.tokenizer(
                question,
                text,
                add_special_tokens=True,
                return_tensors="pt",
                return_token_type_ids=uses_segment_ids(self.model),
            ).to(qa.device)
            qa.tokens_processed += int(inputs["input_ids"].numel())
            with torch.enable_grad() if self.grad else torch.inference_mode():
                start, end = self.model(**inputs, return_dict=False)
            torch.argmax(start), torch.argmax(end)  # the released decoding's work; the answer is scripted
        return [qa.decisions.answer(q, c) for q, c in zip(questions, contexts)]

    def __getattr__(self, name):
        return getattr(self.qa, name)


class WorkingNLI(HFNLIClassifier):
    def __init__(self, config: Q2Config, decisions: Decisions) -> None:
        super().__init__(config)
        self.decisions = decisions
        self.model_decisions: list = []

    def classify(self, premises, hypotheses):
        self.model_decisions.extend(super().classify(premises, hypotheses))
        return [self.decisions.label(p, h) for p, h in zip(premises, hypotheses)]


class Counted:
    """Counts calls and examples of one component method; QA calls split by response/knowledge."""

    def __init__(self, component, method: str, responses: set[str] | None = None) -> None:
        self.component, self.method, self.responses = component, method, responses
        self.counts: Counter = Counter()

    def __getattr__(self, name):
        fn = getattr(self.component, name)
        if name != self.method:
            return fn

        def counted(first, second=None):
            side = ""
            if self.responses is not None:
                side = "response " if second and second[0] in self.responses else "knowledge "
            self.counts[side + "calls"] += 1
            self.counts[side + "examples"] += len(first)
            return fn(first) if second is None else fn(first, second)

        return counted


def peak_memory(device: torch.device) -> str:
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    gpu = f", {torch.cuda.max_memory_allocated() / 2**20:,.0f} MB GPU" if device.type == "cuda" else ""
    return f"{rss:,.0f} MB RSS{gpu}"


def measure_peaks(device: torch.device, model_dtype: torch.dtype) -> dict[str, float]:
    """FLOP/s of a large torch.mm on this device with the current threads: float32, and bfloat16
    where the hardware has it (a CPU with AVX-512 BF16/AMX, any recent GPU), and the models' dtype;
    on a CPU also oneDNN's float32 product (`float32 oneDNN`), which `cpu_matmul` may choose."""
    n = 2048 if device.type == "cpu" else 8192
    peaks = {"float32": matmul_peak(torch.float32, n=n, device=device)}
    if device.type == "cpu" and torch.backends.mkldnn.is_available():
        peaks["float32 oneDNN"] = matmul_peak(torch.float32, n=n, device=device, onednn=True)
    has_bf16 = (
        torch.cuda.is_bf16_supported()
        if device.type == "cuda"
        else torch.ops.mkldnn._is_mkldnn_bf16_supported()
    )
    wanted = {torch.bfloat16} if has_bf16 else set()
    wanted.add(model_dtype)
    for dtype in sorted(wanted - {torch.float32}, key=str):
        peaks[str(dtype).replace("torch.", "")] = matmul_peak(dtype, n=n, device=device)
    return peaks


# engine stages by the model that does their work
STAGE_MODEL = {
    "questions": "qg",
    "question filter": "qa",
    "knowledge answers": "qa",
    "span scores": "nli",
    "response scores": "nli",
}


def efficiency_report(profile, peak: float, peak_name: str, role_peaks: dict | None = None) -> list[str]:
    """Per model: seconds, share of them inside forward passes, model FLOPs, achieved FLOP/s and
    its fraction of the measured matrix-product peak (over the stage time and over model time);
    `role_peaks` (role -> (peak, name)) gives a model another precision's peak (int8 encoders)."""
    lines = [
        f"{'model':<6}{'seconds':>9}{'in model':>10}{'calls':>7}{'tokens':>10}{'GFLOP':>10}"
        f"{'GFLOP/s':>9}{'of peak':>9}{'in model':>10}   ({peak_name} peak {peak / 1e9:.1f} GFLOP/s"
        + "".join(f"; {r}: {n} peak {p / 1e9:.1f}" for r, (p, n) in (role_peaks or {}).items())
        + ")"
    ]
    base_peak = peak
    for role in ("qg", "qa", "nli"):
        peak = (role_peaks or {}).get(role, (base_peak, peak_name))[0]
        stages = [p for p in profile if STAGE_MODEL.get(p.stage) == role and role in p.flops]
        if not stages:
            continue
        secs = sum(p.seconds for p in stages)
        model = sum(p.model_seconds[role] for p in stages)
        flops = sum(p.flops[role] for p in stages)
        calls, tokens = sum(p.calls[role] for p in stages), sum(p.tokens[role] for p in stages)
        lines.append(
            f"{role:<6}{secs:>9.2f}{model / secs:>10.0%}{calls:>7}{tokens:>10,}{flops / 1e9:>10.1f}"
            f"{flops / secs / 1e9:>9.1f}{flops / secs / peak:>9.1%}{flops / max(model, 1e-9) / peak:>10.1%}"
        )
    return lines


def cpu_name() -> str:
    """The CPU's model name (/proc/cpuinfo), or the platform's processor string."""
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "cpu"


def role_peak_fraction(profile, role: str, peak: float) -> float | None:
    """One model's FLOP/s over its stages' wall time, as a fraction of `peak` (None: no FLOPs)."""
    stages = [p for p in profile if STAGE_MODEL.get(p.stage) == role and role in p.flops]
    secs = sum(p.seconds for p in stages)
    return sum(p.flops[role] for p in stages) / secs / peak if stages and secs > 0 else None


# A GPU does far more per call than a CPU's 16 to 32 inputs: bigger batches and token budgets
# (runtime options: they change float rounding at most, never the rules).
GPU_RUNTIME = dict(
    qg_batch_size=128,
    qa_batch_size=256,
    nli_batch_size=256,
    qg_max_tokens=262144,
    qa_max_tokens=131072,
    nli_max_tokens=131072,
)


def runtime_options(args) -> dict:
    """Batch sizes, token budgets and QA packing: the config's defaults, GPU-sized on CUDA, or the flags."""
    from q2_metric.models.loading import resolve_device

    out = dict(GPU_RUNTIME) if resolve_device(args.device).type == "cuda" else {}
    if args.batch_size:
        out.update(
            qg_batch_size=args.batch_size, qa_batch_size=args.batch_size, nli_batch_size=args.batch_size
        )
    if args.max_tokens:
        out.update(
            qg_max_tokens=args.max_tokens, qa_max_tokens=args.max_tokens, nli_max_tokens=args.max_tokens
        )
    if args.qa_packing:
        out["qa_packing"] = args.qa_packing
    if args.cpu_matmul:
        out["cpu_matmul"] = args.cpu_matmul
    return out


_RANDOM: dict = {}  # the random models' folders, built once per process


def build(args, responses: list[str], knowledge: list[str], **mode):
    """(parser, qg, qa, nli, description): the paper's models, or working random ones; `mode`
    (dtype, quantize) overrides the flags' precision."""
    base = dict(device=args.device, dtype=args.dtype, **runtime_options(args))
    base.update(mode)
    try:
        scorer = Q2Scorer(Q2Config(**base)).load()
        return scorer.config, scorer.parser, scorer.qg, scorer.qa, scorer.nli, "the paper's pretrained models"
    except ModelNotAvailable:
        pass
    if not _RANDOM and getattr(args, "random_models", None):  # --growth's children: the parent's models
        _RANDOM.update({role: str(Path(args.random_models) / role) for role in ("qg", "qa", "nli")})
    if not _RANDOM:
        _RANDOM.update(
            build_tiny_models(
                tempfile.mkdtemp(prefix="q2-bench-"),
                model_texts(list(zip(responses, knowledge))),
                size=args.size,
            )
        )
    paths = _RANDOM
    config = Q2Config(qg_model=paths["qg"], qa_model=paths["qa"], nli_model=paths["nli"], **base)
    decisions = Decisions(set(responses))
    scorer = Q2Scorer(config)
    shapes = "(T5-base, ALBERT-xlarge, RoBERTa-large)" if args.size == "paper" else "(tiny)"
    return (
        config,
        scorer.parser,
        WorkingQG(config, decisions),
        WorkingQA(config, decisions),
        WorkingNLI(config, decisions),
        f"random-weight models of the {args.size} shapes {shapes} doing the work of scripted decisions",
    )


# the fast modes of `--precisions`: name -> Q2Config options
MODES = {
    "float32": dict(dtype="float32"),
    "bfloat16": dict(dtype="bfloat16"),
    "int8": dict(dtype="float32", quantize="int8"),
}
# each mode again with beam search by the opt-in fast path (`qg_decoder`), beside the default's (the
# reference path)
MODES.update({f"{name}-fast": dict(options, qg_decoder="fast") for name, options in list(MODES.items())})


def int8_peak(n: int = 2048, seconds: float = 1.0) -> float:
    """Measured "FLOP/s" (2 per multiply-add) of a large dynamically quantized int8 Linear layer
    (the kernel of `quantize='int8'`), activations quantized on the fly as in the engine."""
    import warnings

    from torch.ao.nn.quantized.dynamic import Linear as QLinear

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        layer = QLinear(n, n, bias_=False, dtype=torch.qint8)
        layer.set_weight_bias(
            torch.quantize_per_channel(
                torch.randn(n, n), torch.full((n,), 0.02), torch.zeros(n, dtype=torch.long), 0, torch.qint8
            ),
            None,
        )
    x = torch.randn(n, n)
    layer(x)
    best, spent = float("inf"), 0.0
    while spent < seconds:
        t0 = time.perf_counter()
        layer(x)
        dt = time.perf_counter() - t0
        best, spent = min(best, dt), spent + dt
    return 2 * n**3 / best


def agreement(first: list, second: list) -> str:
    """How many of the model's own decisions of one run equal the other's, e.g. `98.5% (197/200)`."""
    same = sum(a == b for a, b in zip(first, second))
    total = max(len(first), len(second))
    return f"{same / total:.1%} ({same}/{total})" if total else "n/a"


def warm_up_size(device: torch.device) -> int:
    """Responses of the untimed run before each timed engine run. On a GPU a batch's shapes meet
    their kernels (cuBLAS heuristics, allocator growth) for the first time: 32 responses meet most of
    them. On a CPU one response loads the kernels; more would cost minutes at paper shapes."""
    return 32 if device.type == "cuda" else 1


def run_engine(config, parser, qg, qa, nli, responses, knowledge):
    """The engine once: (result, seconds)."""
    engine = Q2Scorer(config, parser=parser, qg=qg, qa=qa, nli=nli)
    t0 = time.perf_counter()
    result = engine.score(responses, knowledge)
    return result, time.perf_counter() - t0


def profile_engine(prefix: str, config, parser, qg, qa, nli, responses, knowledge) -> int:
    """The engine once, after its warm-up, under cProfile and torch's profiler: the stages, the
    Python functions that took the most time (a call that waits for the GPU shows the wait as its
    own time) and torch's operators by host time, in PREFIX.txt; the cProfile data in PREFIX.prof."""
    import cProfile
    import io
    import pstats

    from torch.profiler import ProfilerActivity, profile

    if qa.device.type == "cuda":
        warm = warm_up_size(qa.device)
        run_engine(config, parser, qg, qa, nli, responses[:warm], knowledge[:warm])
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if qa.device.type == "cuda" else [])
    python = cProfile.Profile()
    with profile(activities=activities) as ops:
        result, seconds = python.runcall(run_engine, config, parser, qg, qa, nli, responses, knowledge)
    python.dump_stats(f"{prefix}.prof")
    text = io.StringIO()
    stats = pstats.Stats(python, stream=text)
    stats.sort_stats("tottime").print_stats(35)
    stats.sort_stats("cumulative").print_stats("q2_metric", 45)
    by = "self_cuda_time_total" if qa.device.type == "cuda" else "self_cpu_time_total"
    report = [
        f"engine seconds (profiled): {seconds:.3f}; digest {digest(result)}",
        format_profile(result.profile),
        "torch operators by their own host time:",
        ops.key_averages().table(sort_by="self_cpu_time_total", row_limit=30),
        f"torch operators by {by}:",
        ops.key_averages().table(sort_by=by, row_limit=20),
        text.getvalue(),
    ]
    Path(f"{prefix}.txt").write_text("\n".join(report))
    print("\n".join(report[:2]))
    return 0


def digest(result) -> str:
    scores = [(r.q2, r.q2_no_nli) for r in result.responses]
    return hashlib.sha256(repr(scores).encode()).hexdigest()[:16]


def compare_precisions(
    args, names, responses, knowledge, fp32, rate_ref: float, peaks: dict, figures: dict | None = None
) -> list[str]:
    """Each fast mode's engine run against the float32 one (`fp32`: result, seconds, components);
    `figures` (mode -> responses/s, fraction of peak, same scores) is filled when given."""
    result32, t32, comps32 = fp32
    rate32 = len(responses) / t32
    lines = [
        "",
        "Precisions (the same models, responses and scripted decisions; speed-ups over this run's "
        "float32 engine and the released loop):",
        f"{'mode':<14}{'seconds':>9}{'resp/s':>9}{'vs fp32':>9}{'vs loop':>9}{'of peak':>9}  "
        f"{'same scores':<12}questions / QA answers / NLI labels equal to float32's",
    ]
    for name in names:
        if name == "float32":
            result, seconds, comps = result32, t32, comps32
        else:
            try:
                config, parser, qg, qa, nli, _ = build(args, responses, knowledge, **MODES[name])
            except Q2Error as err:  # bfloat16 on a CPU without it, int8 on a GPU: one line, the others run
                lines.append(f"{name:<14}skipped: {err}")
                continue
            comps = (qg, qa, nli)
            warm = warm_up_size(qa.device)
            run_engine(config, parser, qg, qa, nli, responses[:warm], knowledge[:warm])
            for comp in comps:
                if hasattr(comp, "model_decisions"):
                    comp.model_decisions.clear()
            result, seconds = run_engine(config, parser, qg, qa, nli, responses, knowledge)
        dtype = "bfloat16" if name.startswith("bfloat16") else "float32"
        peak = max(v for k, v in peaks.items() if k.split()[0] == dtype)
        role_peaks = dict.fromkeys(("qa", "nli"), (peaks["int8"], "int8")) if name.startswith("int8") else {}
        flops = dict.fromkeys(("qg", "qa", "nli"), 0.0)
        for p in result.profile:
            for role, f in p.flops.items():
                flops[role] = flops.get(role, 0.0) + f
        # fraction of peak over the whole engine: each model's FLOPs against its precision's peak
        busy = sum(f / role_peaks.get(r, (peak, ""))[0] for r, f in flops.items())
        agree = " / ".join(
            agreement(getattr(a, "model_decisions", []), getattr(b, "model_decisions", []))
            for a, b in zip(comps32, comps)
        )
        rate = len(responses) / seconds
        if figures is not None:
            figures[name] = {
                "responses_per_s": rate,
                "peak_fraction": busy / seconds,
                "qg_peak_fraction": role_peak_fraction(result.profile, "qg", peak),
                "same_scores": digest(result) == digest(result32),
                "model_decisions_equal": agree,
            }
        lines.append(
            f"{name:<14}{seconds:>9.1f}{rate:>9.3f}{rate / rate32:>8.2f}x{rate / rate_ref:>8.2f}x"
            f"{busy / seconds:>9.1%}  {digest(result) == digest(result32)!s:<12}{agree}"
        )
        if name != "float32":
            lines += ["  " + line for line in efficiency_report(result.profile, peak, dtype, role_peaks)]
            lines += ["  " + note for note in getattr(comps[0], "profile_notes", list)()]
    return lines


def growth(args, sizes: list[int]) -> int:
    """Engine seconds and peak RSS at each size, each in a fresh process (`--engine-only`)."""
    import re
    import subprocess

    # one set of random models (its vocabulary: the words of the largest set's texts) for every size
    pairs = load_pairs(max(sizes))
    folder = tempfile.mkdtemp(prefix="q2-bench-")
    build_tiny_models(folder, model_texts(pairs), size=args.size)
    print(f"Growth (engine only, {args.size} shapes, dtype {args.dtype}, each size in a fresh process):")
    print(f"{'responses':>10}{'seconds':>10}{'s/response':>12}{'peak RSS MB':>13}{'peak GPU MB':>13}")
    for n in sizes:
        cmd = [
            sys.executable,
            __file__,
            "--engine-only",
            "--n",
            str(n),
            "--size",
            args.size,
            "--device",
            args.device,
            "--dtype",
            args.dtype,
            "--random-models",
            folder,
        ]
        out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
        seconds = float(re.search(r"^engine seconds: ([\d.]+)", out, re.M).group(1))
        rss = float(re.search(r"^engine peak RSS MB: ([\d.]+)", out, re.M).group(1))
        gpu = float(re.search(r"^engine peak GPU MB: ([\d.]+)", out, re.M).group(1))
        print(f"{n:>10}{seconds:>10.1f}{seconds / n:>12.3f}{rss:>13,.0f}{gpu:>13,.0f}", flush=True)
    import shutil

    shutil.rmtree(folder, ignore_errors=True)
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=600, help="responses for the engine")
    ap.add_argument(
        "--reference-n", type=int, default=None, help="responses for the reference loop (default N)"
    )
    ap.add_argument(
        "--size",
        choices=("paper", "tiny"),
        default="paper",
        help="shape of the random models when the paper's weights are unavailable",
    )
    ap.add_argument("--device", default="auto")
    ap.add_argument("--dtype", default="auto", choices=("auto", "float32", "float16", "bfloat16"))
    ap.add_argument(
        "--batch-size",
        type=int,
        default=None,
        help="QG, QA and NLI batch size (default: the config's on a CPU, GPU-sized on CUDA)",
    )
    ap.add_argument("--max-tokens", type=int, default=None, help="QG, QA and NLI padded tokens per batch")
    ap.add_argument("--qa-packing", choices=("auto", "on", "off"), default=None)
    ap.add_argument(
        "--cpu-matmul",
        choices=("auto", "blas", "onednn"),
        default=None,
        help="who computes the engine's float32 Linear layers on a CPU (the loop keeps PyTorch's)",
    )
    ap.add_argument(
        "--reference-no-grad",
        action="store_true",
        help="run the loop's QA in inference mode (the released code leaves autograd on)",
    )
    ap.add_argument(
        "--precisions",
        default=None,
        metavar="LIST",
        help="also run the engine in these modes, comma-separated, of "
        + ", ".join(MODES)
        + " (e.g. float32,bfloat16,int8) and compare them with float32",
    )
    ap.add_argument(
        "--growth",
        default=None,
        metavar="SIZES",
        help="only the engine, at each of these numbers of responses (e.g. 16,64,256), each in a "
        "fresh process: seconds and peak RSS",
    )
    ap.add_argument("--json", default=None, help="also write the run's figures to this JSON file")
    ap.add_argument("--engine-only", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument(
        "--profile",
        default=None,
        metavar="PREFIX",
        help="with --engine-only: profile the engine run (PREFIX.txt, PREFIX.prof)",
    )
    ap.add_argument("--random-models", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.growth:
        return growth(args, [int(x) for x in args.growth.split(",")])
    names = [x.strip() for x in args.precisions.split(",")] if args.precisions else []
    if any(x not in MODES for x in names):
        ap.error(f"--precisions: use {', '.join(MODES)}")
    if names and args.dtype not in ("auto", "float32"):
        ap.error("--precisions compares with the float32 run: leave --dtype at auto or float32")

    pairs = load_pairs(args.n)
    responses, knowledge = [p[0] for p in pairs], [p[1] for p in pairs]
    config, parser, qg, qa, nli, which = build(args, responses, knowledge)
    if args.engine_only and args.profile:
        return profile_engine(args.profile, config, parser, qg, qa, nli, responses, knowledge)
    if args.engine_only:
        result, seconds = run_engine(config, parser, qg, qa, nli, responses, knowledge)
        gpu = torch.cuda.max_memory_allocated() / 2**20 if qa.device.type == "cuda" else 0.0
        print(
            f"engine seconds: {seconds:.3f}\nengine peak RSS MB: "
            f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.1f}\nengine peak GPU MB: {gpu:.1f}\n"
            f"digest {digest(result)}"
        )
        return 0
    response_set = set(responses)
    device = qa.device
    print(f"Models: {which}")
    print(
        f"Machine: {platform.processor() or platform.machine()}, {torch.get_num_threads()} torch threads, "
        f"device {device}"
        + (f" ({torch.cuda.get_device_name()})" if device.type == "cuda" else "")
        + f", dtype {Q2Scorer(config)._dtype_name()}"
        + (
            f", TF32 {'on' if torch.backends.cuda.matmul.allow_tf32 else 'off (float32 products in float32)'}"
            if device.type == "cuda"
            else ""
        )
    )
    print(
        f"Runtime: batch sizes QG {qg.batch_size}, QA {qa.batch_size}, NLI {nli.batch_size}; "
        f"token budgets {qg.max_tokens}/{qa.max_tokens}/{nli.max_tokens}; "
        f"QA packed: {qa.packs()}; Linear layers: "
        f"{'oneDNN' if uses_onednn(config.cpu_matmul, device, qa.model.dtype) else 'PyTorch default (BLAS)'}"
    )

    peaks = measure_peaks(device, qa.model.dtype)
    if "int8" in names and device.type == "cpu":  # (int8 is a CPU mode; on a GPU its row is skipped)
        peaks["int8"] = int8_peak()
    print(
        "Matrix-product peak (torch.mm unless named, measured now): "
        + ", ".join(f"{k} {v / 1e9:,.1f} GFLOP/s" for k, v in peaks.items())
    )
    peak_name = str(qa.model.dtype).replace("torch.", "")
    # fractions of peak are of the fastest product of the models' dtype this machine has
    peak = max(v for k, v in peaks.items() if k.split()[0] == peak_name)

    n_ref = min(args.reference_n or args.n, args.n)
    # the loop's QA: the released code's call where the decisions are scripted, else the backend
    ref_qa = ReleasedQA(qa, grad=not args.reference_no_grad) if isinstance(qa, WorkingQA) else qa
    counted = {
        name: Counted(comp, method, response_set if name == "qa" else None)
        for name, comp, method in (("qg", qg, "generate"), ("qa", qa, "answer"), ("nli", nli, "classify"))
    }
    ref_counted = {**counted, "qa": Counted(ref_qa, "answer", response_set)}
    qa.tokens_processed = 0
    ref_meters = [
        FlopMeter.attach(m) for m in {id(m): m for m in (qg.model, ref_qa.model, nli.model)}.values()
    ]
    ref_flops0 = sum(m.flops for m in ref_meters)
    # the released code's beam search (transformers 3.2) made cross-attention keys and values per beam
    # and appended to and reordered its whole cache at every step: the reference path
    loop_qg = qg.with_decoder("reference")
    ref_counted["qg"] = Counted(loop_qg, "generate")
    # ... and its Linear layers ran on PyTorch's default path (the loop's own QA model never switches)
    linears = {comp: getattr(comp, "linears", None) for comp in (loop_qg, nli)}
    for comp in linears:
        comp.linears = None
    t0 = time.perf_counter()
    ref = [
        reference_q2(r, k, parser, ref_counted["qg"], ref_counted["qa"], ref_counted["nli"])
        for r, k in zip(responses[:n_ref], knowledge[:n_ref])
    ]
    t_ref = time.perf_counter() - t0
    for comp, value in linears.items():
        comp.linears = value
    ref_counts = {name: c.counts.copy() for name, c in ref_counted.items()}
    ref_tokens = qa.tokens_processed
    ref_flops = sum(m.flops for m in ref_meters) - ref_flops0

    if device.type == "cuda":  # warmed as each fast mode is (the loop met only one-example shapes)
        warm = warm_up_size(device)
        run_engine(config, parser, qg, qa, nli, responses[:warm], knowledge[:warm])
    for c in counted.values():
        c.counts.clear()
    qa.tokens_processed = 0
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats()
    for comp in (qg, qa, nli):  # the model's own decisions of the engine run only
        if hasattr(comp, "model_decisions"):
            comp.model_decisions.clear()
    engine = Q2Scorer(config, parser=parser, qg=counted["qg"], qa=counted["qa"], nli=counted["nli"])
    t0 = time.perf_counter()
    result = engine.score(responses, knowledge)
    t_engine = time.perf_counter() - t0
    eng_counts = {name: c.counts for name, c in counted.items()}
    print(f"QG beam search: the {getattr(qg, 'decoder', 'own')} path")
    gate = getattr(qg, "gate", None)
    for key, ok in (gate.memo if gate is not None else {}).items():  # the fast path's keys, when it ran
        print(f"  {key[0]:<14}{key[-1]!s:<30}{'fast' if ok else 'refused: the reference path'}")

    same = all((r.q2, r.q2_no_nli) == expected for r, expected in zip(result.responses, ref))
    rate_ref, rate_engine = n_ref / t_ref, args.n / t_engine
    print(f"\n{'':<28}{'reference loop':>18}{'engine':>18}")
    print(f"{'responses':<28}{n_ref:>18}{args.n:>18}")
    print(f"{'seconds':<28}{t_ref:>18.1f}{t_engine:>18.1f}")
    print(f"{'responses/s':<28}{rate_ref:>18.3f}{rate_engine:>18.3f}")
    for name, key in (
        ("qg", "calls"),
        ("qg", "examples"),
        ("qa", "response calls"),
        ("qa", "response examples"),
        ("qa", "knowledge calls"),
        ("qa", "knowledge examples"),
        ("nli", "calls"),
        ("nli", "examples"),
    ):
        print(f"{name + ' ' + key:<28}{ref_counts[name][key]:>18}{eng_counts[name][key]:>18}")
    print(f"{'QA tokens (padded)':<28}{ref_tokens:>18}{qa.tokens_processed:>18}")
    eng_flops = sum(sum(p.flops.values()) for p in result.profile)
    print(f"{'model GFLOP':<28}{ref_flops / 1e9:>18.1f}{eng_flops / 1e9:>18.1f}")
    print(
        f"{'fraction of ' + peak_name + ' peak':<28}{ref_flops / t_ref / peak:>18.1%}{eng_flops / t_engine / peak:>18.1%}"
    )
    per_ref = ref_counts["qa"]["response examples"] / max(n_ref, 1)
    per_eng = eng_counts["qa"]["response examples"] / args.n
    print(f"response-side QA examples per response: reference {per_ref:.2f}, engine {per_eng:.2f}")
    print("\nEngine stages (Q2Result.profile):")
    print(format_profile(result.profile))
    print("\nModel efficiency ('in model': inside forward passes; the rest is tokenization, spaCy, decoding,")
    print("beam bookkeeping between decoder steps):")
    print("\n".join(efficiency_report(result.profile, peak, peak_name)))
    if device.type == "cuda":
        print(
            "(on CUDA 'in model' is the time to queue the kernels, not to run them: read the stage columns)"
        )
    print(f"peak memory: {peak_memory(device)}")
    scores = [(r.q2, r.q2_no_nli) for r in result.responses]
    print(
        f"engine scores: {len(scores)} responses, digest {hashlib.sha256(repr(scores).encode()).hexdigest()[:16]}, "
        f"first {scores[:3]}"
    )
    figures: dict = {}
    if names:
        print(
            "\n".join(
                compare_precisions(
                    args,
                    names,
                    responses,
                    knowledge,
                    (result, t_engine, (qg, qa, nli)),
                    rate_ref,
                    peaks,
                    figures,
                )
            )
        )
    if args.json:
        summary = {
            "device": torch.cuda.get_device_name()
            if device.type == "cuda"
            else platform.processor() or "cpu",
            "date": time.strftime("%Y-%m-%d"),
            "responses": args.n,
            "fp32_responses_per_s": rate_engine if peak_name == "float32" else None,
            "bf16_responses_per_s": figures.get("bfloat16", {}).get("responses_per_s"),
            "qg_fp32_peak_fraction": role_peak_fraction(result.profile, "qg", peak)
            if peak_name == "float32"
            else None,
            # the opt-in fast path's scores (float32-fast) against the default's, where it ran
            "scores_equal": figures.get("float32-fast", {}).get("same_scores", same),
            "scores_equal_released_loop": same,
            "qg_notes": qg.profile_notes() if hasattr(qg, "profile_notes") else [],
            "digest": digest(result),
            "qg_gate": {  # the default's: the reference path checks nothing
                "classes": len(gate.memo) if gate is not None else 0,
                "refused": len(gate.refused()) if gate is not None else 0,
            },
            "modes": figures,
        }
        Path(args.json).write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    print(
        f"speed-up: {rate_engine / rate_ref:.2f}x ({rate_engine:.3f} vs {rate_ref:.3f} responses/s)  "
        f"same scores: {same}"
    )
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
