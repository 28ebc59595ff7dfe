"""The operating point as data: the threshold a labelled set chose, in a small JSON file that
`q2 calibrate` writes and every front-end reads here (`read_operating_point`), once, before any
model work. Its one home: a front-end that takes `--operating-point FILE` (or `operating_point=`)
gets an `OperatingPoint`, decides at its threshold (`display.decide`: a score <= it is
inconsistent) and signs both (`Signature.with_operating_point`).

The file (`FORMAT`, version `VERSION`):

- `threshold`: a number in [0, 1];
- `rule`: how it was chosen: `{"name": "balanced_accuracy"}`, or `{"name": "precision" |
  "recall", "target": T}` (of the consistent class, T in (0, 1]);
- `dataset`: the labelled set: `name`, `sha256` (of the bytes read), `responses`, `consistent`;
- `scores`: the scores it was chosen on: `sha256`, `column`, `signature` (the full signature of
  the scorer that made them);
- `figures`: each figure at the threshold with its bootstrap interval (`value`, `low`, `high`);
- `calibration`: the expected calibration error and the reliability table;
- `created`: the date, ISO 8601.

A file that does not hold these is refused with one sentence naming the field.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from q2_metric.display import check_threshold
from q2_metric.errors import Q2InputError, Q2OptionError

FORMAT = "q2-operating-point"
VERSION = 1
RULES = ("balanced_accuracy", "precision", "recall")
_SHA = re.compile(r"[0-9a-f]{64}\Z")


class OperatingPointError(Q2InputError):
    """An operating-point file that cannot be used; one sentence naming the file and the field."""


@dataclass(frozen=True)
class OperatingPoint:
    """A read and checked operating-point file: its threshold and rule, the labelled set's name,
    the file's own digest (what the signature names), and everything it holds (`data`)."""

    threshold: float
    rule: str  # balanced_accuracy | precision | recall
    target: float | None
    dataset: str
    digest: str  # sha256 of the file's bytes
    data: dict[str, Any]

    def rule_text(self) -> str:
        """`balanced_accuracy`, `precision>=0.9`, `recall>=0.8`.

        >>> OperatingPoint(0.4, "precision", 0.9, "d", "0" * 64, {}).rule_text()
        'precision>=0.9'
        """
        return self.rule if self.target is None else f"{self.rule}>={self.target:g}"

    def signature_value(self) -> str:
        """The signature's `op` field: the rule's short name and the file's digest, e.g.
        `ba@1a2b3c4d5e6f` (`p0.9@...`, `r0.8@...` for a target precision or recall)."""
        short = {"balanced_accuracy": "ba", "precision": "p", "recall": "r"}[self.rule]
        target = "" if self.target is None else f"{self.target:g}"
        return f"{short}{target}@{self.digest[:12]}"

    def summary(self) -> dict[str, Any]:
        """What a run's summary says of the operating point it decided at."""
        return {
            "threshold": self.threshold,
            "rule": self.rule_text(),
            "dataset": self.dataset,
            "sha256": self.digest,
            "signature": self.signature_value(),
        }


def _fail(path: Path, field: str, problem: str) -> OperatingPointError:
    return OperatingPointError(f"{path}: the operating point's '{field}' {problem}.")


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def check_operating_point(data: Any, path: Path) -> OperatingPoint:
    """The `OperatingPoint` of a parsed file; `OperatingPointError` naming the first bad field."""
    if not isinstance(data, dict):
        raise OperatingPointError(f"{path}: an operating point is a JSON object, not {type(data).__name__}.")
    if data.get("format") != FORMAT:
        raise _fail(path, "format", f"must be '{FORMAT}' (the file `q2 calibrate` writes)")
    if data.get("version") != VERSION:
        raise _fail(path, "version", f"must be {VERSION}, got {data.get('version')!r}")
    threshold: Any = data.get("threshold")
    try:
        if not _number(threshold):
            raise Q2OptionError("not a number")
        threshold = check_threshold(threshold)  # the one range check of a threshold
    except Q2OptionError:
        raise _fail(path, "threshold", f"must be a number in [0, 1], got {threshold!r}") from None
    rule = data.get("rule")
    if not isinstance(rule, dict) or rule.get("name") not in RULES:
        raise _fail(path, "rule", "must name one of " + ", ".join(RULES))
    target: Any = rule.get("target")
    if rule["name"] == "balanced_accuracy":
        if target is not None:
            raise _fail(path, "rule.target", "is set, but balanced_accuracy takes no target")
    elif not _number(target) or not 0 < target <= 1:
        raise _fail(path, "rule.target", f"must be a number in (0, 1], got {target!r}")
    dataset = data.get("dataset")
    if not isinstance(dataset, dict):
        raise _fail(path, "dataset", "must be an object")
    if not isinstance(dataset.get("name"), str) or not dataset["name"]:
        raise _fail(path, "dataset.name", "must be a non-empty text")
    for where, block in (("dataset", dataset), ("scores", data.get("scores"))):
        if not isinstance(block, dict):
            raise _fail(path, where, "must be an object")
        if not isinstance(block.get("sha256"), str) or not _SHA.match(block["sha256"]):
            raise _fail(path, f"{where}.sha256", "must be 64 lower-case hexadecimal digits")
    signature = data["scores"].get("signature")
    if not isinstance(signature, str) or not signature.startswith("q2:"):
        raise _fail(path, "scores.signature", "must be the full signature of the scores (q2:...)")
    figures = data.get("figures")
    if not isinstance(figures, dict) or not figures:
        raise _fail(path, "figures", "must be an object of figures")
    for name, fig in figures.items():
        if not isinstance(fig, dict) or not all(
            fig.get(k) is None or _number(fig.get(k)) for k in ("value", "low", "high")
        ):
            raise _fail(path, f"figures.{name}", "must hold a value, low and high (numbers or null)")
    calibration = data.get("calibration")
    if not isinstance(calibration, dict) or not _number(calibration.get("ece")):
        raise _fail(path, "calibration.ece", "must be a number")
    if not isinstance(calibration.get("table"), list):
        raise _fail(path, "calibration.table", "must be a list of bins")
    created = data.get("created")
    try:
        datetime.fromisoformat(str(created).replace("Z", "+00:00"))
    except ValueError:
        raise _fail(path, "created", f"must be an ISO 8601 date, got {created!r}") from None
    return OperatingPoint(
        threshold=float(threshold),
        rule=rule["name"],
        target=None if target is None else float(target),
        dataset=dataset["name"],
        digest="",
        data=data,
    )


def read_operating_point(path: str | os.PathLike[str]) -> OperatingPoint:
    """The checked operating point of a file (its digest: sha256 of the bytes read).

    Raises:
        OperatingPointError: a missing or unreadable file, not JSON, or a bad field (one sentence
            naming it).
    """
    path = Path(path)
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise OperatingPointError(f"{path}: no such operating-point file.") from None
    except IsADirectoryError:
        raise OperatingPointError(f"{path}: is a folder, not an operating-point file.") from None
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise OperatingPointError(f"{path}: not a JSON operating-point file ({err}).") from None
    op = check_operating_point(data, path)
    return OperatingPoint(op.threshold, op.rule, op.target, op.dataset, hashlib.sha256(raw).hexdigest(), data)
