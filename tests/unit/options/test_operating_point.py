"""Reading an operating-point file: a good one is read whole; each bad field is one sentence that
names it."""

from __future__ import annotations

import copy
import hashlib
import json

import pytest

from q2_metric.options.operating_point import OperatingPointError, read_operating_point

GOOD = {
    "format": "q2-operating-point",
    "version": 1,
    "threshold": 0.42,
    "rule": {"name": "precision", "target": 0.9},
    "dataset": {"name": "wow", "sha256": "a" * 64},
    "scores": {"sha256": "b" * 64, "signature": "q2:0.5.0|qg:x"},
    "figures": {"balanced_accuracy": {"value": 0.7, "low": 0.6, "high": 0.8}},
    "calibration": {"ece": 0.1, "table": []},
    "created": "2026-12-01T23:00:00+00:00",
}


def test_a_good_file_is_read_with_its_digest(tmp_path):
    path = tmp_path / "op.json"
    path.write_text(json.dumps(GOOD))
    op = read_operating_point(path)
    assert (op.threshold, op.rule, op.target, op.dataset) == (0.42, "precision", 0.9, "wow")
    assert op.digest == hashlib.sha256(path.read_bytes()).hexdigest()
    assert op.rule_text() == "precision>=0.9" and op.signature_value() == f"p0.9@{op.digest[:12]}"


@pytest.mark.parametrize(
    "where, value, field",
    [
        (("format",), "other", "'format'"),
        (("version",), 2, "'version'"),
        (("threshold",), "0.4", "'threshold'"),
        (("threshold",), float("nan"), "'threshold'"),
        (("rule", "name"), "f1", "'rule'"),
        (("rule", "target"), 0, "'rule.target'"),
        (("dataset", "name"), "", "'dataset.name'"),
        (("dataset", "sha256"), "abc", "'dataset.sha256'"),
        (("scores", "signature"), None, "'scores.signature'"),
        (("figures", "balanced_accuracy"), {"value": "high"}, "'figures.balanced_accuracy'"),
        (("calibration", "ece"), None, "'calibration.ece'"),
        (("created",), "yesterday", "'created'"),
    ],
)
def test_each_bad_field_is_named(tmp_path, where, value, field):
    data = copy.deepcopy(GOOD)
    node = data
    for key in where[:-1]:
        node = node[key]
    node[where[-1]] = value
    path = tmp_path / "op.json"
    path.write_text(json.dumps(data))
    with pytest.raises(OperatingPointError) as err:
        read_operating_point(path)
    text = str(err.value)
    assert field in text and text.startswith(str(path)) and text.count(". ") == 0 and "\n" not in text


def test_not_json_and_missing_files(tmp_path):
    bad = tmp_path / "op.json"
    bad.write_text("threshold: 0.5")
    with pytest.raises(OperatingPointError, match="not a JSON operating-point file"):
        read_operating_point(bad)
    with pytest.raises(OperatingPointError, match="no such operating-point file"):
        read_operating_point(tmp_path / "none.json")
