"""Table 7 (the ladder) and Table 8 (the random-knowledge control) of the first arXiv version: the
rungs and the donor draw as pure functions, the tables on scripted components with figures worked
out by hand (the command: tests/unit/cli/meta_eval/test_ladder.py)."""

import pytest

from q2_metric.components import ParsedText
from q2_metric.config import Q2Config
from q2_metric.meta.ladder import (
    control_table,
    donor_knowledge,
    ladder_configs,
    ladder_table,
    run_control,
    run_ladder,
)
from q2_metric.testing.scripted import ScriptedCoref, ScriptedParser, ScriptedQA, ScriptedQG, scripted_scorer


def test_each_rung_adds_one_change_and_top_k_is_the_default():
    (n0, base), (n1, personal), (n2, topk), (n3, coref) = ladder_configs(Q2Config())
    assert [n0, n1, n2, n3] == ["base", "+filter personal", "+top-k (k=5)", "+coreference"]
    assert (base.personal_filter, base.num_return_sequences, base.coref) == (False, 1, False)
    assert (personal.personal_filter, personal.num_return_sequences) == (True, 1)
    assert topk == Q2Config()  # the released code's default: 5 beam questions, first valid kept
    assert coref == Q2Config(coref=True)


ROWS = [
    dict(episode_idx="1", round="0", knowledge="K1"),
    dict(episode_idx="1", round="1", knowledge="K2"),
    dict(episode_idx="2", round="0", knowledge="K3"),
    dict(episode_idx="1", round="2", knowledge="K1"),
]


def test_donor_knowledge_rules_and_seed():
    same = donor_knowledge(ROWS, "same", seed=0)
    # row 0 (ep 1, K1): other rounds of ep 1 with other knowledge: only K2; row 1: K1 (rounds 0 or 2);
    # row 2: ep 2 has no other round; row 3 (round 2, K1): K2
    assert same == ["K2", "K1", None, "K2"]
    other = donor_knowledge(ROWS, "other", seed=0)
    assert other[0] == other[1] == other[3] == "K3" and other[2] in ("K1", "K2")
    assert donor_knowledge(ROWS, "other", seed=5) == donor_knowledge(ROWS, "other", seed=5)
    draws = {tuple(donor_knowledge(ROWS, "other", seed=s)) for s in range(20)}
    assert len(draws) == 2  # row 2 draws K1 or K2 depending on the seed
    with pytest.raises(ValueError):
        donor_knowledge(ROWS, "random")


class TopKQG(ScriptedQG):
    """Scripted questions cut to the configured number per candidate, as the beam search returns them."""

    def __init__(self, questions, config):
        super().__init__(questions)
        self.config = config  # the scorer's reconfigure() sets it for each rung

    def generate(self, answers, contexts):
        return [q[: self.config.questions_per_candidate] for q in super().generate(answers, contexts)]


R = "Yes, it stimulates the nervous system!"
RESOLVED = "Yes, caffeine stimulates the nervous system!"
K = "Caffeine is a central nervous system stimulant."
PERSONAL_Q = "What do you like?"


def test_ladder_on_scripted_components_by_hand():
    config = Q2Config()
    parser = ScriptedParser(
        {
            R: ParsedText(entities=["it"]),
            RESOLVED: ParsedText(entities=["caffeine"]),
            PERSONAL_Q: ParsedText(
                tokens=[("What", "dobj"), ("do", "aux"), ("you", "nsubj"), ("like", "ROOT")]
            ),
        }
    )
    qg = TopKQG({("it", R): [PERSONAL_Q, "what about it?"]}, config)
    qa = ScriptedQA({(PERSONAL_Q, R): "it", (PERSONAL_Q, K): None})
    scorer = scripted_scorer(config, parser=parser, qg=qg, qa=qa, coref=ScriptedCoref([["caffeine", "it"]]))
    row = dict(response=R, knowledge=K, message="I drink coffee for caffeine.")
    table = run_ladder(scorer, {"split": [row]})
    got = [(table[name]["split"].q2, table[name]["split"].coverage) for name in table]
    # base: the personal question is the only one (k=1), valid, unanswered by the knowledge -> 0;
    # +filter personal: it is dropped, no valid question -> fallback NLI neutral -> 0.5, coverage 0;
    # +top-k: "what about it?" is valid, "it" is not in the knowledge -> 0;
    # +coreference: "caffeine" asked of the resolved response, answered "Caffeine" -> 1
    assert got == [(0.0, 1.0), (0.5, 0.0), (0.0, 1.0), (1.0, 1.0)]
    assert "| +coreference | 1.000 | 1.000 |" in ladder_table(table)


def test_control_on_scripted_components_by_hand():
    rows = [
        dict(episode_idx="1", round="0", response="Paris is in France.", knowledge="Paris is in France."),
        dict(episode_idx="1", round="1", response="Rome is in Italy.", knowledge="Rome is in Italy."),
        dict(episode_idx="2", round="0", response="Oslo is in Norway.", knowledge="Oslo is in Norway."),
    ]
    table = run_control(scripted_scorer(), {"split": rows}, seed=3)
    c = {
        name: (cell.responses, cell.valid_questions, cell.q2, cell.no_answer_share)
        for name, cell in table.items()
    }
    # two capitalised names per response, each a valid question; own knowledge answers both (F1 1);
    # any other knowledge holds neither name: no answer, span score 0. Row 3 has no other turn.
    assert c == {
        "original": (3, 6, 1.0, 0.0),
        "same dialogue, other turn": (2, 4, 0.0, 1.0),
        "other dialogue": (3, 6, 0.0, 1.0),
    }
    assert "| same dialogue, other turn | 2 | 4 | 0.000 | 1.000 |" in control_table(table)
