"""The harnesses' batching (q2_metric.harness.batcher) on scripted components: no model, fast.

The yardstick is `Q2Scorer.score` called directly on all pairs at once (the engine itself), never
the code under test."""

from __future__ import annotations

import asyncio
import csv
import json
import math
import time

import pytest

from q2_metric import Q2Config
from q2_metric.harness import batcher as B
from q2_metric.harness import lm_eval as L
from q2_metric.testing.scripted import scripted_scorer

PAIRS = [
    ("Bob Ross hosted The Joy of Painting on PBS.", "Bob Ross hosted The Joy of Painting on PBS."),
    ("The show aired in Canada and Europe.", "The show aired on PBS in the United States and also in Canada."),
    ("Gardening is relaxing for Many People.", "Gardening is considered by many people to be a relaxing activity."),
    ("", "Knowledge with no reply."),
    ("i like it", "The Micro-pigs are small pigs."),
    ("Paris is the capital of France.", "Paris is the capital and most populous city of France."),
    ("Ross died in Orlando.", "Ross died of lymphoma in Orlando, Florida."),
]


def engine(max_batch: int) -> B.Q2Engine:
    return B.Q2Engine(Q2Config(), max_batch=max_batch, scorer=scripted_scorer())


def direct():
    return scripted_scorer().score([r for r, _ in PAIRS], [k for _, k in PAIRS])


def same(a: float, b: float) -> bool:
    return (math.isnan(a) and math.isnan(b)) or a == b


@pytest.mark.parametrize("max_batch", [1, 3, 64])
def test_score_pairs_chunks_and_keeps_order(max_batch):
    e = engine(max_batch)
    got = e.score_pairs([r for r, _ in PAIRS], [k for _, k in PAIRS])
    want = direct()
    assert [same(g.value, w) for g, w in zip(got, want.scores)] == [True] * len(PAIRS)
    assert e.engine_calls == math.ceil(len(PAIRS) / max_batch) and e.replies == len(PAIRS)
    assert all(g.signature == want.signature for g in got)


def test_collect_scores_a_run_once_and_gives_the_engines_figures():
    e = engine(64)
    first = e.collect(PAIRS)
    again = e.collect(list(PAIRS))
    assert again is first and e.engine_calls == 1
    want = direct().system
    assert same(first.system.q2, want.q2) and same(first.system.q2_no_nli, want.q2_no_nli)
    assert same(first.system.coverage, want.coverage) and first.system.num_skipped == 1
    assert first.signature is not None and first.signatures == [str(first.signature)]
    e.collect(PAIRS[:2])  # other pairs: scored anew
    assert e.engine_calls == 2


def test_async_batcher_gathers_concurrent_requests():
    e = engine(3)
    batcher = B.AsyncBatcher(e, max_wait=0.5)

    async def run():
        return await asyncio.gather(*(batcher.score(r, k) for r, k in PAIRS))

    got = asyncio.run(run())
    want = direct()
    assert [same(g.value, w) for g, w in zip(got, want.scores)] == [True] * len(PAIRS)
    assert batcher.batches == [3, 3, 1] and e.engine_calls == 3
    # a second event loop is served too (Inspect and ragas each run their own)
    asyncio.run(run())
    assert e.engine_calls == 6


def test_async_batcher_does_not_wait_past_max_wait_nor_for_a_full_batch():
    e = engine(64)
    batcher = B.AsyncBatcher(e, max_wait=0.2)

    async def one():
        start = time.perf_counter()
        await batcher.score(*PAIRS[0])
        return time.perf_counter() - start

    assert asyncio.run(one()) < 5  # a lone request goes after max_wait
    full = B.AsyncBatcher(engine(2), max_wait=30)

    async def two():
        start = time.perf_counter()
        await asyncio.gather(full.score(*PAIRS[0]), full.score(*PAIRS[1]))
        return time.perf_counter() - start

    assert asyncio.run(two()) < 10  # a full batch goes at once, not after 30 s
    assert full.batches == [2]


def test_async_batcher_gives_every_waiter_the_engines_error():
    class Broken:
        max_batch = 4

        def score_pairs(self, replies, knowledge, max_batch=None):
            raise RuntimeError("engine failed")

    batcher = B.AsyncBatcher(Broken(), max_wait=0.1)

    async def run():
        return await asyncio.gather(*(batcher.score(r, k) for r, k in PAIRS[:3]), return_exceptions=True)

    got = asyncio.run(run())
    assert [type(g).__name__ for g in got] == ["RuntimeError"] * 3


def test_explanation_is_the_projects_reason_sentence():
    got = engine(8).score_pairs([r for r, _ in PAIRS], [k for _, k in PAIRS])
    reasons = [g.reason() for g in got]
    assert reasons[3].startswith("Not scored:")
    assert all(r.endswith(".") and "\n" not in r for r in reasons)


def test_harness_options_go_through_the_options_path():
    config, max_batch = B.harness_config({"variant": "dnli", "batch_size": 4, "max_batch": 8, "decoding": "greedy",
                                          "tiny": False})
    assert config == Q2Config.dnli(qg_batch_size=4, qa_batch_size=4, nli_batch_size=4, decoding="greedy")
    assert max_batch == 8
    assert B.harness_config({"tiny": False}) == (Q2Config(), None)  # None: the adapter's default
    with pytest.raises(ValueError, match="decoding"):
        B.harness_config({"decoding": "sampling", "tiny": False})
    with pytest.raises(TypeError, match="not a Q² option"):
        B.harness_config({"num_beam": 3, "tiny": False})
    with pytest.raises(ValueError, match="max_batch"):
        B.harness_config({"max_batch": 0, "tiny": False})


def test_evaluate_route_aggregation():
    """What lm-eval keeps of the `evaluate` module's per-reply outputs, aggregated by key."""
    per_reply = [{"q2": 1.0, "num_responses": 1, "scores": [1.0], "signature": "S"},
                 {"q2": None, "num_responses": 1, "scores": [None], "signature": "S"},
                 {"q2": 0.5, "num_responses": 1, "scores": [0.5], "signature": "S"}]
    assert L.evaluate_figure([d["q2"] for d in per_reply]) == 0.75
    assert L.evaluate_figure([d["num_responses"] for d in per_reply]) == 3
    assert L.evaluate_figure([d["scores"] for d in per_reply]) == 0.75
    assert L.evaluate_figure([d["signature"] for d in per_reply]) == "S"
    assert L.evaluate_figure([None, None]) == "n/a"


def test_lm_eval_documents_and_prompts(tmp_path):
    wow = L.wow_dataset(q2_options={"tiny": False}, limit_contexts=3)["test"]
    assert len(wow) == 3 and set(wow.column_names) >= {"topic", "message", "knowledge", "q2_options"}
    prompt = L.wow_doc_to_text(wow[0])
    assert prompt.startswith("Topic: ") and wow[0]["message"] in prompt and prompt.endswith("Wizard:")
    path = tmp_path / "dialogues.csv"
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["knowledge", "history"])
        w.writerow(["Bob Ross hosted a show.", "Hi! ||| Hello, what do you like? ||| I like Bob Ross."])
        w.writerow(["Paris is in France.", "Where is Paris?"])
    docs = L.dialogue_dataset(path=str(path), q2_options=json.dumps({"tiny": False}))["test"]
    assert docs[0]["history"] == ["Hi!", "Hello, what do you like?", "I like Bob Ross."]
    assert L.dialogue_doc_to_text(docs[0]).splitlines() == [
        "Knowledge: Bob Ross hosted a show.", "User: Hi!", "Assistant: Hello, what do you like?",
        "User: I like Bob Ross.", "Assistant:"]
    with pytest.raises(ValueError, match="path"):
        L.dialogue_dataset()
    with pytest.raises(ValueError, match="decoding"):
        L.wow_dataset(q2_options={"decoding": "x", "tiny": False})
    item = L.process_results(docs[1], [" Paris is in France.\n"])
    assert item["q2"] == ("Paris is in France.", "Paris is in France.", docs[1]["q2_options"])
    assert set(item) == set(L.FIGURES)


def test_lm_eval_aggregation_scores_the_whole_run_in_one_engine_call(monkeypatch):
    """lm-eval's figures: one engine call for the run however long (unless `max_batch` is set),
    shared by every figure; the same engine (one model load) for other batch sizes."""
    B.reset_engines()
    config, _ = B.harness_config({"tiny": False})
    e = B.engine(config)
    e.scorer = scripted_scorer()
    options = json.dumps({"tiny": False})
    items = [(r, k, options) for r, k in PAIRS] * 12  # 84 replies, more than the default batch of 64
    figures = [L.agg_q2(items), L.agg_q2_no_nli(items), L.agg_coverage(items), L.agg_signature(items)]
    assert e.engine_calls == 1 and e.replies == len(items)
    want = scripted_scorer().score([r for r, _, _ in items], [k for _, k, _ in items])
    assert figures[0] == want.q2 and figures[1] == want.q2_no_nli and figures[2] == want.coverage
    assert figures[3] == want.signature.short()
    three = json.dumps({"tiny": False, "max_batch": 30})
    L.agg_q2([(r, k, three) for r, k, _ in items[:-1]])
    assert B.engines() == [e] and e.engine_calls == 1 + 3
    with pytest.raises(ValueError, match="sets of Q² options"):
        L.agg_q2(items[:2] + [(PAIRS[0][0], PAIRS[0][1], three)])
    B.reset_engines()
