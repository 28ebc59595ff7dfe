"""Where every model comes from: the one place that turns a `Q2Config` into concrete models.

The paper's models (or the ones a user names) are Hub ids or local folders that `from_pretrained`
reads; `tiny=True` puts this package's tiny random models (`q2_metric.models.tiny`, built once
under a lock, the coreference model included when `coref=True`) in place of every model left at
its default. A model named `tiny:<role>-multilingual` (`q2_metric.models.tiny`) is one of the tiny
multilingual models, built once. Every front-end reaches it through
`q2_metric.options.build_config` or `Q2Scorer`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from q2_metric.config import Q2Config
from q2_metric.models.tiny import (
    COREF,
    ROLES,
    TINY_QUESTION_LENGTH,
    ensure_tiny_models,
    is_tiny_id,
    resolve_tiny_id,
)


def provide_model_id(
    model: str, say: Callable[[str], None] = lambda msg: None, reads: Mapping[str, Any] | None = None
) -> str:
    """The model to load for a model id: a tiny model id (`tiny:ner-multilingual`, ...) becomes its
    folder, built once; any other id comes back as it is (what `from_pretrained` reads).

    >>> provide_model_id("Davlan/xlm-roberta-base-ner-hrl")
    'Davlan/xlm-roberta-base-ner-hrl'
    """
    return resolve_tiny_id(model, say=say, reads=reads)


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
        The configuration whose model options name the models to load (a qg/qa/nli model named
        `tiny:<role>-multilingual` replaced by its folder, whether or not `config.tiny`).

    Raises:
        Q2InputError: the tiny-model folder holds a model this package did not build.
        OutputPathError: the tiny-model folder lies inside something the run reads.

    Examples:
        >>> Q2Config(tiny=False).qg_model == provide_models(Q2Config(tiny=False)).qg_model
        True
    """
    config = language_models(config)  # the language's model set (ids), then tiny ids resolved
    named: dict[str, Any] = {
        f"{role}_model": resolve_tiny_id(getattr(config, f"{role}_model"), say=say, reads=reads)
        for role in ROLES
        if is_tiny_id(getattr(config, f"{role}_model"))
    }
    if named:
        if config.max_question_length == Q2Config(tiny=False).max_question_length:
            named["max_question_length"] = TINY_QUESTION_LENGTH
        config = config.replace(**named)
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


def language_models(config: Q2Config) -> Q2Config:
    """`config` with its language's model set in place (`q2_metric.languages`): each QG/QA/NLI
    model left at the paper's default becomes the set's; with `tiny`, a language other than English
    takes the tiny multilingual models (`tiny:<role>-multilingual`, resolved by `provide_models`)
    for every such role. English with the bundled sets is the paper's set: the configuration comes
    back as it is. A language without a set is one `Q2OptionError` sentence.

    >>> language_models(Q2Config(language="de")).qa_model
    'deepset/xlm-roberta-large-squad2'
    >>> language_models(Q2Config(language="de", tiny=True)).qa_model
    'tiny:qa-multilingual'
    """
    if config.language == "en" and config.model_sets is None:
        return config
    from q2_metric.languages import model_set
    from q2_metric.models.tiny import tiny_model_id

    found = model_set(config.language, config.model_sets)
    defaults = Q2Config(tiny=False)
    changes: dict[str, Any] = {}
    for role in ROLES:
        option = f"{role}_model"
        if getattr(config, option) != getattr(defaults, option):
            continue  # named by the user: kept
        tiny = config.tiny and config.language != "en"
        wanted = tiny_model_id(role) if tiny else getattr(found, role)
        if wanted != getattr(config, option):
            changes[option] = wanted
    return config.replace(**changes) if changes else config
