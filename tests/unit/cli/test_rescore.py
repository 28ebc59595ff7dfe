"""`q2 rescore` in process on the tiny random models: what it prints, its exit code, its refusals."""

from __future__ import annotations

import json

import pytest

from q2_metric.cli import main


def _flags(tiny_models):
    return [
        "--qg-model",
        tiny_models["qg"],
        "--qa-model",
        tiny_models["qa"],
        "--nli-model",
        tiny_models["nli"],
        "--device",
        "cpu",
        "--max-question-length",
        "8",
        "--quiet",
    ]


def _log(path, lines):
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    return path


def test_prints_where_every_sample_went_and_exit_code_3_with_a_bad_one(tiny_models, tmp_path, capsys):
    log = _log(
        tmp_path / "samples_t.jsonl",
        [
            {
                "doc_id": 0,
                "doc": {"knowledge": "Bob Ross hosted The Joy of Painting."},
                "filtered_resps": ["Bob Ross hosted it."],
            },
            {"doc_id": 1, "doc": {"knowledge": "Paris is in France."}, "filtered_resps": [""]},
            {"doc_id": 2, "doc": {}, "filtered_resps": ["Paris."]},
        ],
    )
    code = main(["rescore", str(log), *_flags(tiny_models)])
    out, err = capsys.readouterr()
    assert code == 3
    assert out.startswith(
        "Rescored 1/3 samples of the lm-eval log (1 empty, 1 bad; reply 'filtered_resps.0', "
        "knowledge 'doc.knowledge') -> "
    )
    assert "doc 2: field 'doc.knowledge' (knowledge) is missing; sample skipped" in err
    lines = [json.loads(x) for x in (tmp_path / "samples_t.jsonl.q2.jsonl").read_text().splitlines()]
    assert [x["status"] for x in lines] == ["scored", "empty", "bad"]


def test_json_format_is_the_summary(tiny_models, tmp_path, capsys):
    log = _log(
        tmp_path / "s.jsonl",
        [
            {
                "doc_id": 0,
                "doc": {"knowledge": "Paris is in France."},
                "filtered_resps": ["Paris is in France."],
            }
        ],
    )
    assert (
        main(
            [
                "rescore",
                str(log),
                "-o",
                str(tmp_path / "o.jsonl"),
                "--summary",
                str(tmp_path / "s.json"),
                "--format",
                "json",
                *_flags(tiny_models),
            ]
        )
        == 0
    )
    data = json.loads(capsys.readouterr().out)
    assert data == json.loads((tmp_path / "s.json").read_text())
    assert data["num_samples"] == data["num_scored"] == 1 and data["signature"].startswith("q2:")


@pytest.mark.parametrize(
    "args, says",
    [
        (["--chunk-size", "0"], "--chunk-size must be at least 1, got 0."),
        (["--response-field", "resps.0.0"], "No sample of the log"),
    ],
)
def test_refusals_are_one_line_before_work(tiny_models, tmp_path, capsys, args, says):
    log = _log(tmp_path / "s.jsonl", [{"doc_id": 0, "doc": {"knowledge": "k"}, "filtered_resps": ["r"]}])
    assert main(["rescore", str(log), *args, *_flags(tiny_models)]) == 2
    err = capsys.readouterr().err.strip()
    assert says in err and "\n" not in err
    assert not (tmp_path / "s.jsonl.q2.jsonl").exists()
