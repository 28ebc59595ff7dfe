"""The HTTP contract's request side (`q2_metric.serve.protocol`): the request and item models, the
JSON reader that takes only text, and the OpenAPI schema made from the same models. Expected values
come from the requests as written."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("fastapi")
from support.serve import GOOD

from q2_metric.frontend import ItemResult
from q2_metric.serve.protocol import MAX_DEPTH, RequestError, ScoreItem, parse_request, read_json


def test_a_bad_setting_of_one_item_is_that_items_bad_entry_never_the_requests():
    asked = parse_request(
        {"items": [GOOD, {**GOOD, "threshold": 2}, {**GOOD, "spans": "yes"}, 7]}, 3 + 1, 0.5
    )
    assert [a.id for a in asked] == ["0", "1", "2", "3"] and asked[0].checked is None
    bad = [a.checked for a in asked[1:]]
    assert all(isinstance(b, ItemResult) and b.status == "bad" for b in bad)
    assert bad[0].error.startswith("item 1: the threshold must lie in [0, 1]") and bad[0].error.endswith(".")
    assert bad[1].error == "item 2: field 'spans' must be true or false, got str."
    assert bad[2].error == "item 3: must be a JSON object with 'response' and 'knowledge', got int."


def test_the_requests_own_settings_and_its_size():
    asked = parse_request(
        {"items": [GOOD, {**GOOD, "threshold": 0.25, "spans": False}], "threshold": 0.75}, 2, 0.5
    )
    assert [(a.threshold, a.spans) for a in asked] == [(0.75, True), (0.25, False)]
    assert parse_request({**GOOD, "id": 7}, 1, 0.5)[0].id == "7"
    for body, code, words in [
        ({**GOOD, "threshold": True}, 422, "not the bool True"),
        ({"items": [GOOD], "spans": 1}, 422, "Field 'spans' must be true or false, got int."),
        ({"items": "x"}, 422, "Field 'items' must be a list"),
        ([GOOD], 422, "must be a JSON object"),
        ({"items": [GOOD] * 3}, 413, "3 items in one request: at most 2"),
    ]:
        with pytest.raises(RequestError) as err:
            parse_request(body, 2, 0.5)
        assert err.value.code == code and words in err.value.message and "\n" not in err.value.message


@pytest.mark.parametrize(
    "raw, words",
    [
        (b"[" * 100_000, f"nests deeper than {MAX_DEPTH} levels"),  # json's own reader: RecursionError
        (b"[" * (MAX_DEPTH + 1) + b"]" * (MAX_DEPTH + 1), f"nests deeper than {MAX_DEPTH} levels"),
        (b'{"id": "\\ud800", "response": "r", "knowledge": "k"}', "lone surrogate (\\ud800)"),
        (b'{"items": [{"response": "r", "knowledge": ["k", "\\udfff"]}]}', "lone surrogate (\\udfff)"),
        (b'{"\\ud83d": 1}', "lone surrogate (\\ud83d)"),  # a key
        (b'{"response": "\xff"}', "not UTF-8 (byte 14)"),
        (b"{not json", "not JSON"),
    ],
)
def test_a_body_the_reader_cannot_take_is_one_422_sentence(raw, words):
    with pytest.raises(RequestError) as err:
        read_json(raw)
    assert err.value.code == 422 and words in err.value.message
    assert err.value.message.count(". ") == 0 and "\n" not in err.value.message


def test_text_that_is_text_is_read():
    body = {"id": "😀 \ud83d\ude00".encode("utf-16", "surrogatepass").decode("utf-16"), **GOOD}
    assert read_json(json.dumps(body).encode()) == body  # a surrogate pair escaped is one character
    assert read_json(json.dumps(body, ensure_ascii=False).encode()) == body


def test_the_schema_is_the_models():
    schema = ScoreItem.model_json_schema()
    assert schema["required"] == ["response", "knowledge"]
    assert schema["properties"]["response"]["type"] == "string"
    assert schema["properties"]["threshold"]["anyOf"][0] == {"maximum": 1, "minimum": 0, "type": "number"}
