"""ParlAI's front-ends in the matrix: `--metrics q2` on a teacher of this package
(CrossAnnotationTeacher replayed by ReplayAgent: the items become an annotation file whose
`dodeca_response` and `knowledge` are theirs), and `Q2Teacher` over a task of ParlAI's own
(`fromfile:parlaiformat`, its messages carrying the response to replay and the checked sentence).
Both run `eval_model` in process (ParlAI's plumbing, the real engine); each turn's result is read
back from the explain file (`--q2-explain-file`)."""

from __future__ import annotations

import contextlib
import csv
import io
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from contract.frontends import Item, Report, Row, flags, nowhere


def write_items(path: Path, items: list[Item]) -> Path:
    from support.parlai_data import ANNOTATIONS

    with open(ANNOTATIONS, newline="", encoding="utf-8") as f:
        reader = csv.DictReader(f)
        fields, rows = reader.fieldnames, list(reader)[: len(items)]
    for row, item in zip(rows, items):
        row["dodeca_response"], row["knowledge"] = item.response, item.knowledge
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=fields)
        writer.writeheader()
        writer.writerows(rows)
    return path


def write_parlai_format(path: Path, items: list[Item]) -> Path:
    """ParlAI's text format, one episode per item: `dodeca_response` (replayed) and `checked_sentence`."""

    def clean(text: str) -> str:
        assert "\t" not in text and "\n" not in text, "the format has no tab or line break in a field"
        return text

    path.write_text(
        "".join(
            f"text:hello\tlabels:hi\tdodeca_response:{clean(i.response)}\t"
            f"checked_sentence:{clean(i.knowledge)}\tepisode_done:True\n"
            for i in items
        ),
        encoding="utf-8",
    )
    return path


@dataclass
class ParlAI:
    name: str
    base: dict[str, Any]
    wrapped: bool = False  # Q2Teacher --q2-task ...
    slow: bool = True
    bad_item: str = "n/a"
    bad_item_reason: str = "the model's reply is text: a non-text response cannot reach the hook; a message's knowledge that is no text (a dict, a number) is a bad turn with its own sentence, the rest scored, and a list of passages is joined (tests/integration/test_parlai_any_teacher.py)"
    words: dict = field(
        default_factory=lambda: {
            "wrong type": "--q2-max-question-length",
            "out of range": "--q2-batch-size",
            "unknown name": "--q2-use-nlii",
            "missing model": "--q2-qg-model",
        }
    )
    foreign_words: tuple = ("(--qg-model)",)
    records_reason: str | None = (
        "ParlAI's report holds the metric's figures; its explain file is compared with q2 score "
        "by tests/integration/test_parlai*.py"
    )

    def option_word(self, kind: str) -> str:
        return self.words[kind]

    def _argv(self, data: Path | None, tmp: Path, options: list[str], explain: Path | None) -> list[str]:
        """A command line (Q2Teacher's wrapped task does not take its own flags on a command line
        parsed in one go: without `data`, the packaged annotations and one example)."""
        inner = "parlai_ext.teachers:CrossAnnotationTeacher"
        task = ["-t", "parlai_ext.teachers:Q2Teacher", "--q2-task", inner] if self.wrapped else ["-t", inner]
        argv = [
            *task,
            "-m",
            "parlai_ext.agents:ReplayAgent",
            "--datapath",
            str(tmp / "parlai-data"),
            "--metrics",
            "q2",
            "--log-every-n-secs",
            "-1",
            *options,
        ]
        argv += ["--q2-annotations", str(data)] if data else ["--num-examples", "1"]
        return argv + (["--q2-explain-file", str(explain)] if explain else [])

    def score(self, items: list[Item], tmp: Path) -> Report:
        from parlai.core.metrics import dict_report
        from parlai.scripts.eval_model import EvalModel

        explain = tmp / "explain.jsonl"
        if self.wrapped:  # ParlAI's own file teacher, whose messages carry the response to replay
            data = write_parlai_format(tmp / "items.txt", items)
            task = {
                "task": "parlai_ext.teachers:Q2Teacher",
                "q2_task": "fromfile:parlaiformat",
                "fromfile_datapath": str(data),
            }
        else:
            data = write_items(tmp / "items.csv", items)
            task = {"task": "parlai_ext.teachers:CrossAnnotationTeacher", "q2_annotations": str(data)}
        with contextlib.redirect_stderr(io.StringIO()), contextlib.redirect_stdout(io.StringIO()):
            report = EvalModel.main(
                **task,
                model="parlai_ext.agents:ReplayAgent",
                datapath=str(tmp / "parlai-data"),
                metrics="q2",
                log_every_n_secs=-1,
                q2_explain_file=str(explain),
                **{f"q2_{k}": v for k, v in self.base.items()},
            )
        report = dict_report(report)
        lines = [
            json.loads(line) for line in explain.read_text(encoding="utf-8").splitlines() if line.strip()
        ]
        rows = [
            Row(
                f"example {line['example_id']}" if line["example_id"] else f"episode {line['episode_idx']}",
                line["status"],  # the contract's (frontend.ItemResult.status)
                line["q2"],
            )
            for line in lines
        ]
        counts = {
            "scored": report.get("q2_scored", 0),
            "empty": report.get("q2_empty", 0) + report.get("q2_skipped", 0),
            "bad": report.get("q2_bad", 0),
        }
        signature = next((line["signature"] for line in lines if line.get("signature")), "")
        return Report(rows, counts, signature, [line["spans"] for line in lines])

    def refusal(self, kind: str, tmp: Path) -> str:
        data = (
            None
            if self.wrapped
            else write_items(tmp / "items.csv", [Item("Bob Ross hosted it.", "Bob Ross hosted the show.")])
        )
        extra = {
            "wrong type": ["--q2-max-question-length", "eight"],
            "out of range": ["--q2-batch-size", "0"],
            "unknown name": ["--q2-use-nlii", "true"],
            "missing model": ["--q2-qg-model", nowhere(tmp)],
        }[kind]
        return self._refused(self._argv(data, tmp, flags(self.base, "--q2-") + extra, None), kind)

    def _refused(self, argv: list[str], what: str) -> str:
        """The sentence the user sees when ParlAI stops: argparse's last stderr line, or the error."""
        from parlai.scripts.eval_model import EvalModel

        err = io.StringIO()
        try:
            with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
                EvalModel.main(*argv)
        except SystemExit as stop:  # argparse: usage, then its one line; or the hook's one sentence
            return stop.code if isinstance(stop.code, str) else err.getvalue().strip().splitlines()[-1]
        except Exception as error:
            return str(error)
        raise AssertionError(f"{self.name} accepted {what}")

    def write_inside_read(self, tmp: Path) -> str | None:
        """The explain file inside the QG model folder."""
        data = (
            None
            if self.wrapped
            else write_items(tmp / "items.csv", [Item("Bob Ross hosted it.", "Bob Ross hosted the show.")])
        )
        target = Path(self.base["qg_model"]) / "explain.jsonl"
        message = self._refused(
            self._argv(data, tmp, flags(self.base, "--q2-"), target), "an output in a model folder"
        )
        assert not target.exists()
        return message


def parlai_adapters(base: dict[str, Any]) -> list[ParlAI]:
    return [ParlAI("parlai --metrics q2", base), ParlAI("parlai Q2Teacher", base, wrapped=True)]
