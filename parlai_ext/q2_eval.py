"""The part shared by every Q² teacher: flags, early checks, a response buffer scored in batches,
metrics (report and per turn) and the explain file.

The code lives in `q2_options` (flags, errors, opt), `q2_report` (the buffer, metrics, explain file)
and `q2_hook` (the teacher mixin); this module keeps the names importable from here."""

from __future__ import annotations

from parlai_ext.q2_hook import (EPISODE_FIELD, EXAMPLE_ID_FIELD, NO_PASSAGES, TURN_FIELD, Q2EvalMixin,  # noqa: F401
                                number_turns)
from parlai_ext.q2_options import (SPELL, Q2DataError, Q2ModelError, Q2OptionValueError, add_q2_args,  # noqa: F401
                                   check_explain_file, config_from_opt, parlai_flags, q2_requested)
from parlai_ext.q2_report import EARLY_DATA_ERROR_TURNS, SCORER_FACTORY, Q2Buffer, check_models  # noqa: F401
