"""Q² results on the Hub: saved results files, and their figures in a model card's `model-index`."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from q2_metric.errors import Q2Error


class PublishError(Q2Error, RuntimeError):
    """Results could not be read or published; the message is one sentence."""


RESULT_FIELDS = ("q2", "q2_no_nli", "coverage")


def load_results(path: str | Path) -> dict[str, Any]:
    """Read a results JSON (`compute`'s output or `save_results`'s file); NaN/null values are kept
    out of the card later, missing fields fail here."""
    import json

    try:
        results = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as err:
        raise PublishError(f"Cannot read the results file {path}: {err.strerror or err}.") from None
    except json.JSONDecodeError as err:
        raise PublishError(f"The results file {path} is not JSON ({err.msg} at line {err.lineno}).") from None
    if not isinstance(results, dict):
        raise PublishError(f"The results file {path} must hold a JSON object, not {type(results).__name__}.")
    missing = [k for k in RESULT_FIELDS if k not in results]
    if missing:
        raise PublishError(f"{path}: field(s) {', '.join(missing)} missing from the results.")
    for key in RESULT_FIELDS:
        _value(results, key, where=str(path))
    return results


# every figure published is on [0, 1]: Q²-NLI and Q²-F1 are means of per-response scores in
# [0, 1], coverage a share of responses, ROC AUC a probability
FIGURE_RANGE = (0.0, 1.0)


def check_range(key: str, value: float, where: str) -> float:
    """`value` itself when it lies in the figure's range [0, 1], else `PublishError` naming `where`
    (the file, or the file and set) and the field."""
    low, high = FIGURE_RANGE
    if not low <= value <= high:
        raise PublishError(
            f"{where}: {key}={value:g} is outside the range of a Q² figure, [{low:g}, {high:g}], "
            "so nothing is published; publish the figures as `q2 score` or `q2 meta-eval` wrote them."
        )
    return value


def _value(results: dict[str, Any], key: str, where: str = "The results") -> float | None:
    value = results.get(key)
    if value is None or isinstance(value, bool):
        return None
    try:
        value = float(value)
    except (TypeError, ValueError):
        raise PublishError(f"The result {key}={value!r} is not a number.") from None
    return check_range(key, value, where) if math.isfinite(value) else None


def with_operating_point(results: dict[str, Any], path: Any) -> dict[str, Any]:
    """`results` decided at the operating point of the file `path` (`q2 calibrate`): its summary
    (`OperatingPoint.summary`) as `operating_point`, and the signature naming it (`thr:` and `op:`
    fields). Results that already name another operating point are refused in one sentence."""
    from q2_metric.options.operating_point import read_operating_point
    from q2_metric.signature import Signature

    op = read_operating_point(path)
    summary = op.summary()
    given = results.get("operating_point")
    if isinstance(given, dict) and given.get("sha256") not in (None, op.digest):
        raise PublishError(
            f"The results were decided at another operating point (op:{given.get('signature')}) than "
            f"{path} (op:{summary['signature']}); publish them without --operating-point, or score again with it."
        )
    out = {**results, "operating_point": summary}
    if isinstance(results.get("signature"), str) and results["signature"].startswith("q2:"):
        out["signature"] = str(Signature.parse(results["signature"]).with_operating_point(op))
    return out


def eval_results(
    results: dict[str, Any],
    *,
    dataset_name: str,
    dataset_type: str,
    dataset_split: str | None = None,
    dataset_config: str | None = None,
    task_type: str = "text-generation",
    task_name: str = "Dialogue response generation",
    publishable_only: bool = True,
) -> list[Any]:
    """`huggingface_hub.EvalResult`s for q2, q2_no_nli and coverage (the signature as config; the
    operating point the results were decided at, when they carry one, as each entry's `args`);
    undefined (NaN/null) values are left out. Results of tiny random models are refused, unless
    `publishable_only` is False (a dry run that only shows them)."""
    from huggingface_hub import EvalResult

    if publishable_only:
        check_publishable(results)
    op = results.get("operating_point")
    args = {"operating_point": dict(op)} if isinstance(op, dict) else None
    names = {"q2": "Q²", "q2_no_nli": "Q² (token F1, no NLI)", "coverage": "Q² coverage"}
    out = []
    for key, name in names.items():
        value = _value(results, key)
        if value is not None:
            out.append(
                EvalResult(
                    task_type=task_type,
                    task_name=task_name,
                    dataset_type=dataset_type,
                    dataset_name=dataset_name,
                    dataset_split=dataset_split,
                    dataset_config=dataset_config,
                    metric_type="q2" if key == "q2" else f"q2/{key}",
                    metric_name=name,
                    metric_value=round(value, 4),
                    metric_config=results.get("signature"),
                    metric_args=args,
                )
            )
    return out


def tiny_sentence(results: dict[str, Any], consequence: str) -> str | None:
    """The sentence for results whose signature names a tiny random model (None for any other):
    `consequence` says what follows for them (e.g. "they are not written into a model card")."""
    from q2_metric.signature import Signature

    signature = results.get("signature")
    if not (isinstance(signature, str) and Signature.parse(signature).tiny()):
        return None
    return (
        f"These results were made with tiny random models ({Signature.parse(signature).short()}), "
        f"whose scores are meaningless, so {consequence}; score with the paper's models (without "
        "--tiny / Q2_TINY) and publish those results."
    )


def check_publishable(
    results: dict[str, Any], consequence: str = "they are not written into a model card"
) -> None:
    """Refuse (one sentence) results whose signature names a tiny random model: their scores mean
    nothing, and a model card's `model-index` (or the Hub's Eval Results) would show them as the
    model's Q²."""
    sentence = tiny_sentence(results, consequence)
    if sentence:
        raise PublishError(sentence)


def _entry_key(r: Any) -> tuple:  # a huggingface_hub EvalResult
    """What a Q² entry replaces: same metric type on the same dataset and split (any signature)."""
    return (r.metric_type, r.dataset_type, r.dataset_config, r.dataset_split)


def card_metadata(
    results: dict[str, Any],
    model_name: str,
    existing: dict | None = None,
    *,
    publishable_only: bool = True,
    **dataset: Any,
) -> dict:
    """Model-card metadata with Q² results merged into `model-index`: an entry with the same metric
    type, dataset and split is replaced, whatever its signature; other entries are kept. Tiny
    random models' results are refused unless `publishable_only` is False (a dry run)."""
    from huggingface_hub.repocard_data import eval_results_to_model_index, model_index_to_eval_results

    meta = dict(existing or {})
    new = eval_results(results, publishable_only=publishable_only, **dataset)
    old = []
    if meta.get("model-index"):
        _, old = model_index_to_eval_results(meta["model-index"])
    keys = {_entry_key(r) for r in new}
    kept = [r for r in old if _entry_key(r) not in keys]
    meta["model-index"] = eval_results_to_model_index(model_name, kept + new)
    return meta


def read_card_metadata(card: str | Path) -> dict:
    """The YAML header of a README.md on disk ({} when missing); a header that is not valid YAML (or
    not a mapping) raises `PublishError` naming the card and the line."""
    import yaml
    from huggingface_hub import metadata_load

    path = Path(card)
    if not path.exists():
        return {}
    try:
        meta = metadata_load(path)
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f" (line {mark.line + 2} of the card)" if mark is not None else ""
        problem = getattr(err, "problem", None) or str(err).splitlines()[0]
        raise PublishError(
            f"The YAML header of the card '{path}' cannot be read{where}: {problem}; fix it "
            "between the two '---' lines, then run again."
        ) from None
    except (OSError, UnicodeDecodeError) as err:
        raise PublishError(
            f"Cannot read the card '{path}': {getattr(err, 'strerror', None) or err}."
        ) from None
    if meta is not None and not isinstance(meta, dict):
        raise PublishError(
            f"The YAML header of the card '{path}' is a {type(meta).__name__}, not a mapping of "
            "fields; fix it between the two '---' lines."
        )
    return meta or {}


def write_model_card(card: str | Path, results: dict[str, Any], model_name: str, **dataset: Any) -> dict:
    """Edit a README.md on disk (created if missing) beside it and renamed into place; return the
    metadata written. A card that is a link, a folder or a device is refused (`paths`)."""
    import shutil
    import tempfile

    from huggingface_hub import metadata_save

    from q2_metric.io import atomic_write
    from q2_metric.io.paths import check_regular_target

    path = Path(card)
    check_regular_target(path, "--card")
    meta = card_metadata(results, model_name, read_card_metadata(path), **dataset)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp) / "README.md"
        if path.exists():
            shutil.copyfile(path, work)
        else:
            work.write_text(f"# {model_name}\n", encoding="utf-8")
        metadata_save(work, meta)
        text = work.read_text(encoding="utf-8")
    atomic_write(path, lambda f: f.write(text))
    return meta


def check_hub_reachable(timeout: float = 5.0) -> None:
    """Fail at once, in one sentence, when the Hub's host (or the proxy in between) does not
    accept a connection within `timeout` seconds, instead of the client's retries (~23 s)."""
    import socket
    import urllib.request
    from urllib.parse import urlsplit

    from huggingface_hub import constants

    url = urlsplit(constants.ENDPOINT)
    host, port = url.hostname or "", url.port or (443 if url.scheme == "https" else 80)
    proxy = urllib.request.getproxies().get(url.scheme)
    if proxy and not urllib.request.proxy_bypass(host):
        p = urlsplit(proxy if "://" in proxy else f"http://{proxy}")
        host, port = p.hostname or host, p.port or 8080
    try:
        socket.create_connection((host, port), timeout=timeout).close()
    except OSError as err:
        raise PublishError(
            f"The Hub cannot be reached ({host}:{port}: {err.strerror or err}); check the "
            "network (or HF_ENDPOINT), then run again."
        ) from None


def _hub_failure(repo_id: str, err: Exception, what: str = "update the model card of") -> PublishError:
    """One sentence for any failure talking to the Hub (`what`: the action, before the repo)."""
    from huggingface_hub import constants, errors

    if isinstance(err, errors.OfflineModeIsEnabled) or constants.HF_HUB_OFFLINE:
        why = "HF_HUB_OFFLINE is set"
    elif isinstance(err, errors.RepositoryNotFoundError):
        why = "the repository does not exist or the token cannot see it"
    elif isinstance(err, errors.HfHubHTTPError) and getattr(err.response, "status_code", None) in (401, 403):
        why = "the token is missing or may not write to it (log in with `hf auth login` or set HF_TOKEN)"
    elif isinstance(err, (errors.LocalEntryNotFoundError, ConnectionError, OSError)) or type(
        err
    ).__name__ in {"ConnectError", "ConnectTimeout", "ReadTimeout"}:
        why = "the Hub cannot be reached"
    else:
        why = f"{type(err).__name__}: {str(err).splitlines()[0] if str(err) else 'no message'}"
    return PublishError(f"Cannot {what} {repo_id} on the Hub: {why}.")


def push_model_card(
    repo_id: str,
    results: dict[str, Any],
    model_name: str,
    token: str | None = None,
    api: Any = None,
    **dataset: Any,
) -> str:
    """Update the model card of `repo_id` on the Hub (needs a write token): earlier Q² entries of the
    same dataset and split are replaced, the rest of the card is kept. Returns the commit URL."""
    import tempfile

    from huggingface_hub import HfApi, constants, errors, hf_api, metadata_load, metadata_save

    api = api or HfApi(token=token)
    if isinstance(api, hf_api.HfApi) and not constants.HF_HUB_OFFLINE:
        check_hub_reachable()
    with tempfile.TemporaryDirectory() as tmp:
        card = Path(tmp) / "README.md"
        try:
            try:
                card.write_text(
                    Path(api.hf_hub_download(repo_id, "README.md", token=token)).read_text(encoding="utf-8"),
                    encoding="utf-8",
                )
            except errors.RemoteEntryNotFoundError:
                card.write_text(f"# {model_name}\n", encoding="utf-8")
            meta = card_metadata(results, model_name, metadata_load(card) or {}, **dataset)
            metadata_save(card, meta)
            commit = api.upload_file(
                path_or_fileobj=str(card),
                path_in_repo="README.md",
                repo_id=repo_id,
                token=token,
                commit_message="Q² results in the model card",
            )
        except PublishError:
            raise
        except Exception as err:
            raise _hub_failure(repo_id, err) from None
    return str(getattr(commit, "commit_url", commit))


def save_results(path: str | Path, results: dict[str, Any], **extra: Any) -> Path:
    """`evaluate.save` of the figures (signature included) plus any extra parameters, as strict
    JSON (NaN -> null)."""
    import evaluate

    from q2_metric.options import json_safe

    keep = json_safe({k: v for k, v in results.items() if k != "details"})
    return Path(evaluate.save(str(path), **keep, **json_safe(extra)))
