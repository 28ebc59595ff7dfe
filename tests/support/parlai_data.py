"""A small Wizard of Wikipedia data folder in ParlAI's format, made from the annotated contexts."""

import csv
import json
from pathlib import Path

from support.data import ROOT

ANNOTATIONS = ROOT / "parlai_ext" / "data" / "cross_annotation.csv"


def make_wow_datapath(root: Path, episodes: int = 6, checked: bool = True) -> Path:
    """`root/wizard_of_wikipedia/` with a `.built` file and train/valid/test json; returns root."""
    with open(ANNOTATIONS, newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))[:episodes]
    data = []
    for i, row in enumerate(rows):
        topic, sentence = row["topic"], row["knowledge"]
        wizard = {
            "speaker": "1_Wizard",
            "text": row["gold"],
            "retrieved_topics": [],
            "retrieved_passages": [],
        }
        if checked:
            no_passage = i == len(rows) - 1  # one turn grounded on nothing: skipped by Q²
            wizard["checked_sentence"] = (
                {"no_passages_used": "no_passages_used"}
                if no_passage
                else {f"chosen_{topic.replace(' ', '_')}_0": sentence}
            )
            wizard["checked_passage"] = (
                {"no_passages_used": "no_passages_used"}
                if no_passage
                else {f"chosen_{topic.replace(' ', '_')}": topic}
            )
        data.append(
            {
                "chosen_topic": topic,
                "chosen_topic_passage": [sentence],
                "wizard_eval": 5,
                "persona": "",
                "dialog": [
                    {
                        "speaker": "0_Apprentice",
                        "text": row["message"],
                        "retrieved_topics": [topic],
                        "retrieved_passages": [{topic: [sentence]}],
                    },
                    wizard,
                ],
            }
        )
    folder = root / "wizard_of_wikipedia"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / ".built").write_text("2026-01-01\n1.0")
    for name in ("data.json", "train.json", "valid_random_split.json", "test_random_split.json"):
        (folder / name).write_text(json.dumps(data))
    return root


def write_annotations(path: Path, n: int, response=None) -> Path:
    """A copy of the first `n` annotated rows whose `dodeca_response` is `response(i, row)`
    (default: unchanged), for `--q2-annotations`."""
    with open(ANNOTATIONS, newline="", encoding="utf-8") as f:
        reader = csv.DictReader(f)
        fields, rows = reader.fieldnames, list(reader)[:n]
    for i, row in enumerate(rows):
        if response is not None:
            row["dodeca_response"] = response(i, row)
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=fields)
        writer.writeheader()
        writer.writerows(rows)
    return path
