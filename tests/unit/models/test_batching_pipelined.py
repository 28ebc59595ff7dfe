"""QA and NLI launch each batch before collecting the previous one (`batching.pipelined`), so on a
GPU the CPU pads the next batch while the device runs the last one. The order of the calls is
observable on a CPU. The results must be those of every input run alone, in input order."""

import numpy as np

from q2_metric.models.hf_nli import HFNLIClassifier
from q2_metric.models.hf_qa import HFQuestionAnswerer


def record(backend, launch: str, collect: str) -> list[str]:
    """Wrap the backend's launch and collect steps to log their order."""
    log: list[str] = []
    real_launch, real_collect = getattr(backend, launch), getattr(backend, collect)
    count = iter(range(10**6))

    def launched(*args):
        n = next(count)
        log.append(f"launch {n}")
        return n, real_launch(*args)

    def collected(handle):
        n, inner = handle
        log.append(f"collect {n}")
        return real_collect(inner)

    setattr(backend, launch, launched)
    setattr(backend, collect, collected)
    return log


def interleaved(n: int) -> list[str]:
    """launch 0, launch 1, collect 0, launch 2, collect 1, ..., collect n-1."""
    out = ["launch 0"]
    for k in range(1, n):
        out += [f"launch {k}", f"collect {k - 1}"]
    return out + [f"collect {n - 1}"]


def pairs(rows, n):
    return [(f"what is {r['response'].split()[0]}?", r["knowledge"]) for r in rows[:n]]


def test_qa_padded_batches_are_pipelined(tiny_config, rows):
    qa = HFQuestionAnswerer(tiny_config.replace(qa_packing="off", qa_batch_size=2))
    questions, texts = zip(*pairs(rows, 7))
    features, _, _ = qa.features(questions, texts)
    alone = [qa._logits([f])[0] for f in features]  # one input per call: nothing to pipeline
    log = record(qa, "_launch_padded", "_collect_padded")
    got = qa._all_logits(features)
    assert log == interleaved(4)  # 7 inputs in batches of at most 2
    for (s, e), (s1, e1) in zip(got, alone):
        assert np.allclose(s, s1, atol=1e-5) and np.allclose(e, e1, atol=1e-5)


def test_qa_packed_calls_are_pipelined(tiny_config, rows):
    qa = HFQuestionAnswerer(tiny_config.replace(qa_packing="on", qa_batch_size=3))
    questions, texts = zip(*pairs(rows, 8))
    features, _, _ = qa.features(questions, texts)
    alone = [qa._logits([f])[0] for f in features]
    log = record(qa, "_launch_packed", "_collect_packed")
    got = qa._all_logits(features)
    assert log == interleaved(3)  # 8 inputs, at most 3 a call
    for (s, e), (s1, e1) in zip(got, alone):
        assert np.allclose(s, s1, atol=1e-5) and np.allclose(e, e1, atol=1e-5)


def test_nli_batches_are_pipelined(tiny_config, rows):
    nli = HFNLIClassifier(tiny_config.replace(nli_batch_size=2))
    premises, hypotheses = [r["knowledge"] for r in rows[:5]], [r["response"] for r in rows[:5]]
    alone = [nli._run([(p, h)])[0] for p, h in zip(premises, hypotheses)]
    log = record(nli, "_launch", "_collect")
    assert nli.classify(premises, hypotheses) == alone
    assert log == interleaved(3)
