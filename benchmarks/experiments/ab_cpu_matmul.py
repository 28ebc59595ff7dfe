"""A/B of the three models' Linear layers on PyTorch's default CPU path (MKL) and on oneDNN
(`cpu_matmul`), on the benchmark's inputs: same decisions? how much faster?

    python benchmarks/experiments/ab_cpu_matmul.py --n 48 --reps 2

Random-weight models of the paper's shapes (as `bench_speed.py --size paper` builds them) run
through the real backends on the annotated WoW responses. Questions are generated for every spaCy
candidate of each response with the paper's beam search (at most `--max-question-tokens` tokens).
QA reads each template question with the response and with the knowledge. NLI reads
(knowledge, response). For each path, alternating the order, it prints the seconds per model.
It then compares the decisions: generated ids (all 5 returned beams), the QA start and end
argmaxes, the NLI labels. It also prints the largest logit difference and the smallest gap
between the best and second-best QA logit, to show how far the decisions were from a tie.
"""

from __future__ import annotations

import tempfile
import time

import numpy as np
import torch
from common import bench_speed, interleaved, parser

from q2_metric import Q2Config, Q2Scorer
from q2_metric.models.hf_qg import qg_input
from q2_metric.models.speed.cpu_matmul import uses_onednn
from q2_metric.models.tiny_builder import build_tiny_models
from q2_metric.steps.candidates import answer_candidates


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--n", type=int, default=48, help="annotated responses")
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--max-question-tokens", type=int, default=16)
    args = ap.parse_args()
    pairs = bench_speed.load_pairs(args.n)
    responses, knowledge = [p[0] for p in pairs], [p[1] for p in pairs]
    paths = build_tiny_models(tempfile.mkdtemp(prefix="q2-ab-"), bench_speed.model_texts(pairs), size="paper")
    config = Q2Config(
        qg_model=paths["qg"],
        qa_model=paths["qa"],
        nli_model=paths["nli"],
        device="cpu",
        max_question_length=args.max_question_tokens,
    )
    scorer = Q2Scorer(config).load()
    qg, qa, nli = scorer.qg, scorer.qa, scorer.nli
    print(
        f"oneDNN chosen by cpu_matmul='auto' here: {uses_onednn('auto', qa.device, qa.model.dtype)} "
        f"(capability {torch.backends.cpu.get_cpu_capability()})"
    )

    cands = [
        (c, r)
        for r, parsed in zip(responses, scorer.parser.parse(responses))
        for c in answer_candidates(parsed)
    ]
    prompts = [qg_input(c, r) for c, r in cands]
    template = bench_speed.Decisions.TEMPLATES
    questions = [template[i % len(template)].format(a=c) for i, (c, _) in enumerate(cands)]
    know_of = dict(zip(responses, knowledge))
    qa_q = questions + questions
    qa_c = [r for _, r in cands] + [know_of[r] for _, r in cands]
    print(
        f"{len(responses)} responses, {len(prompts)} QG prompts, {len(qa_q)} QA pairs, {len(responses)} NLI pairs"
    )

    def run(setting: str) -> dict:
        for comp in (qg, qa, nli):
            comp.config = comp.config.replace(cpu_matmul=setting)
        out, secs = {}, {}
        t = time.perf_counter()
        out["qg"] = qg.generate_ids(prompts)
        secs["qg"] = time.perf_counter() - t
        feats, _, _ = qa.features(qa_q, qa_c)
        t = time.perf_counter()
        out["qa"] = qa._all_logits(feats)
        secs["qa"] = time.perf_counter() - t
        t = time.perf_counter()
        out["nli"] = nli.classify(knowledge, responses)
        secs["nli"] = time.perf_counter() - t
        return {"out": out, "secs": secs}

    results: dict[str, list] = {"blas": [], "onednn": []}
    for rep in range(args.reps):
        for setting in interleaved(rep, ("blas", "onednn")):
            r = run(setting)
            results[setting].append(r)
            print(
                f"rep {rep} {setting:<7} "
                + "  ".join(f"{k} {v:7.2f} s" for k, v in r["secs"].items())
                + f"  total {sum(r['secs'].values()):7.2f} s",
                flush=True,
            )

    a, b = results["blas"][0]["out"], results["onednn"][0]["out"]
    qg_same = sum(x == y for x, y in zip(a["qg"], b["qg"]))
    print(f"QG: {qg_same} of {len(prompts)} prompts with the same 5 returned beams (ids)")
    same_span, diff, gap = 0, 0.0, float("inf")
    for (s1, e1), (s2, e2) in zip(a["qa"], b["qa"]):
        same_span += int(np.argmax(s1) == np.argmax(s2) and np.argmax(e1) == np.argmax(e2))
        diff = max(diff, float(np.abs(s1 - s2).max()), float(np.abs(e1 - e2).max()))
        for x in (s1, e1):
            top = np.sort(x)[-2:]
            gap = min(gap, float(top[1] - top[0]))
    print(
        f"QA: {same_span} of {len(qa_q)} pairs with the same start and end argmax; "
        f"largest logit difference {diff:.2e}; smallest best-vs-second logit gap {gap:.2e}"
    )
    print(f"NLI: {sum(x == y for x, y in zip(a['nli'], b['nli']))} of {len(responses)} labels the same")
    for setting, reps in results.items():
        med = {k: float(np.median([r["secs"][k] for r in reps])) for k in ("qg", "qa", "nli")}
        print(f"median {setting:<7} " + "  ".join(f"{k} {v:7.2f} s" for k, v in med.items()))
    m = {s: float(np.median([sum(r["secs"].values()) for r in reps])) for s, reps in results.items()}
    print(f"oneDNN / default, total: {m['onednn'] / m['blas']:.2f}")


if __name__ == "__main__":
    main()
