"""A RAGTruth folder in its released layout (`response.jsonl`, `source_info.jsonl`): every task
type, overlapping labels, every split and quality value, and three bad rows (an unknown task type,
a label beyond its response, no such source)."""

import json
from pathlib import Path

QA_Q, QA_P = "Who painted it?", "passage 1: Bob Ross painted it in 1983."
SUMMARY = "The council met on Monday and approved the new park."
DATA = {"name": "Cafe Uno", "attributes": {"WiFi": "free"}, "review_info": [{"review_stars": 4}]}

SOURCES = [
    {
        "source_id": "s1",
        "task_type": "QA",
        "source_info": {"question": QA_Q, "passages": QA_P},
        "prompt": "P1",
    },
    {"source_id": "s2", "task_type": "Summary", "source_info": SUMMARY, "prompt": "P2"},
    {"source_id": "s3", "task_type": "Data2txt", "source_info": DATA, "prompt": "P3"},
    {"source_id": "s4", "task_type": "Chat", "source_info": "x", "prompt": "P4"},
]
R1 = "Bob Ross painted it in 1985 on a Tuesday."  # 41 characters
R3 = "Cafe Uno has paid WiFi."


def row(rid, sid, response, labels=(), split="test", quality="good"):
    return {
        "id": rid,
        "source_id": sid,
        "model": "gpt-4-0613",
        "temperature": 0.7,
        "labels": [
            {"start": s, "end": e, "text": response[s:e], "meta": "", "label_type": "Evident Conflict"}
            for s, e in labels
        ],
        "split": split,
        "quality": quality,
        "response": response,
    }


RESPONSES = [
    row("1", "s1", R1, [(5, 15), (10, 20)]),  # overlapping labels
    row("2", "s2", "The council approved the park."),
    row("3", "s3", R3, [(0, 4)]),
    row("4", "s1", "Bob Ross.", split="train"),
    row("5", "s2", "The council met.", quality="truncated"),
    row("6", "s3", "I cannot answer.", quality="incorrect_refusal"),
    row("7", "s4", "Hello."),  # its source has an unknown task type
    row("8", "s1", "Bob.", [(0, 9)]),  # a label beyond the response
    row("9", "s9", "Who knows."),  # no such source
    row("10", "s2", "The council met on Monday."),
]


def write_ragtruth(folder: Path, responses=RESPONSES, sources=SOURCES) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "response.jsonl").write_text("".join(json.dumps(r) + "\n" for r in responses), encoding="utf-8")
    (folder / "source_info.jsonl").write_text(
        "".join(json.dumps(s) + "\n" for s in sources), encoding="utf-8"
    )
    return folder
