"""`ReplayAgent`: answers with a system's recorded response, so ParlAI scores real generations."""

from __future__ import annotations

from parlai.core.agents import Agent
from parlai.core.message import Message

SYSTEMS = ("dodeca", "memnet")


class ReplayAgent(Agent):
    """Replays `dodeca_response` or `memnet_response` from `CrossAnnotationTeacher`'s messages."""

    @classmethod
    def add_cmdline_args(cls, parser, partial_opt=None):
        group = parser.add_argument_group("Replay agent")
        group.add_argument(
            "--replay-system",
            type=str,
            default="dodeca",
            choices=list(SYSTEMS),
            help="whose recorded responses to replay",
        )
        return parser

    def __init__(self, opt, shared=None):
        super().__init__(opt, shared)
        self.id = f"Replay[{opt.get('replay_system', 'dodeca')}]"
        self.field = f"{opt.get('replay_system', 'dodeca')}_response"

    def act(self):
        obs = self.observation or {}
        if self.field not in obs:
            raise ValueError(
                f"ReplayAgent: the teacher's message has no '{self.field}' field; use "
                "-t parlai_ext.teachers:CrossAnnotationTeacher"
            )
        return Message({"id": self.id, "text": obs[self.field], "episode_done": False})
