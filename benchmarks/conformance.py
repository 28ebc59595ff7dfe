"""Conformance with the released code on its own stack: do the models see, token for token, what
they saw for the paper, and do they answer the same?

    python benchmarks/conformance.py [--inputs FILE] [--released DIR] [--limit N] [--max-length L]

1. Builds (once) a second environment under `.conformance/venv` with transformers 3.2.0, the
   version the released code ran on (slow SentencePiece tokenizers by default).
2. Trains SentencePiece files the way the paper's models' were: T5's a unigram model
   (`<pad>`=0, `</s>`=1, `<unk>`=2), ALBERT's with ALBERT's flags (`[CLS] [SEP] [MASK]` control
   symbols, `user_defined_symbols=( ) " - . – £ €`, trained on lower-cased text).
3. With transformers 3.2, builds and saves random-weight T5 (QG) and ALBERT (QA) models of small
   shapes with those tokenizers; the T5 is saved by 3.2 and so carries the cross-attention bias
   (given random N(0, 1) values, as a trained one would have), plus a control copy with it zeroed.
4. Runs the released `pipeline/question_generation.py` (beam 5 and greedy) and
   `pipeline/question_answering.py`, unmodified, on 3.2, and the project's backends on this
   environment, on the same inputs: every candidate (the project's spaCy) of every response as a
   QG prompt, questions generated for the first candidate of every 8th response
   (`--generate-every`, `--generate all`) and for the whole torture set, the QA pairs (first
   candidate's best question, or `what is <candidate> ?` where none was generated, with the
   response and with the knowledge).
5. Prints the table: identical token ids (QG prompts, QA pairs), questions, answers and decoded
   texts, with the first differences and their cause; exits 1 when any input id differs.

Random weights never stop early: questions are capped at `--max-length` tokens (default 12) and
`--short-max-length` (default 5); a third QG model (`eos`) ends its beams at different steps. The
question rows are per model, cap and kind: a 3.2 sequence without the end token reached the length
limit, else all ended before it; long spans (the whole response as the answer) have their own row.
the model shapes are small (`SHAPES`), which is enough to compare tokenization and arithmetic.
`--project-tokenization hf` runs the project's backends with transformers' own tokenizers and
without the cross-attention bias (q2-metric 0.2.0's behaviour), for the "before" figures.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# the one reader outside the checkout: the released code, run (never copied) to compare, optional
RELEASED = ROOT.parent / "shared" / "reference" / "q-squared"
WORK = ROOT / ".conformance"
VENV = ROOT / ".conformance" / "venv"
REFERENCE_PACKAGES = [
    ["torch==2.13.0"],
    ["--no-deps", "transformers==3.2.0"],
    [
        "tokenizers==0.23.3",
        "sentencepiece",
        "sacremoses",
        "regex",
        "filelock",
        "requests",
        "tqdm",
        "packaging",
        "numpy",
        "six",
    ],
]
# the QG models compared: the 3.x cross-attention bias present (as saved by 3.2), zeroed, and
# present with an end token that random weights pick (beams end at different steps)
VARIANTS = {"bias": "bias present", "zeroed": "bias zeroed", "eos": "bias present, ends early"}
KINDS = ("reached the length limit", "ended before it")
SPLITS = ["dodeca_consistent", "dodeca_inconsistent", "memnet_consistent", "memnet_inconsistent"]
SHAPES = {
    "t5": dict(d_model=64, d_kv=16, d_ff=128, num_layers=2, num_decoder_layers=2, num_heads=4),
    "albert": dict(
        embedding_size=32, hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128
    ),
}
ALBERT_SYMBOLS = ["(", ")", '"', "-", ".", "\u2013", "\u00a3", "\u20ac"]

# (response, knowledge): accents, quotes, ``/'', digit-comma pieces, spaces before punctuation,
# tabs and newlines, emoji, CJK, special-token look-alikes, very long knowledge.
TORTURE = [
    (
        "Pokémon was created by Satoshi Tajiri in 1995 , in Tokyo .",
        "Pokémon (ポケモン) is a Japanese media franchise, created in 1995, 1996,and 1,000,000 cards .",
    ),
    (
        "I love ``The Beatles'' and their song ''Help'' .",
        "The Beatles were an English rock band formed in Liverpool in 1960 .",
    ),
    (
        "She said “hello” and ‘goodbye’ to Zoë in Montréal.",
        "Zoë moved to Montréal, Québec – a café city – in 2001.",
    ),
    (
        "It costs £5,000 or €4,500 , doesn't it ?",
        "The price rose from £3,000 in 1990, to €4,500 in 2000, then 5,000.",
    ),
    ("Naïve façade , résumé and crème brûlée .", "Crème brûlée is a dessert ; its façade is naïve ."),
    ("Tabs\tand\nnewlines\r\nare   here .", "Whitespace:\ttabs,\nnewlines and  double  spaces ."),
    (
        "I love pizza 🍕 and sushi 🍣!",
        "Pizza 🍕 is an Italian dish. 寿司 (sushi) is Japanese. 北京 is a city.",
    ),
    ("The years 1990, 1991,1992 and 2000, were great .", "Numbers: 1,2,3 , 10, 100, 1000, 10,000 ."),
    (
        "The sub-categories of rock-and-roll ( e.g. punk ) are many .",
        "Rock-and-roll has sub-genres ( punk , metal ) - and more .",
    ),
    (
        "He wrote <pad> and </s> and [SEP] in his [MASK] essay .",
        "Tokens like <unk>, [CLS] and <extra_id_0> appear in text .",
    ),
    ("ＡＢＣ ｆｕｌｌｗｉｄｔｈ ① ﬁ ligature ™ .", "Ｆｕｌｌｗｉｄｔｈ letters and ½ fractions ."),
    (
        "Do n't you 've seen it ? I 'm sure they 're right .",
        "They 've said it is n't so , and you 're right .",
    ),
    (
        "The Ü-Bahn in Düsseldorf , Ångström and Øresund .",
        "Düsseldorf's Ü-Bahn ; Ångström ; Øresund bridge .",
    ),
    (
        "A very long knowledge text follows .",
        " ".join(["The 1990s , in Berlin ( Germany ) - were a time of change ."] * 120),
    ),
]
EXTRA_QA = [
    ("who created pokémon ?", "Pokémon was created by Satoshi Tajiri in 1995 , in Tokyo ."),
    ("what is ``it'' ?", "It is ''quoted'' and ``quoted'' text ."),
    ("how much , 1990, ?", "In 1990, 1,000 people paid £5,000 ."),
    ("", "An empty question ."),
    ("what ?", "   "),
]


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def ensure_reference_env() -> Path:
    """The transformers 3.2 environment (built once; `.ready` marks it complete)."""
    python = VENV / "bin" / "python"
    if (VENV / ".ready").exists():
        return python
    log(f"building the transformers 3.2.0 environment in {VENV} (once) ...")
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
    for packages in REFERENCE_PACKAGES:
        subprocess.run(
            [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", *packages], check=True
        )
    (VENV / ".ready").write_text("transformers==3.2.0\n")
    return python


def read_inputs(path: str | None) -> list[tuple[str, str]]:
    """(response, knowledge) pairs: a CSV/JSONL file, or the 1,688 annotated responses."""
    if path:
        p = Path(path)
        if p.suffix == ".jsonl":
            rows = [json.loads(line) for line in p.read_text(encoding="utf-8").splitlines() if line.strip()]
        else:
            with open(p, newline="", encoding="utf-8") as f:
                rows = list(csv.DictReader(f))
        return [(r["response"], r["knowledge"]) for r in rows]
    data = ROOT / "data" / "q2_wow"
    pairs = []
    for name in SPLITS:
        with open(data / f"{name}.csv", newline="", encoding="utf-8") as f:
            pairs += [(r["response"], r["knowledge"]) for r in csv.DictReader(f)]
    with open(data / "cross_annotation.csv", newline="", encoding="utf-8") as f:
        for r in csv.DictReader(f):
            pairs += [(r["dodeca_response"], r["knowledge"]), (r["memnet_response"], r["knowledge"])]
    return pairs


def train_spiece(texts: list[str], out: Path, vocab_size: int) -> dict[str, str]:
    """SentencePiece files made the way the paper's T5 and ALBERT ones were."""
    import sentencepiece as spm

    out.mkdir(parents=True, exist_ok=True)
    common = dict(
        vocab_size=vocab_size, model_type="unigram", hard_vocab_limit=False, minloglevel=2, num_threads=1
    )  # one thread: the same files on every run
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(texts),
        model_prefix=str(out / "t5"),
        pad_id=0,
        eos_id=1,
        unk_id=2,
        bos_id=-1,
        pad_piece="<pad>",
        eos_piece="</s>",
        unk_piece="<unk>",
        **common,
    )
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter([t.lower() for t in texts]),
        model_prefix=str(out / "albert"),
        pad_id=0,
        unk_id=1,
        bos_id=-1,
        eos_id=-1,
        pad_piece="<pad>",
        unk_piece="<unk>",
        control_symbols=["[CLS]", "[SEP]", "[MASK]"],
        user_defined_symbols=ALBERT_SYMBOLS,
        character_coverage=0.99995,
        **common,
    )
    return {"t5": str(out / "t5.model"), "albert": str(out / "albert.model")}


def start_reference(python: Path, what: str, job: dict, name: str) -> tuple[subprocess.Popen | None, dict]:
    """Start the 3.2 side on a job (it runs beside the project side: one core each). A job done
    before with the same inputs (same tokenizer files, models, texts and settings) is not redone."""
    path = WORK / f"{name}.json"
    text = json.dumps(job)
    done = WORK / f"{name}.done"
    if path.exists() and path.read_text() == text and done.exists():
        log(f"the 3.2 side's {name} results are up to date (delete {done} to redo them)")
        return None, job
    done.unlink(missing_ok=True)
    path.write_text(text)
    proc = subprocess.Popen(
        [str(python), str(ROOT / "benchmarks" / "conformance_ref32.py"), what, str(path)],
        cwd=WORK,
        env={**os.environ, "PYTHONPATH": "", "TOKENIZERS_PARALLELISM": "false", "PYTHONWARNINGS": "ignore"},
    )
    return proc, job


def finish_reference(started: tuple[subprocess.Popen | None, dict], name: str) -> dict:
    proc, job = started
    if proc is not None:
        if proc.wait() != 0:
            raise SystemExit(f"the transformers 3.2 side failed (exit code {proc.returncode})")
        (WORK / f"{name}.done").write_text("")
    return json.loads(Path(job["output"]).read_text()) if "output" in job else {}


def candidates_of(responses: list[str]) -> list[list[str]]:
    from q2_metric.config import Q2Config
    from q2_metric.models.spacy_parser import SpacyParser
    from q2_metric.steps.candidates import answer_candidates

    parser = SpacyParser(Q2Config())
    unique = list(dict.fromkeys(responses))
    parsed = dict(zip(unique, parser.parse(unique)))
    return [answer_candidates(parsed[r]) for r in responses]


class Tally:
    """One row of the table: how many identical, and the first differences."""

    def __init__(self, name: str, cause: str = "") -> None:
        self.name, self.cause, self.same, self.total, self.examples = name, cause, 0, 0, []

    def add(self, same: bool, example: str) -> None:
        self.total += 1
        self.same += same
        if not same and len(self.examples) < 3:
            self.examples.append(example)

    def row(self) -> str:
        pct = 100.0 * self.same / self.total if self.total else 100.0
        return f"| {self.name} | {self.same}/{self.total} | {pct:.1f}% |"


def unpadded(ids: list[int], pad: int = 0) -> list[int]:
    """Generated ids without the pads after the end (a batch pads to its longest sequence)."""
    ids = list(ids)
    while ids and ids[-1] == pad:
        ids.pop()
    return ids


def first_diff(a: list, b: list) -> str:
    i = next((k for k, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
    return f"at {i}: 3.2 {a[max(0, i - 2) : i + 3]} vs project {b[max(0, i - 2) : i + 3]} (lengths {len(a)}/{len(b)})"


def main(argv: list[str] | None = None) -> int:
    global WORK
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--inputs", help="CSV/JSONL with response and knowledge columns (default: the annotated set)"
    )
    ap.add_argument(
        "--released",
        default=str(RELEASED),
        help="a clone of github.com/orhonovich/q-squared (default: ../shared/reference/q-squared)",
    )
    ap.add_argument("--limit", type=int, help="only the first N responses (quick checks)")
    ap.add_argument(
        "--max-length", type=int, default=12, help="question length cap (random weights never stop)"
    )
    ap.add_argument(
        "--short-max-length",
        type=int,
        default=5,
        metavar="L",
        help="also generate with this shorter cap (0: not), default 5: every beam reaches it",
    )
    ap.add_argument(
        "--generate",
        choices=["first", "all"],
        default="first",
        help="generate questions for every candidate, or for each response's first (and the torture set's)",
    )
    ap.add_argument(
        "--generate-every",
        type=int,
        default=8,
        metavar="N",
        help="generate for every Nth response only, default 8 (all prompts are still compared as "
        "inputs); 1 for every response",
    )
    ap.add_argument("--no-greedy", action="store_true", help="skip greedy decoding")
    ap.add_argument("--vocab-size", type=int, default=8000)
    ap.add_argument("--project-tokenization", choices=["reference", "hf"], default="reference")
    ap.add_argument("--work", default=str(WORK), help="folder for the tokenizer files, models and results")
    ap.add_argument("--report", help="JSON report (default: WORK/report.json)")
    args = ap.parse_args(argv)
    if not (Path(args.released) / "pipeline" / "question_generation.py").is_file():
        print(
            f"conformance skipped: the released code is not in {args.released} "
            "(git clone https://github.com/orhonovich/q-squared there, or pass --released DIR)."
        )
        return 0
    WORK = Path(args.work).resolve()
    started = time.time()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    sys.path.insert(0, str(ROOT))
    WORK.mkdir(exist_ok=True)

    python = ensure_reference_env()
    pairs = read_inputs(args.inputs)[: args.limit] + TORTURE
    log(f"{len(pairs)} responses ({len(TORTURE)} of them the torture set); candidates with spaCy ...")
    cands = candidates_of([r for r, _ in pairs])
    spiece = train_spiece([t for p in pairs for t in p], WORK / "tok", args.vocab_size)
    models = WORK / "models"
    digest = hashlib.sha256(Path(spiece["t5"]).read_bytes() + Path(spiece["albert"]).read_bytes()).hexdigest()
    finish_reference(
        start_reference(
            python,
            "build",
            {
                "models": str(models),
                "t5_spiece": spiece["t5"],
                "albert_spiece": spiece["albert"],
                "spiece_sha": digest,
                "t5_shape": SHAPES["t5"],
                "albert_shape": SHAPES["albert"],
                "probe": [f"answer: {r[:20]}  context: {r} </s>" for r, _ in pairs[-len(TORTURE) :]],
            },
            "build",
        ),
        "build",
    )
    qg_jobs = [(c, r) for (r, _), cs in zip(pairs, cands) for c in cs]
    # which prompts are also generated from (all of them are compared as model inputs)
    generate = [
        ((args.generate == "all" or j == 0) and i % args.generate_every == 0)
        or i >= len(pairs) - len(TORTURE)
        for i, cs in enumerate(cands)
        for j in range(len(cs))
    ]
    # long spans: the whole response as the answer, for the responses generated from and the torture set
    n_candidate_prompts = len(qg_jobs)
    long_spans = [
        (r, r)
        for i, (r, _) in enumerate(pairs)
        if i % args.generate_every == 0 or i >= len(pairs) - len(TORTURE)
    ]
    qg_jobs += long_spans
    generate += [True] * len(long_spans)
    lengths = [args.max_length] + ([args.short_max_length] if args.short_max_length else [])
    t_ref = time.time()
    ref_jobs = [
        start_reference(
            python,
            "run",
            {
                "released": args.released,
                "models": str(models),
                "variants": [variant],
                "max_length": args.max_length,
                "max_lengths": lengths,
                "greedy": not args.no_greedy,
                "spiece_sha": digest,
                "qg": qg_jobs,
                "generate": generate,
                "qa": [],
                "output": str(WORK / f"ref_qg_{variant}.out.json"),
            },
            f"qg_{variant}",
        )
        for variant in VARIANTS
    ]

    from q2_metric.config import Q2Config
    from q2_metric.models.hf_qa import HFQuestionAnswerer
    from q2_metric.models.hf_qg import HFQuestionGenerator, qg_input

    reference = args.project_tokenization == "reference"
    t_proj = time.time()
    prompts = [qg_input(a, c) for a, c in qg_jobs]
    chosen = [i for i, g in enumerate(generate) if g]
    project: dict = {}  # (variant, decoding, max length) -> (generator, {prompt index: generated ids})
    signature_paths = {}
    for variant in VARIANTS:
        qg_dir = str(models / variant / "mrm8488" / "t5-base-finetuned-question-generation-ap")
        for decoding in ("beam",) if args.no_greedy else ("beam", "greedy"):
            for L in lengths:
                qg = HFQuestionGenerator(
                    Q2Config(
                        qg_model=qg_dir,
                        device="cpu",
                        dtype="float32",
                        decoding=decoding,
                        max_question_length=L,
                    ),
                    reference=reference,
                )
                signature_paths[f"qg-{variant}"] = qg.tokenization
                project[variant, decoding, L] = (
                    qg,
                    dict(zip(chosen, qg.generate_ids([prompts[i] for i in chosen]))),
                )
    proj_seconds = time.time() - t_proj
    ref_qg = {"qg": {}}
    for job in ref_jobs:
        ref_qg["qg"].update(finish_reference(job, f"qg_{job[1]['variants'][0]}")["qg"])
    # QA pairs as the pipeline makes them: the first candidate's best question (3.2, bias present;
    # `what is <candidate> ?` where none was generated) with the response (the filter) and with the
    # knowledge; plus the torture questions
    qa_jobs, k = [], 0
    assert k + sum(map(len, cands)) == n_candidate_prompts  # the long-span prompts come after these
    for (r, kn), cs in zip(pairs, cands):
        if cs:
            q = ref_qg["qg"]["bias"][k]["beam"][0] if generate[k] else f"what is {cs[0]} ?"
            qa_jobs += [(q, r), (q, kn)]
        k += len(cs)
    qa_jobs += EXTRA_QA
    ref_qa_job = start_reference(
        python,
        "run",
        {
            "released": args.released,
            "models": str(models),
            "variants": ["bias"],
            "max_length": args.max_length,
            "greedy": False,
            "spiece_sha": digest,
            "qg": [],
            "generate": [],
            "qa": qa_jobs,
            "output": str(WORK / "ref_qa.out.json"),
        },
        "qa",
    )
    t_proj = time.time()
    qa = HFQuestionAnswerer(
        Q2Config(
            qa_model=str(models / "bias" / "ktrapeznikov" / "albert-xlarge-v2-squad-v2"),
            device="cpu",
            dtype="float32",
        ),
        reference=reference,
    )
    signature_paths["qa"] = qa.tokenization
    features, examples, _ = qa.features([q for q, _ in qa_jobs], [t for _, t in qa_jobs])
    answers = qa.answer([q for q, _ in qa_jobs], [t for _, t in qa_jobs])
    proj_seconds += time.time() - t_proj
    ref_qa = finish_reference(ref_qa_job, "qa")
    ref_seconds = time.time() - t_ref

    tallies = {
        name: Tally(name)
        for name in (
            "QG prompt ids",
            "QG attention masks",
            "QA pair ids",
            "QA segment ids",
            "QA attention masks",
            *[
                f"questions, {decoding}, {VARIANTS[v]}, max {L}, {kind}"
                for decoding in ("beam 5", "greedy")
                for v in VARIANTS
                for L in lengths
                for kind in KINDS
            ],
            *[f"questions, {decoding}, {kind}, all" for decoding in ("beam 5", "greedy") for kind in KINDS],
            "questions, long spans (beam 5 and greedy, all models and lengths)",
            "question texts decoded from the same ids",
            "QG prompts decoded from the same ids",
            "answers (QA spans)",
            "answer texts decoded from the same ids",
            "QA texts decoded from the same ids",
        )
    }
    near_ties: list[str] = []
    for (variant, decoding, L), (qg, out) in project.items():
        rows = ref_qg["qg"][variant]
        if variant == "bias" and decoding == "beam" and lengths[0] == L:
            for prompt, ids, row in zip(prompts, qg.encode(prompts), rows):
                tallies["QG prompt ids"].add(
                    ids == row["input_ids"], f"{prompt!r}: {first_diff(row['input_ids'], ids)}"
                )
                tallies["QG attention masks"].add([1] * len(ids) == row["attention_mask"], repr(prompt))
                text = qg.decode(row["input_ids"])
                tallies["QG prompts decoded from the same ids"].add(
                    text == row["prompt_decoded"], f"3.2 {row['prompt_decoded']!r} vs project {text!r}"
                )
        at = "" if lengths[0] == L else f"@{L}"
        key = ("beam_ids" if decoding == "beam" else "greedy_ids") + at
        label = "beam 5" if decoding == "beam" else "greedy"
        for i in chosen:
            prompt, beams, row = prompts[i], out[i], rows[i]
            ref_ids = row[key] if decoding == "beam" else [row[key]]
            texts = [qg.decode(b) for b in beams]
            ref_texts = row[("beam" if decoding == "beam" else "greedy") + at]
            ref_texts = ref_texts if decoding == "beam" else [ref_texts]
            same_ids = [unpadded(b) for b in beams] == [unpadded(r) for r in ref_ids]
            same = same_ids and texts == ref_texts
            # a sequence of 3.2 without the end token ran to the limit
            kind = KINDS[0] if any(qg.model.config.eos_token_id not in r for r in ref_ids) else KINDS[1]
            example = f"{prompt!r} ({variant}, max {L}): 3.2 {ref_texts} vs project {texts}"
            tallies[f"questions, {label}, {VARIANTS[variant]}, max {L}, {kind}"].add(same, example)
            tallies[f"questions, {label}, {kind}, all"].add(same, example)
            if i >= n_candidate_prompts:
                tallies["questions, long spans (beam 5 and greedy, all models and lengths)"].add(
                    same, example
                )
            for b, r_ids, r_text in zip(beams, ref_ids, ref_texts):
                if unpadded(b) == unpadded(r_ids):
                    tallies["question texts decoded from the same ids"].add(
                        qg.decode(b) == r_text, f"{r_ids}: 3.2 {r_text!r} vs project {qg.decode(b)!r}"
                    )

    first = {}
    for f, e in zip(features, examples):
        first.setdefault(e, f)
    for i, ((q, t), row) in enumerate(zip(qa_jobs, ref_qa["qa"])):
        f = first[i]
        label = f"({q[:40]!r}, {t[:60]!r})"
        fits = len(row["input_ids"]) <= qa.window
        tallies["QA pair ids"].add(
            f["input_ids"] == row["input_ids"]
            if fits
            else f["input_ids"] == row["input_ids"][: len(f["input_ids"]) - 1] + f["input_ids"][-1:],
            f"{label}: {first_diff(row['input_ids'], f['input_ids'])}",
        )
        tallies["QA segment ids"].add(
            f.get("token_type_ids") == row["token_type_ids"][: len(f["input_ids"])] if fits else True, label
        )
        tallies["QA attention masks"].add(
            f["attention_mask"] == row["attention_mask"][: len(f["input_ids"])], label
        )
        if not fits:
            continue  # the released code cannot read it (over 512 tokens); the project reads windows
        got = answers[i].text if answers[i].has_answer else qa.cls_text
        same = got == row["answer"]
        if not same and f["input_ids"] == row["input_ids"] and row["margin"] < 1e-4:
            # the same input, argmax runners-up within float rounding of each other
            near_ties.append(
                f"{label}: 3.2 {row['answer']!r} vs project {got!r}, logit margin {row['margin']:.2e}"
            )
        tallies["answers (QA spans)"].add(
            same,
            f"{label}: 3.2 {row['answer']!r} vs project {got!r} (3.2's logit margin {row['margin']:.1e})",
        )
        if f["input_ids"] == row["input_ids"] and 1 in row["token_type_ids"]:
            ids = row["input_ids"][row["token_type_ids"].index(1) : -1]
            tallies["QA texts decoded from the same ids"].add(
                qa.tokens_to_text(ids) == row["text_decoded"],
                f"3.2 {row['text_decoded'][:80]!r} vs project {qa.tokens_to_text(ids)[:80]!r}",
            )
        if f["input_ids"] == row["input_ids"]:
            span = row["input_ids"][row["start"] : row["end"] + 1]
            tallies["answer texts decoded from the same ids"].add(
                qa.tokens_to_text(span) == row["answer"],
                f"{span}: 3.2 {row['answer']!r} vs project {qa.tokens_to_text(span)!r}",
            )
    wall = time.time() - started
    print(
        f"\nConformance with the released code on transformers {ref_qa['versions']['transformers']} "
        f"(torch {ref_qa['versions']['torch']}), project on transformers {__import__('transformers').__version__}"
    )
    print(
        f"{len(pairs)} responses ({len(TORTURE)} torture), {len(prompts)} QG prompts ({sum(generate)} generated from), "
        f"{len(qa_jobs)} QA pairs; "
        f"random-weight models ({SHAPES['t5']['d_model']}-dim T5, {SHAPES['albert']['hidden_size']}-dim ALBERT), "
        f"questions capped at {args.max_length} tokens; project tokenization: {signature_paths}\n"
    )
    print("| compared | identical | share |\n|---|---|---|")
    for t in tallies.values():
        if t.total or not t.name.startswith("questions, "):
            print(t.row())
    for t in tallies.values():
        for ex in t.examples:
            print(f"  {t.name} differs: {ex}")
    if near_ties:
        print("QA answers that differ on identical ids at a float-rounding near-tie (logit margin < 1e-4):")
        for n in near_ties[:10]:
            print("  " + n)
    cpu = os.times()
    print(
        f"\nCPU time {cpu.user + cpu.system + cpu.children_user + cpu.children_system:.0f} s (both sides); "
        f"wall time {wall:.0f} s (3.2 side {ref_seconds:.0f} s and project side {proj_seconds:.0f} s, side by side); "
        f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores"
    )
    Path(args.report or WORK / "report.json").write_text(
        json.dumps(
            {n: {"same": t.same, "total": t.total, "examples": t.examples} for n, t in tallies.items()}
            | {"wall_s": wall, "near_ties": near_ties, "paths": signature_paths},
            indent=1,
        )
    )
    ids_ok = all(
        tallies[n].same == tallies[n].total
        for n in (
            "QG prompt ids",
            "QG attention masks",
            "QA pair ids",
            "QA segment ids",
            "QA attention masks",
        )
    )
    return 0 if ids_ok else 1


if __name__ == "__main__":
    sys.exit(main())
