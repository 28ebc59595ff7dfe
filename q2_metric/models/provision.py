"""Where every model comes from: the one place that turns a `Q2Config` into concrete models.

The paper's models (or the ones a user names) are Hub ids or local folders that `from_pretrained`
reads; `tiny=True` puts this package's tiny random models (`q2_metric.models.tiny`, built once
under a lock, the coreference model included when `coref=True`) in place of every model left at
its default. Every front-end reaches it through `q2_metric.options.build_config` or `Q2Scorer`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from q2_metric.config import Q2Config
from q2_metric.models.tiny import COREF, ROLES, TINY_QUESTION_LENGTH, ensure_tiny_models


def provide_models(
    config: Q2Config, say: Callable[[str], None] = lambda msg: None, reads: Mapping[str, Any] | None = None
) -> Q2Config:
    """`config` with its models provided: unchanged unless `config.tiny`; then the tiny random
    models replace the qg/qa/nli (and, with `coref`, the coreference) models left at their
    defaults, and questions are capped at `TINY_QUESTION_LENGTH` tokens unless another cap is set.
    Idempotent: a provided config comes back as it is.

    Args:
        config: the run's options.
        say: hears, once, that the tiny models are being built.
        reads: what the run reads (name -> path, as given to `io.paths.check_run`): the tiny
            models are never built inside it.

    Returns:
        The configuration whose model options name the models to load.

    Raises:
        Q2InputError: the tiny-model folder holds a model this package did not build.
        OutputPathError: the tiny-model folder lies inside something the run reads.

    Examples:
        >>> Q2Config(tiny=False).qg_model == provide_models(Q2Config(tiny=False)).qg_model
        True
    """
    config = language_models(config, say, reads)
    if not config.tiny:
        return config
    defaults = Q2Config(tiny=False)
    roles = [role for role in ROLES if getattr(config, f"{role}_model") == getattr(defaults, f"{role}_model")]
    tiny_coref = config.coref and config.coref_model == defaults.coref_model
    if tiny_coref:
        roles.append(COREF)
    if not roles:
        return config
    paths = ensure_tiny_models(say=say, coref=tiny_coref, reads=reads)
    changes: dict[str, Any] = {f"{role}_model": paths[role] for role in roles}
    if config.max_question_length == defaults.max_question_length:
        changes["max_question_length"] = TINY_QUESTION_LENGTH
    return config.replace(**changes)


TINY_PREFIX = "tiny:"  # a model id of the tiny multilingual models: tiny:<role>-multilingual


def language_models(
    config: Q2Config, say: Callable[[str], None] = lambda msg: None, reads: Mapping[str, Any] | None = None
) -> Q2Config:
    """`config` with its language's model set in place (`q2_metric.languages`): each QG/QA/NLI
    model left at the paper's default becomes the set's; with `tiny`, a language other than English
    takes the tiny multilingual models (`tiny:<role>-multilingual`) for every such role. English
    with the bundled sets is the paper's set: the configuration comes back as it is. A language
    without a set is one `Q2OptionError` sentence.

    >>> language_models(Q2Config(language="de")).qa_model
    'deepset/xlm-roberta-large-squad2'
    """
    if config.language == "en" and config.model_sets is None:
        return config
    from q2_metric.languages import model_set

    found = model_set(config.language, config.model_sets)
    defaults = Q2Config(tiny=False)
    changes: dict[str, Any] = {}
    for role in ROLES:
        option = f"{role}_model"
        if getattr(config, option) != getattr(defaults, option):
            continue  # named by the user: kept
        wanted = (
            f"{TINY_PREFIX}{role}-multilingual"
            if config.tiny and config.language != "en"
            else getattr(found, role)
        )
        if wanted != getattr(config, option):
            changes[option] = wanted
    config = config.replace(**changes) if changes else config
    return _tiny_ids_resolved(config, say, reads)


def _tiny_ids_resolved(
    config: Q2Config, say: Callable[[str], None], reads: Mapping[str, Any] | None
) -> Q2Config:
    """Each QG/QA/NLI model named `tiny:<role>-multilingual` replaced by its folder (built once)."""
    from q2_metric.errors import ModelNotAvailable
    from q2_metric.models import tiny

    changes: dict[str, Any] = {}
    for option in (f"{role}_model" for role in ROLES):
        model_id = getattr(config, option)
        if model_id.startswith(TINY_PREFIX):
            resolve = getattr(tiny, "resolve_tiny_id", None)
            if resolve is None:
                raise ModelNotAvailable(
                    f"The tiny model {model_id!r} cannot be built by this version of q2-metric."
                )
            changes[option] = resolve(model_id, say=say, reads=reads)
    if changes and config.max_question_length == Q2Config(tiny=False).max_question_length:
        changes["max_question_length"] = TINY_QUESTION_LENGTH
    return config.replace(**changes) if changes else config
