"""Every error a user of Q² can see, under one root: `Q2Error`. Its message is one sentence.

Front-ends catch `Q2Error` (the command line prints `q2: <message>` and exits 2); each class also
keeps the built-in base a caller may already catch (`ValueError`, `RuntimeError`, `OSError`).

Examples:
    >>> issubclass(OutputPathError, Q2Error) and issubclass(OutputPathError, ValueError)
    True
"""

from __future__ import annotations


class Q2Error(Exception):
    """The root of every error of this package that a user can see."""


class Q2InputError(Q2Error, ValueError):
    """Bad input to the scorer or a front-end; the message names the item (row) and the field."""


class OutputPathError(Q2InputError):
    """An output path that cannot be written as asked (it is, holds or lies in something the run
    reads, or is not a regular file)."""


class Q2OptionError(Q2Error, ValueError):
    """A bad option name or value; the message is one sentence naming the option as the front-end
    spells it. `reason` is the part after the value (what to use instead)."""

    def __init__(self, message: str, reason: str = "") -> None:
        super().__init__(message)
        self.reason = reason or message


class Q2UnknownOption(Q2OptionError, TypeError):
    """A keyword that is no Q² option: a `Q2OptionError` that is also the `TypeError` Python raises
    for an unexpected keyword (what docs/python.md promises)."""


class ModelNotAvailable(Q2Error, RuntimeError):
    """A model could not be found locally and could not be downloaded."""


class ModelCheckError(ModelNotAvailable):
    """A model exists but cannot serve its role (no weights, wrong kind, unusable labels)."""


class ModelMissing(ModelNotAvailable):
    """A Hub model that is neither in the cache nor downloadable now (`why`: the reason)."""

    def __init__(self, message: str, model_id: str, role: str, why: str) -> None:
        super().__init__(message)
        self.model_id, self.role, self.why = model_id, role, why


class DeviceNotAvailable(Q2Error, RuntimeError):
    """The device asked for cannot be used here."""


class TinyModelsWarning(UserWarning):
    """Scores made on the tiny random models (`tiny=True`): they mean nothing. Its message is the
    one line every front-end shows for them (`q2_metric.display.tiny_note`)."""


class NotEnglishWarning(UserWarning):
    """Texts that are plainly not English (most of their letters not Latin ones) given to the
    English model set: their items are unverified, not scored (`q2_metric.languages.identify`);
    one warning per batch (`q2_metric.validation.warn_if_not_english`)."""


class CacheWriteError(Q2Error, OSError):
    """The score cache could not be written (a full disk): the run goes on without it."""


__all__ = [
    "CacheWriteError",
    "DeviceNotAvailable",
    "ModelCheckError",
    "ModelMissing",
    "ModelNotAvailable",
    "NotEnglishWarning",
    "OutputPathError",
    "Q2Error",
    "Q2InputError",
    "Q2OptionError",
    "Q2UnknownOption",
    "TinyModelsWarning",
]
