"""A client of the Q² service (`q2 serve`): `POST /v1/score` with a batch of items (`Q2Service.ask`), standard
library only (no HTTP package needed).

Fail closed: whatever keeps the service from answering (it cannot be reached, a timeout, a status
other than 200, a reply that is not the contract's) is one `Q2ServiceError` sentence, never a
verdict; a caller that guards answers treats it as `unverified`. A result's `verdict` is the
service's own (`consistent`, `inconsistent` or `unverified`); `is_consistent` is True only for
exactly `consistent`.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from q2_metric.errors import Q2Error
from q2_metric.frontend import VERDICTS

DEFAULT_URL = "http://127.0.0.1:8000"
DEFAULT_TIMEOUT = 30.0  # seconds for one request, connecting included


class Q2ServiceError(Q2Error, RuntimeError):
    """The Q² service gave no usable answer (unreachable, timed out, refused, or off the contract)."""


def is_consistent(result: Mapping[str, Any]) -> bool:
    """Whether the service said `consistent` for this item (anything else is not)."""
    return result.get("verdict") == "consistent" and result.get("status") == "scored"


@dataclass(frozen=True)
class Q2Service:
    """Where the service listens (`url`, e.g. "http://127.0.0.1:8000"), its API key if it asks for
    one (sent as `Authorization: Bearer KEY`) and the seconds a request may take."""

    url: str = DEFAULT_URL
    api_key: str | None = None
    timeout: float = DEFAULT_TIMEOUT

    def ask(
        self,
        items: Sequence[Mapping[str, Any]],
        *,
        threshold: float | None = None,
        spans: bool = True,
    ) -> list[dict[str, Any]]:
        """The service's result for each item (`response`, `knowledge`: a string or a list of
        passages, optional `history` and `id`), in order: `id`, `status`, `score`, `verdict`,
        `reason`, `spans`, `error`. `Q2ServiceError` when the service gives no usable answer."""
        body: dict[str, Any] = {"items": [dict(i) for i in items], "spans": spans}
        if threshold is not None:
            body["threshold"] = threshold
        reply = self._post("/v1/score", body)
        results = reply.get("results") if isinstance(reply, dict) else None
        if not isinstance(results, list) or len(results) != len(items):
            raise Q2ServiceError(
                f"The Q² service at {self.url} answered without one result per item "
                f"({len(items)} sent); its reply is not the /v1/score contract."
            )
        for n, result in enumerate(results):
            if not isinstance(result, dict) or result.get("verdict") not in VERDICTS:
                raise Q2ServiceError(
                    f"The Q² service at {self.url} gave item {n} no verdict among {', '.join(VERDICTS)}."
                )
        return results

    def _post(self, path: str, body: dict[str, Any]) -> Any:
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        request = urllib.request.Request(
            self.url.rstrip("/") + path, data=json.dumps(body).encode("utf-8"), headers=headers, method="POST"
        )
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as answer:
                text = answer.read().decode("utf-8")
        except urllib.error.HTTPError as err:
            detail = _detail(err)
            retry = err.headers.get("Retry-After") if err.headers else None
            raise Q2ServiceError(
                f"The Q² service at {self.url} refused the request: HTTP {err.code}"
                + (f" ({detail})" if detail else "")
                + (f", retry after {retry} s" if retry else "")
                + "."
            ) from None
        except (TimeoutError, urllib.error.URLError, OSError) as err:
            why = getattr(err, "reason", err)
            raise Q2ServiceError(f"The Q² service at {self.url} could not be reached: {why}.") from None
        try:
            return json.loads(text)
        except ValueError:
            raise Q2ServiceError(
                f"The Q² service at {self.url} answered with something that is not JSON."
            ) from None


def _detail(err: urllib.error.HTTPError) -> str:
    """The error's sentence (`error` in `q2 serve`'s error body, `detail` in FastAPI's own) or its
    first 200 characters."""
    try:
        text = err.read().decode("utf-8", "replace")
    except OSError:
        return ""
    try:
        body = json.loads(text)
        found = body.get("error", body.get("detail"))
    except (ValueError, AttributeError):
        found = None
    return str(found if found is not None else text)[:200].strip()
