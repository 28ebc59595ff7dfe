"""The teacher-side hook: `Q2EvalMixin` buffers each evaluated turn's response and knowledge, and
`number_turns` stamps each message with its episode and turn."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from parlai_ext.options import add_q2_args, q2_requested
from parlai_ext.report import Q2Buffer, _set, _Turn
from q2_metric.validation import is_blank, knowledge_text

if TYPE_CHECKING:  # the mixin's super() calls reach the ParlAI teacher it is mixed into
    from parlai.core.teachers import Teacher as _TeacherBase
else:
    _TeacherBase = object

# ParlAI's objects (ParlAI has no types): its options, shared state and messages are dicts
Opt = dict[str, Any]
Shared = dict[str, Any]
Message = dict[str, Any]

NO_PASSAGES = "no_passages_used"
# Message fields stamped by `number_turns` (the teacher's own episode and turn numbering).
EPISODE_FIELD, TURN_FIELD, EXAMPLE_ID_FIELD = "q2_episode_idx", "q2_turn_idx", "q2_example_id"


def number_turns(examples: Iterable[tuple[Message, bool]]) -> Iterator[tuple[Message, bool]]:
    """Stamp each `setup_data` message with its episode and turn index (streamed or not, these
    are the positions in the data file, before any sharding across workers)."""
    episode, turn = -1, 0
    for message, new_episode in examples:
        if new_episode or episode < 0:
            episode, turn = episode + 1, 0
        _set(message, EPISODE_FIELD, episode)
        _set(message, TURN_FIELD, turn)
        turn += 1
        yield message, new_episode


class Q2EvalMixin(_TeacherBase):
    """Mix into a ParlAI teacher before its base class. The subclass says where the knowledge is
    (`q2_knowledge(teacher_action)`) and calls `_q2_setup` first thing in `__init__`."""

    @classmethod
    def add_cmdline_args(cls, parser: Any, partial_opt: Opt | None = None) -> Any:
        super().add_cmdline_args(parser, partial_opt)
        add_q2_args(parser)
        return parser

    def _q2_setup(self, opt: Opt, shared: Shared | None) -> None:
        self.q2_on = q2_requested(opt)
        buffer = (shared or {}).get("q2_buffer")
        if buffer is None and self.q2_on:
            buffer = Q2Buffer(opt)
        self.q2_buffer: Q2Buffer | None = buffer
        if buffer is not None:
            buffer.register(self)

    def share(self) -> Shared:
        shared = super().share()
        shared["q2_buffer"] = self.q2_buffer
        return shared

    # what a pass none of whose turns had knowledge lacked (`Q2Buffer.check_data`'s sentence)
    q2_missing = "no Wizard turn has a checked_sentence"

    def q2_knowledge(self, teacher_action: Message) -> object:
        """The turn's knowledge: a text, a list of passages, or None (no knowledge)."""
        raise NotImplementedError

    def custom_evaluation(
        self, teacher_action: Message, labels: Sequence[str] | None, model_response: Message | None
    ) -> None:
        super().custom_evaluation(teacher_action, labels, model_response)
        if self.q2_buffer is None or model_response is None:
            return
        knowledge = self.q2_knowledge(teacher_action)
        # as every front-end takes it (the contract's rule): a list of passages is one text; a value
        # that is no text (a dict, a number) is knowledge too, which the contract reports as a bad
        # turn naming the field; None, an empty text or no_passages_used is no knowledge
        given = knowledge_text(knowledge)
        has_knowledge = given is not None and not (
            isinstance(given, str) and (is_blank(given) or given == NO_PASSAGES)
        )
        turn = None
        # --q2-coref: the episode so far, as the model's history holds it (teacher texts and gold replies)
        episode = getattr(self, "_q2_episode", [])
        if teacher_action.get("text"):
            episode.append(str(teacher_action["text"]))
        if "text" in model_response:
            info = {
                **self.q2_buffer.base_info,
                "episode_idx": teacher_action.get(EPISODE_FIELD),
                "turn_idx": teacher_action.get(TURN_FIELD),
                "example_id": teacher_action.get(EXAMPLE_ID_FIELD),
                "raw_knowledge": knowledge,
            }
            turn = _Turn(
                info,
                model_response["text"] or "",
                given if has_knowledge else None,
                model_response,
                history=list(episode) if self.q2_buffer.config.coref else [],
            )
        labels = list(labels or [])
        if labels or model_response.get("text"):
            episode.append(str(labels[0] if labels else model_response["text"]))
        self._q2_episode = [] if teacher_action.get("episode_done") else episode
        self.q2_buffer.add(self, turn)

    def observe(self, observation: Message) -> Message:
        observation = super().observe(observation)
        if self.q2_buffer is not None:
            # after ParlAI has replaced the reply's metrics with this turn's teacher metrics
            self.q2_buffer.annotate()
        return observation

    def report(self) -> dict[str, Any]:
        report = super().report()
        buffer = self.q2_buffer
        if buffer is None:
            return report
        if buffer.pass_done():
            buffer.flush()
            buffer.annotate()
        opt = getattr(self, "opt", {})
        buffer.check_data(buffer.pass_ended(), opt.get("datafile") or opt.get("task"), self.q2_missing)
        report.update(buffer.report())
        return report

    def reset(self) -> None:
        buffer = getattr(self, "q2_buffer", None)
        if buffer is not None:
            buffer.new_pass()
        super().reset()

    def reset_metrics(self) -> None:
        super().reset_metrics()
        buffer = getattr(self, "q2_buffer", None)
        if buffer is not None:
            buffer.metrics.clear()
