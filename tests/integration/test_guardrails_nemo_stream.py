"""NeMo Guardrails' streaming output rail, through its own runtime: `LLMRails.stream_async` (and
`generate_async`) on the config folder the package ships for it (`nemo.stream_config_folder()`:
`rails.output.streaming` on, `stream_first: false`), NeMo's `FakeLLMModel` as the main model (it
streams the answer word by word), the knowledge given explicitly as the context variable
`$q2_knowledge`, the real `q2 serve` app on a free 127.0.0.1 port (tests/support/serve.py).

A chunk goes out only when each sentence of its text and the whole text are consistent; the
yardsticks: `q2 score --tiny --threshold 0.5` (the command line, the batch path) for the whole
answer, `Q2Stream` in process for its sentences, and NeMo's own `RollingBuffer` for the chunks'
texts. Fail closed: a service down, refusing or misbehaving, or no `$q2_knowledge` (the
`relevant_chunks` of the other rail are not read), ends the stream with NeMo's error object before
any text. IORails: the rail manifest (`nemo_rail.RAIL`) compiles and runs through IORails' own
`compile_rail` from NeMo's catalog with it added; a plain IORails config refuses it (its catalog is
NeMo's built-ins only), as `nemo_rail` says."""

from __future__ import annotations

import asyncio
import json

import pytest
from support.guardrails import q2_score_outcomes, sample_pairs
from support.harness import env, set_in_process
from support.serve import closed_port_url, misbehaving_service, q2_service, refusing_service

pytest.importorskip("nemoguardrails")

THRESHOLD = 0.5
QUESTION = "Tell me more about it."


@pytest.fixture(scope="module")
def pairs() -> list[tuple[str, str]]:
    return sample_pairs(10)


@pytest.fixture(scope="module")
def environ(harness_tiny, tmp_path_factory):
    return env(harness_tiny["q2"], tmp_path_factory.mktemp("nemo-stream-env"))


@pytest.fixture(scope="module")
def decisions(pairs, environ, tmp_path_factory) -> list[str]:
    want = q2_score_outcomes(pairs, environ, tmp_path_factory.mktemp("nemo-stream-cli"), THRESHOLD)
    decisions = [w["decision"] for w in want]
    assert set(decisions) == {"consistent", "inconsistent"}, decisions
    return decisions


@pytest.fixture
def scorer(environ, monkeypatch):
    from q2_metric import Q2Scorer
    from q2_metric.runtime import cache

    set_in_process(monkeypatch, environ)
    cache.reset()
    yield Q2Scorer(tiny=True)
    cache.reset()


def sentences_ok(text: str, knowledge: str) -> bool:
    """Whether `Q2Stream` in process finds every sentence of `text` consistent."""
    from q2_metric.runtime.stream import Q2Stream

    stream = Q2Stream(knowledge, threshold=THRESHOLD, tiny=True)
    stream.feed(text)
    final = stream.end()
    return all(r.consistent for r in stream.sentences) and final.consistent


def metric(url: str, name: str) -> float:
    """A counter's value from the service's /metrics (0 when absent)."""
    import httpx
    from prometheus_client.parser import text_string_to_metric_families

    text = httpx.get(url + "/metrics", timeout=30).text
    return sum(
        sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
        if sample.name == name
    )


def rails(url: str | None, answer: str, **streaming: object):
    from nemoguardrails import LLMRails, RailsConfig
    from nemoguardrails.testing import FakeLLMModel

    from q2_metric.guardrails.nemo import stream_config_folder

    config = RailsConfig.from_path(str(stream_config_folder()))
    config.custom_data["q2"] = {**config.custom_data["q2"], "threshold": THRESHOLD, "timeout": 10}
    if url is not None:
        config.custom_data["q2"]["url"] = url
    for name, value in streaming.items():
        setattr(config.rails.output.streaming, name, value)
    return LLMRails(config, llm=FakeLLMModel(responses=[answer]))


def messages(knowledge: object, key: str = "q2_knowledge") -> list[dict]:
    return [{"role": "context", "content": {key: knowledge}}, {"role": "user", "content": QUESTION}]


def stream(url: str | None, answer: str, knowledge: object, key: str = "q2_knowledge", **streaming: object):
    """The chunks `stream_async` yields."""

    async def run() -> list[str]:
        return [
            c async for c in rails(url, answer, **streaming).stream_async(messages=messages(knowledge, key))
        ]

    return asyncio.run(run())


def blocked(chunk: str) -> bool:
    """Whether a chunk is NeMo's error object for a block by the Q² rail."""
    try:
        error = json.loads(chunk)["error"]
    except (ValueError, KeyError, TypeError):
        return False
    return error["code"] == "content_blocked" and error["param"] == "check answer with q2"


def refusal(verdict: str) -> str:
    from q2_metric.guardrails.nemo import stream_config_folder

    text = (stream_config_folder() / "q2.co").read_text(encoding="utf-8")
    return text.split(f"define bot inform answer {verdict}", 1)[1].strip().split("\n")[0].strip('"')


def test_the_streaming_rail_lets_out_what_q2_allows(scorer, pairs, decisions):
    """One chunk per answer (the shipped chunk_size, 200 tokens): the answer streams out when the
    whole of it and each sentence are consistent, and is replaced by NeMo's error object otherwise;
    `generate_async` through the same rail gives the answer or the refusal for the verdict."""
    verdicts = []
    with q2_service(scorer) as url:
        for (response, knowledge), decision in zip(pairs, decisions):
            allowed = decision == "consistent" and sentences_ok(response, knowledge)
            verdicts.append(allowed)
            chunks = stream(url, response, knowledge)
            if allowed:
                assert "".join(chunks) == response, (chunks, response)
            else:
                assert len(chunks) == 1 and blocked(chunks[0]), chunks
            reply = asyncio.run(rails(url, response).generate_async(messages=messages(knowledge)))
            if allowed:
                assert reply["content"] == response
            else:
                assert reply["content"] in (refusal("inconsistent"), refusal("unverified")), reply
        # a list of passages is knowledge too
        n = verdicts.index(True)
        response, knowledge = pairs[n]
        half = len(knowledge) // 2
        assert "".join(stream(url, response, [knowledge[:half], knowledge[half:]])) == response
    assert True in verdicts and False in verdicts, verdicts


def test_each_chunk_is_checked_before_it_goes_out(scorer, pairs):
    """Small chunks (6 words, 2 carried over): NeMo's own buffer cuts the answer; each chunk's text
    goes out only when the rail allows it, and the stream ends at the first chunk it blocks."""
    from nemoguardrails.rails.llm.buffer import RollingBuffer

    async def batches(answer: str) -> list[tuple[str, str]]:
        words = answer.split(" ")

        async def tokens():
            for n, word in enumerate(words):
                yield word + " " if n < len(words) - 1 else word

        buffer = RollingBuffer(buffer_context_size=2, buffer_chunk_size=6)
        return [
            (buffer.format_chunks(b.processing_context), buffer.format_chunks(b.user_output_chunks))
            async for b in buffer.process_stream(tokens())
        ]

    seen = {"passed": 0, "blocked": 0}
    with q2_service(scorer) as url:
        for response, knowledge in pairs:
            want: list[str] = []
            for text, out in asyncio.run(batches(response)):
                if not sentences_ok(text, knowledge):
                    want.append("BLOCKED")
                    break
                want.append(out)
            opened = metric(url, "q2_serve_streams_opened_total")
            chunks = stream(url, response, knowledge, chunk_size=6, context_size=2)
            # one check per chunk, up to the one blocked, and NeMo's own run of its output rails on
            # the whole answer when the generation ends (its `process bot message` flow)
            assert metric(url, "q2_serve_streams_opened_total") - opened == len(want) + 1
            got = ["BLOCKED" if blocked(c) else c for c in chunks]
            assert "".join(x for x in got if x != "BLOCKED") == "".join(x for x in want if x != "BLOCKED")
            assert (got[-1] == "BLOCKED") is (want[-1] == "BLOCKED"), (got, want)
            seen["blocked" if want[-1] == "BLOCKED" else "passed"] += 1
            if want[-1] == "BLOCKED" and len(want) > 1:
                seen["blocked after text"] = 1
    assert seen["passed"] and seen["blocked"] and seen.get("blocked after text"), seen


def test_the_knowledge_is_the_explicit_variable_only(scorer, pairs, decisions, caplog):
    n = decisions.index("consistent")
    response, knowledge = pairs[n]
    with q2_service(scorer) as url:
        chunks = stream(url, response, knowledge, key="relevant_chunks")
    assert len(chunks) == 1 and blocked(chunks[0]), chunks
    assert "there is no knowledge ($q2_knowledge)" in caplog.text


@pytest.mark.parametrize(
    "case",
    ["down", "503", "not http", "cut body", "not json", "stall", "wrong shape", "reset"],
)
def test_a_broken_service_ends_the_stream_before_any_text(case, caplog):
    """Whatever keeps the service from answering in its contract, within the 1 s deadline, blocks
    the first chunk: nothing goes out, and the log says why in one sentence."""
    import contextlib

    answer, knowledge = "Bob Ross hosted the show. It ran for years.", "Bob Ross hosted The Joy of Painting."
    if case == "down":
        place = contextlib.nullcontext(closed_port_url())
    elif case == "503":
        place = refusing_service(503)
    else:
        place = misbehaving_service(case, body=b'{"stream": ""}')
    with place as url:
        chunks = _stream_with_timeout(url, answer, knowledge)
    assert len(chunks) == 1 and blocked(chunks[0]), chunks
    assert "Q² blocked the answer: The Q² service at " in caplog.text, caplog.text


def _stream_with_timeout(url: str, answer: str, knowledge: str) -> list[str]:
    from nemoguardrails import LLMRails, RailsConfig
    from nemoguardrails.testing import FakeLLMModel

    from q2_metric.guardrails.nemo import stream_config_folder

    config = RailsConfig.from_path(str(stream_config_folder()))
    config.custom_data["q2"] = {"url": url, "timeout": 1}

    async def run() -> list[str]:
        engine = LLMRails(config, llm=FakeLLMModel(responses=[answer]))
        return [c async for c in engine.stream_async(messages=messages(knowledge))]

    return asyncio.run(run())


def test_the_rail_manifest_runs_through_iorails_compiled_rail(scorer, pairs, decisions):
    """NeMo's own manifest machinery: the manifest joins NeMo's catalog without a collision, and
    IORails' `compile_rail` compiles it from there and runs it (the knowledge as the rail's
    `$knowledge=` parameter); a plain IORails config refuses it, as `nemo_rail` says."""
    from nemoguardrails import RailsConfig
    from nemoguardrails.guardrails.compiled_rail import RailDependencies, compile_rail, unservable_reason
    from nemoguardrails.guardrails.iorails import IORails
    from nemoguardrails.manifests import Binding, RailDirection

    from q2_metric.guardrails.nemo import stream_config_folder
    from q2_metric.guardrails.nemo_rail import RAIL, catalog

    config = RailsConfig.from_path(str(stream_config_folder()))
    assert "has no surface named 'check answer with q2'" in str(IORails.unsupported_reason(config))
    # a required binding to the turn's knowledge: what IORails 0.24 cannot supply
    surface = RAIL.surfaces[0]
    needing = surface.model_copy(
        update={"bindings": (*surface.bindings[:1], Binding.context("knowledge", "q2_knowledge"))}
    )
    manifest = RAIL.model_copy(update={"spec": RAIL.spec.model_copy(update={"surfaces": (needing,)})})
    from nemoguardrails.manifests import RailCatalog, RailManifestRecord, default_rail_catalog

    strict = RailCatalog(
        [*default_rail_catalog().records.values(), RailManifestRecord(manifest=manifest, source="test")]
    )
    assert "needs context variable(s) 'q2_knowledge', which IORails does not supply" in str(
        unservable_reason("check answer with q2", RailDirection.OUTPUT, catalog=strict)
    )

    full = catalog()
    with q2_service(scorer) as url:
        config.custom_data["q2"] = {"url": url, "threshold": THRESHOLD, "timeout": 10}
        deps = RailDependencies(llms={}, llm_task_manager=None, config=config)
        seen = set()
        for (response, knowledge), decision in zip(pairs, decisions):
            flow = f"check answer with q2 $knowledge={json.dumps(knowledge)}"
            if "\\" in flow:  # (a quoted value takes no escapes)
                continue
            assert unservable_reason(flow, RailDirection.OUTPUT, catalog=full) is None
            rail = compile_rail(flow, RailDirection.OUTPUT, deps, catalog=full)
            outcome = asyncio.run(rail.run([{"role": "user", "content": QUESTION}], response))
            allowed = decision == "consistent" and sentences_ok(response, knowledge)
            assert outcome.is_blocked is (not allowed), (response, outcome)
            assert outcome.metadata["q2_verdict"] in ("consistent", "inconsistent", "unverified")
            seen.add(allowed)
        assert seen == {True, False}, seen
    config.custom_data["q2"]["url"] = closed_port_url()
    rail = compile_rail(
        'check answer with q2 $knowledge="Bob Ross hosted it."', RailDirection.OUTPUT, deps, catalog=full
    )
    outcome = asyncio.run(rail.run([{"role": "user", "content": QUESTION}], "Bob Ross hosted it."))
    assert outcome.is_blocked and "could not be reached" in str(outcome.metadata["q2_reason"])
