"""NeMo Guardrails, through its own runner (`LLMRails.generate` on the config folder the package ships,
its flow `check consistency with q2` as the output rail, NeMo's `FakeLLMModel` as the main model: the bot's
answer is the response under test and the knowledge is the conversation's `relevant_chunks`): the
answer goes out when the Q² service says `consistent` and is replaced by the refusal otherwise, as
`q2 score --tiny --threshold 0.5` (the command line) decides on the same pairs. The service is the
real `q2 serve` app on a free 127.0.0.1 port (tests/support/serve.py). Fail closed: a service that cannot be reached, answers 503 or 401, or knowledge that
is missing, blocks the answer."""

from __future__ import annotations

import pytest
from support.guardrails import q2_score_outcomes, sample_pairs
from support.harness import env, set_in_process
from support.serve import closed_port_url, q2_service, refusing_service

pytest.importorskip("nemoguardrails")

THRESHOLD = 0.5
QUESTION = "Tell me more about it."


@pytest.fixture(scope="module")
def pairs() -> list[tuple[str, str]]:
    return sample_pairs(10)


@pytest.fixture(scope="module")
def environ(harness_tiny, tmp_path_factory):
    return env(harness_tiny["q2"], tmp_path_factory.mktemp("nemo-env"))


@pytest.fixture(scope="module")
def expected(pairs, environ, tmp_path_factory) -> list[str]:
    want = q2_score_outcomes(pairs, environ, tmp_path_factory.mktemp("nemo-cli"), THRESHOLD)
    decisions = [w["decision"] for w in want]
    assert set(decisions) == {"consistent", "inconsistent"}, decisions
    return decisions


@pytest.fixture
def scorer(environ, monkeypatch):
    from q2_metric import Q2Scorer

    set_in_process(monkeypatch, environ)
    return Q2Scorer(tiny=True)


def refusal(verdict: str = "unverified") -> str:
    """The refusal the shipped flow says for `verdict` (its `bot inform answer unverified`, or
    `... inconsistent`), read from the file."""
    from q2_metric.guardrails.nemo import config_folder

    text = (config_folder() / "q2.co").read_text(encoding="utf-8")
    return text.split(f"define bot inform answer {verdict}", 1)[1].strip().split("\n")[0].strip('"')


def test_the_two_refusals_say_what_happened():
    """The bot said "I could not check that answer against my sources" when Q² did check it and
    found it inconsistent: each verdict has its own refusal."""
    assert refusal("unverified").startswith("I could not check that answer")
    assert refusal("inconsistent").startswith("I checked that answer against my sources")


def chat(url: str | None, answer: str, knowledge: str | None, **q2: object) -> tuple[str, object]:
    """One turn through NeMo Guardrails: the user's question, the main model's `answer`; the reply
    the user gets and the rails' context ($q2_verdict ...)."""
    from nemoguardrails import LLMRails, RailsConfig
    from nemoguardrails.testing import FakeLLMModel

    from q2_metric.guardrails.nemo import config_folder

    config = RailsConfig.from_path(str(config_folder()))
    config.custom_data["q2"] = {**config.custom_data["q2"], "threshold": THRESHOLD, "timeout": 10, **q2}
    if url is not None:
        config.custom_data["q2"]["url"] = url
    rails = LLMRails(config, llm=FakeLLMModel(responses=[answer]))
    messages: list[dict] = [{"role": "user", "content": QUESTION}]
    if knowledge is not None:
        messages.insert(0, {"role": "context", "content": {"relevant_chunks": knowledge}})
    out = rails.generate(messages=messages, options={"output_vars": True})
    return out.response[0]["content"], out.output_data


def test_the_rail_lets_through_what_q2_score_calls_consistent_and_blocks_the_rest(scorer, pairs, expected):
    with q2_service(scorer) as url:
        for (response, knowledge), decision in zip(pairs, expected):
            reply, context = chat(url, response, knowledge)
            if decision == "consistent":
                assert reply == response, (reply, response)
                assert context["q2_verdict"] == "consistent"
            else:
                assert reply == refusal("inconsistent"), (reply, response)
                assert context["q2_verdict"] == "inconsistent" and context["q2_reason"]


def test_an_unreachable_service_blocks_the_answer(pairs, expected):
    response, knowledge = next(p for p, d in zip(pairs, expected) if d == "consistent")
    reply, context = chat(closed_port_url(), response, knowledge)
    assert reply == refusal()
    assert context["q2_verdict"] == "unverified" and "could not be reached" in context["q2_reason"]


def test_a_refusing_service_or_missing_knowledge_blocks_the_answer(scorer, pairs, expected, monkeypatch):
    response, knowledge = next(p for p, d in zip(pairs, expected) if d == "consistent")
    with refusing_service(503) as url:
        reply, context = chat(url, response, knowledge)
        assert reply == refusal() and "HTTP 503" in context["q2_reason"]
    with q2_service(scorer, api_key="s3cret") as url:
        reply, context = chat(url, response, knowledge)
        assert reply == refusal() and "HTTP 401" in context["q2_reason"]
        monkeypatch.setenv("Q2_TEST_KEY", "s3cret")
        reply, context = chat(url, response, knowledge, api_key_env="Q2_TEST_KEY")
        assert reply == response and context["q2_verdict"] == "consistent"
        reply, context = chat(url, response, None)  # no relevant_chunks: nothing to check against
        assert reply == refusal() and "no knowledge" in context["q2_reason"]


# A stand-in service that misbehaves on purpose (tests/support/serve.py), each way, and the words of
# the one sentence in `$q2_reason`; a consistent reply bent off the contract included.
BROKEN = {
    "not http": ("not http", None, "answered with something that is not HTTP"),
    "cut body": ("cut body", None, "cut its answer short"),
    "not utf-8": ("not utf-8", None, "answered with text that is not UTF-8"),
    "not json": ("not json", None, "answered with something that is not JSON"),
    "a consistent score as text": (
        "wrong shape",
        b'{"results": [{"id": "0", "status": "scored", "score": "high", "verdict": "consistent"}]}',
        "item 0's score is 'high', not a number from 0 to 1",
    ),
    "trickle": ("trickle", None, "did not answer within 1 s"),
    "stall": ("stall", None, "did not answer within 1 s"),
    "close": ("close", None, "closed the connection without answering"),
    "reset": ("reset", None, "broke the connection off"),
}


@pytest.mark.parametrize("case", list(BROKEN))
def test_a_broken_service_blocks_the_answer_as_unverified(case):
    """Whatever the service answers off its contract, or too slowly for the 1 s deadline, the rail
    blocks the answer with the verdict `unverified` and one sentence, and `generate` returns."""
    import time

    from support.serve import misbehaving_service

    mode, body, words = BROKEN[case]
    answer, knowledge = "Bob Ross hosted the show.", "Bob Ross hosted The Joy of Painting."
    with misbehaving_service(mode, **({"body": body} if body else {})) as url:
        start = time.monotonic()
        reply, context = chat(url, answer, knowledge, timeout=1)
        elapsed = time.monotonic() - start
    assert reply == refusal(), reply
    assert context["q2_verdict"] == "unverified", context
    assert context["q2_reason"].startswith("The Q² service at ") and words in context["q2_reason"], context
    assert "\n" not in context["q2_reason"]
    if mode in ("trickle", "stall"):  # the deadline (a correctness bound, with a generous margin)
        assert elapsed < 1 + 2, elapsed
