"""The package's identity: its version (read by setup.cfg and `q2 --version`) and the metric's card
texts, shared by the `evaluate` module (`_info()`) and the Hub metric card: one source of truth."""

__version__ = "0.5.0"

CITATION = """\
@inproceedings{honovich-etal-2021-q2,
    title = "$Q^{2}$: Evaluating Factual Consistency in Knowledge-Grounded Dialogues via Question Generation and Question Answering",
    author = "Honovich, Or and Choshen, Leshem and Aharoni, Roee and Neeman, Ella and Szpektor, Idan and Abend, Omri",
    booktitle = "Proceedings of the 2021 Conference on Empirical Methods in Natural Language Processing",
    year = "2021",
    publisher = "Association for Computational Linguistics",
    pages = "7856--7870",
}
"""

DESCRIPTION = """\
Q² measures the factual consistency of a knowledge-grounded dialogue response with the knowledge \
it was grounded on. For every informative span of the response (spaCy named entities and noun \
chunks) a T5 model generates a question whose answer is that span; a SQuAD 2.0 question-answering \
model answers it from the response (questions not answered with the span are dropped) and from the \
knowledge; the two answers are compared by token F1 and, when they differ, by an NLI model. The \
response score is the mean over its questions; a response with no valid question falls back to \
end-to-end NLI. Scores lie in [0, 1]; higher means more consistent. The token-F1-only variant is \
reported as `q2_no_nli`."""

HOMEPAGE = "https://github.com/orhonovich/q-squared"
PAPER = "https://aclanthology.org/2021.emnlp-main.619/"
LICENSE = "MIT"

# Table 2 (final version): mean Q² per split of the human-annotated Wizard of Wikipedia set.
PAPER_VALUES = {
    ("dodecaDialogue", "inconsistent"): 0.238,
    ("dodecaDialogue", "consistent"): 0.696,
    ("MemNet", "inconsistent"): 0.135,
    ("MemNet", "consistent"): 0.756,
}
PAPER_ACCURACY = 0.773  # Table 3, threshold 0.5
PAPER_SPEARMAN = 0.9798  # Table 4, system-level bootstrap
