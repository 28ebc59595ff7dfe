"""A text longer than the coreference model reads is not resolved, and the explanation says it was
too long for the model instead of "nothing replaced" as if the model had found nothing: with a
scripted resolver (that declines long texts) and with a tiny random F-Coref model (max_doc_len 24)."""

from q2_metric.config import Q2Config
from q2_metric.display import reason_line
from q2_metric.steps.coref import resolve_dialogues
from q2_metric.testing.scripted import ScriptedCoref, scripted_scorer

HISTORY = ["Do you like coffee with a lot of caffeine in the morning before a long day of work?"]
RESPONSE = "Yes, it keeps me awake."
KNOWLEDGE = "Caffeine is a stimulant that keeps people awake."


class ShortSighted(ScriptedCoref):
    """Resolves texts of at most 40 characters; declines (None) the longer ones, as F-Coref's
    wrapper does for a text longer than its max_doc_len."""

    max_tokens = 8

    def clusters(self, texts):
        found = super().clusters(texts)
        return [None if len(t) > 40 else c for t, c in zip(texts, found)]


def test_the_trace_says_too_long_and_keeps_the_response():
    resolver = ShortSighted(groups=[["caffeine", "it"]])
    long_trace, short_trace = resolve_dialogues(
        [HISTORY, []], [RESPONSE, "I had coffee. It was hot."], resolver
    )
    assert long_trace.resolved == RESPONSE and long_trace.replacements == []
    assert long_trace.skipped == "the text was too long for the coreference model (it reads at most 8 tokens)"
    assert short_trace.skipped is None


def test_the_explanation_names_the_length_not_an_empty_result():
    config = Q2Config(coref=True)
    scorer = scripted_scorer(config, coref=ShortSighted(groups=[["caffeine", "it"]]))
    result = scorer.score(
        [RESPONSE, "Caffeine keeps me up."], [KNOWLEDGE, KNOWLEDGE], histories=[HISTORY, []]
    )
    long_res, short_res = result.responses
    assert reason_line(long_res).endswith(
        " Coreference (1 earlier turn): nothing replaced, the text was too long for the coreference model (it "
        "reads at most 8 tokens); scored as written."
    )
    assert reason_line(short_res).endswith(
        " Coreference (within the response alone: no history given): nothing replaced."
    )
    details = result.to_dict(details=True)["details"]
    assert details[0]["coref"]["skipped"].startswith("the text was too long")
    assert "skipped" not in details[1]["coref"]  # the key appears only when a text was not read


def test_fcoref_declines_a_text_past_max_doc_len(tmp_path, rows):
    from q2_metric.models.hf_coref import HFCorefResolver, build_tiny_coref_model

    texts = [r["knowledge"] for r in rows]
    path = build_tiny_coref_model(tmp_path / "short", texts, max_doc_len=24)
    resolver = HFCorefResolver(Q2Config(coref=True, coref_model=path, device="cpu"))
    out = resolver.clusters(["He said it.", " ".join(texts[:4]), "She did it."])
    assert out[1] is None and out[0] is not None and out[2] is not None
    assert resolver.max_tokens == 24 and resolver.skipped == 1
    [trace] = resolve_dialogues([[]], [" ".join(texts[:4])], resolver)
    assert trace.skipped == "the text was too long for the coreference model (it reads at most 24 tokens)"
