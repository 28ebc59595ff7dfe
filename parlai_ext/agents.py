"""`ReplayAgent`: answers with a system's recorded response, so ParlAI scores real generations."""

from __future__ import annotations

from typing import Any

from parlai.core.agents import Agent
from parlai.core.message import Message

from parlai_ext.hook import Opt, Shared
from parlai_ext.options import Q2DataError

SYSTEMS = ("dodeca", "memnet")


class ReplayAgent(Agent):
    """Replays `dodeca_response` or `memnet_response` from `CrossAnnotationTeacher`'s messages."""

    @classmethod
    def add_cmdline_args(cls, parser: Any, partial_opt: Opt | None = None) -> Any:
        group = parser.add_argument_group("Replay agent")
        group.add_argument(
            "--replay-system",
            type=str,
            default="dodeca",
            choices=list(SYSTEMS),
            help="whose recorded responses to replay",
        )
        return parser

    def __init__(self, opt: Opt, shared: Shared | None = None) -> None:
        super().__init__(opt, shared)
        self.id = f"Replay[{opt.get('replay_system', 'dodeca')}]"
        self.field = f"{opt.get('replay_system', 'dodeca')}_response"

    def act(self) -> Message:
        obs = self.observation or {}
        if self.field not in obs:
            raise Q2DataError(
                f"ReplayAgent: the teacher's message has no '{self.field}' field; use "
                "-t parlai_ext.teachers:CrossAnnotationTeacher."
            )
        return Message({"id": self.id, "text": obs[self.field], "episode_done": False})
