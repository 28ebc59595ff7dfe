"""Q² teachers: Wizard of Wikipedia (dialog-knowledge and generator), the paper's annotated set, and
`Q2Teacher`, which adds Q² to any ParlAI task whose messages carry their knowledge.

    parlai eval_model -t parlai_ext.teachers:Q2GeneratorTeacher -m ... --metrics q2 --datapath DATA
    parlai eval_model -t parlai_ext.teachers:Q2Teacher --q2-task wizard_of_wikipedia:Generator -m ... \
        --metrics q2 --datapath DATA
    parlai eval_model -t parlai_ext.teachers:CrossAnnotationTeacher -m parlai_ext.agents:ReplayAgent \
        --replay-system dodeca --metrics q2 --datapath DATA
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from parlai.core.teachers import DialogTeacher, FixedDialogTeacher, Teacher
from parlai.tasks.wizard_of_wikipedia.agents import GeneratorTeacher, WizardDialogKnowledgeTeacher

from parlai_ext.hook import (
    EPISODE_FIELD,
    EXAMPLE_ID_FIELD,
    TURN_FIELD,
    Message,
    Opt,
    Q2EvalMixin,
    Shared,
    number_turns,
)
from parlai_ext.options import Q2DataError, Q2OptionValueError
from parlai_ext.report import _set

WOW_VERSION = "1.0"  # parlai/tasks/wizard_of_wikipedia/build.py's
ANNOTATIONS = Path(__file__).resolve().parent / "data" / "cross_annotation.csv"
CROSS_COLUMNS = (
    "message",
    "knowledge",
    "gold",
    "dodeca_response",
    "memnet_response",
    "dodeca_label",
    "memnet_label",
)


def check_wow_data(opt: Opt) -> None:
    """Wizard of Wikipedia must already be in `--datapath`: a missing copy is one sentence, never a
    download attempt (ParlAI would otherwise try to download it, and fail offline with a traceback)."""
    from parlai.core.build_data import built

    folder = os.path.join(opt.get("datapath") or "data", "wizard_of_wikipedia")
    if not built(folder, WOW_VERSION):
        raise Q2DataError(
            f"Wizard of Wikipedia (version {WOW_VERSION}) is not in {folder} (no .built file there): download it "
            f"once where the network is reachable (`parlai display_data -t wizard_of_wikipedia --datapath "
            f"{opt.get('datapath') or 'data'}`), or pass as --datapath the folder that holds it."
        )


def lengths_file(datafile: str, datapath: str) -> str:
    """Where a streamed pass counts the annotation file's episodes: `<datapath>/q2_cross_annotation/`,
    named by the file's path, size and time, never beside the file (ParlAI's default, which wrote
    into the installed package's data folder)."""
    import hashlib

    try:
        st = os.stat(datafile)
        stamp = f"{os.path.abspath(datafile)}|{st.st_size}|{st.st_mtime_ns}"
    except OSError:  # a missing file is reported by `_rows`, in one sentence
        stamp = os.path.abspath(datafile)
    folder = os.path.join(datapath, "q2_cross_annotation")
    os.makedirs(folder, exist_ok=True)
    return os.path.join(folder, hashlib.sha256(stamp.encode()).hexdigest()[:16] + ".lengths")


class _WizardQ2(Q2EvalMixin):
    """Q² against each turn's checked sentence, for the WoW teachers. The data is checked as it
    streams by (see `Q2Buffer.check_data`), so every datatype works, `:stream` included."""

    def __init__(self, opt: Opt, shared: Shared | None = None) -> None:
        if shared is None:
            check_wow_data(opt)
        self._q2_setup(opt, shared)
        super().__init__(opt, shared)
        # GeneratorTeacher forces the checked sentence on; the dialog-knowledge teacher obeys the flag.
        if self.q2_on and not self.include_checked_sentence:
            raise Q2DataError(
                "Q² scores responses against the checked sentence: run with --include-checked-sentence true"
            )

    def setup_data(self, datafile: str) -> Iterator[tuple[Message, bool]]:
        return number_turns(super().setup_data(datafile))

    def q2_knowledge(self, teacher_action: Message) -> object:
        if "checked_sentence" not in teacher_action:
            raise Q2DataError(f"example {teacher_action.get('id')!r} has no checked_sentence; Q² needs it")
        return teacher_action["checked_sentence"]


class Q2WizardDialogKnowledgeTeacher(_WizardQ2, WizardDialogKnowledgeTeacher):
    """`wizard_of_wikipedia` (the default teacher) with Q² in its report."""


class Q2GeneratorTeacher(_WizardQ2, GeneratorTeacher):
    """`wizard_of_wikipedia:Generator` with Q² in its report."""


class DefaultTeacher(Q2WizardDialogKnowledgeTeacher):
    pass


class CrossAnnotationTeacher(Q2EvalMixin, DialogTeacher):
    """The Q² paper's 544 annotated WoW contexts; each row is one turn (`message` -> `gold`), with
    `knowledge` as the checked sentence and both systems' recorded responses for `ReplayAgent`. A
    row whose knowledge is empty (or only whitespace and control characters) is skipped and counted
    in `q2_skipped`, as a `no_passages_used` turn is.
    Its example id is `<WoW episode_idx>:<round>` from the annotation file."""

    @classmethod
    def add_cmdline_args(cls, parser: Any, partial_opt: Opt | None = None) -> Any:
        super().add_cmdline_args(parser, partial_opt)
        parser.add_argument(
            "--q2-annotations",
            type=str,
            default=str(ANNOTATIONS),
            help="cross_annotation.csv of the Q² paper (default: the packaged copy)",
        )
        return parser

    def __init__(self, opt: Opt, shared: Shared | None = None) -> None:
        self._q2_setup(opt, shared)
        opt = opt.copy()
        opt["datafile"] = opt.get("q2_annotations") or str(ANNOTATIONS)
        if not opt.get("length_datafile"):
            opt["length_datafile"] = lengths_file(opt["datafile"], opt.get("datapath") or "data")
        self.id = "q2_cross_annotation"
        super().__init__(opt, shared)

    def setup_data(self, path: str) -> Iterator[tuple[Message, bool]]:
        return number_turns(self._rows(path))

    def _rows(self, path: str) -> Iterator[tuple[Message, bool]]:
        if not os.path.exists(path):
            raise Q2DataError(f"{path}: no such annotation file (set --q2-annotations)")
        from q2_metric import io
        from q2_metric.errors import Q2InputError

        try:
            rows, columns = io.read_table(Path(path))
        except Q2InputError as err:
            raise Q2DataError(str(err)) from None
        missing = [c for c in CROSS_COLUMNS if c not in io.table_columns(rows, columns)]
        if missing:
            raise Q2DataError(f"{path}: column(s) {', '.join(missing)} missing")
        bad = next((r for r in rows if r.error), None)
        if bad is not None:
            raise Q2DataError(f"{path}: {bad.error}")
        for row in (r.fields for r in rows):
            # an empty checked sentence is a turn without knowledge: skipped and counted (q2_skipped)
            yield (
                {
                    "text": row["message"],
                    "labels": [row["gold"]],
                    "checked_sentence": row["knowledge"],
                    "topic": row.get("topic", ""),
                    "dodeca_response": row["dodeca_response"],
                    "memnet_response": row["memnet_response"],
                    "dodeca_label": row["dodeca_label"],
                    "memnet_label": row["memnet_label"],
                    # the WoW validation episode and round the annotated context comes from
                    EXAMPLE_ID_FIELD: f"{row.get('episode_idx', '')}:{row.get('round', '')}",
                },
                True,
            )

    def q2_knowledge(self, teacher_action: Message) -> object:
        return teacher_action.get("checked_sentence")


# The message fields `Q2Teacher` reads the knowledge from, in this order.
KNOWLEDGE_FIELDS = ("checked_sentence", "knowledge")


def message_knowledge(message: Message) -> object:
    """The knowledge a message carries: its `checked_sentence`, else its `knowledge` (a WoW raw
    `{passage: sentence}` dict gives its sentence), as it is: a text, a list of passages (joined as
    every front-end joins them) or another value (a bad turn, named with its field); None when it
    carries neither."""
    for name in KNOWLEDGE_FIELDS:
        value = message.get(name)
        if isinstance(value, dict) and len(value) == 1:
            value = next(iter(value.values()))
        if value is not None:
            return value
    return None


class _TaskWrapper(Teacher):
    """Builds the teacher of `opt["task"]` and forwards its messages, metrics and report; calls
    `custom_evaluation` on each reply to a labelled message after the inner teacher has scored it."""

    def __init__(self, opt: Opt, shared: Shared | None = None) -> None:
        from parlai.core.agents import create_agent_from_shared
        from parlai.core.teachers import create_task_agent_from_taskname

        super().__init__(opt, shared)
        self.task = (
            create_agent_from_shared(shared["task"])
            if shared is not None
            else create_task_agent_from_taskname(opt)[0]
        )
        self.lastY, self.last_act = None, None

    def share(self) -> Shared:
        shared = super().share()
        shared["task"] = self.task.share()
        return shared

    def act(self) -> Message:
        action = self.task.act()
        self.epochDone = self.task.epoch_done()
        labels = action.get("labels", action.get("eval_labels"))
        if labels is not None:
            if isinstance(self.task, FixedDialogTeacher) and not getattr(self.task, "stream", False):
                # positions in the data, as `number_turns` stamps them (unknown for a streamed task)
                _set(action, EPISODE_FIELD, getattr(self.task, "episode_idx", None))
                _set(action, TURN_FIELD, getattr(self.task, "entry_idx", None))
            self.lastY, self.last_act = labels, action
        return action

    def observe(self, observation: Message) -> Message:
        observation = self.task.observe(observation)  # the task's own metrics first
        if self.lastY is not None:
            labels, self.lastY = self.lastY, None
            self.custom_evaluation(self.last_act, labels, observation)
        return observation

    def custom_evaluation(
        self, teacher_action: Message, labels: Sequence[str] | None, model_response: Message | None
    ) -> None:
        """The inner teacher has already done its own (in its `observe`)."""

    def epoch_done(self) -> bool:
        return self.task.epoch_done()

    def num_examples(self) -> int:
        return self.task.num_examples()

    def num_episodes(self) -> int:
        return self.task.num_episodes()

    def report(self) -> dict[str, Any]:
        return self.task.report()

    def reset(self) -> None:
        self.task.reset()
        self.lastY, self.epochDone = None, False

    def reset_metrics(self) -> None:
        self.task.reset_metrics()

    def save(self) -> None:
        self.task.save()


class Q2Teacher(Q2EvalMixin, _TaskWrapper):
    """Any ParlAI task (`--q2-task`, e.g. `wizard_of_wikipedia:Generator`) with Q² in its report:
    it builds that task's teacher, forwards its messages, metrics and report unchanged, and scores
    each response against the message's `checked_sentence` (else `knowledge`), in batches, with
    one model load. Like ParlAI's `wrapper` tasks (`--wrapper-task`), but the messages are kept."""

    q2_missing = "no message has knowledge in a checked_sentence or knowledge field"

    @classmethod
    def add_cmdline_args(cls, parser: Any, partial_opt: Opt | None = None) -> Any:
        super().add_cmdline_args(parser, partial_opt)
        group = parser.add_argument_group("Q² over another task")
        group.add_argument(
            "--q2-task",
            type=str,
            default=None,
            help="the ParlAI task whose messages Q² scores (e.g. wizard_of_wikipedia:Generator)",
        )
        task = (partial_opt or {}).get("q2_task")
        if task:
            parser.add_task_args(task, partial_opt)
        return parser

    def __init__(self, opt: Opt, shared: Shared | None = None) -> None:
        task = opt.get("q2_task")
        if not task:
            raise Q2OptionValueError(
                "Q2Teacher needs --q2-task, the ParlAI task whose messages Q² scores "
                "(e.g. --q2-task wizard_of_wikipedia:Generator)"
            )
        if "Q2Teacher" in task:
            raise Q2OptionValueError(f"--q2-task {task}: name the task to score, not Q2Teacher itself")
        opt = opt.copy()
        opt["task"] = task  # the inner teacher's, and the explain file's `teacher`
        if shared is None and task.split(":")[0] == "wizard_of_wikipedia":
            check_wow_data(opt)  # one sentence, where ParlAI would try to download it
        self._q2_setup(opt, shared)
        super().__init__(opt, shared)

    def q2_knowledge(self, teacher_action: Message) -> object:
        knowledge = message_knowledge(teacher_action)
        if knowledge is None:
            raise Q2DataError(
                f"Q² needs each message's knowledge in a checked_sentence or knowledge field, and a message of "
                f"{self.id} has neither; ParlAI's wizard_of_wikipedia teachers (such as "
                f"wizard_of_wikipedia:Generator) and cmu_dog provide one."
            )
        return knowledge
