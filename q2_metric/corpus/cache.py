"""The resumable cache of `q2 score`: one append-only JSONL of response results per cache key."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from pathlib import Path
from typing import Any

from q2_metric.errors import CacheWriteError
from q2_metric.io import locked
from q2_metric.io.interrupts import uninterruptible
from q2_metric.scorer import Q2Scorer
from q2_metric.signature import config_fingerprint


def pair_key(response: str, knowledge: str, *history: list[str]) -> str:
    return hashlib.sha256(json.dumps([response, knowledge, *history]).encode()).hexdigest()


def valid_result(result: Any) -> bool:
    """Whether a cached response result has every field the outputs read (`write_results`)."""

    def number(v: Any) -> bool:
        return v is None or (isinstance(v, (int, float)) and not isinstance(v, bool))

    if not (
        isinstance(result, dict)
        and number(result.get("q2"))
        and number(result.get("q2_no_nli"))
        and isinstance(result.get("fallback"), bool)
        and isinstance(result.get("reason"), (str, type(None)))
        and isinstance(result.get("questions"), list)
    ):
        return False
    return all(
        isinstance(q, dict)
        and isinstance(q.get("status"), str)
        and "knowledge_answer" in q
        and "knowledge_has_answer" in q
        for q in result["questions"]
    )


class ScoreCache:
    """Append-only JSONL of response results, one folder per cache key (see `cache_key`).

    A last line cut by a kill is removed on opening, so the next append starts on a fresh line.
    Runs sharing the cache lock the file while they read or append, so that one never cuts
    another's line; an append that fails (a full disk) is undone whole and raises
    `CacheWriteError`, naming the file.
    """

    def __init__(self, root: str | Path, fingerprint: str) -> None:
        self.path = Path(root) / fingerprint / "responses.jsonl"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.entries: dict[str, dict] = {}
        self.damaged = 0  # lines dropped on opening (reported by the caller)
        if not self.path.exists():
            return
        with locked(self.path):
            data = self.path.read_bytes()
            end = data.rfind(b"\n") + 1
            if end < len(data):  # a cut last line: drop it (its row is scored again)
                os.truncate(self.path, end)
                data = data[:end]
        kept: list[str] = []
        for line in data.decode("utf-8", errors="replace").splitlines():
            try:
                entry = json.loads(line)
                if not (
                    isinstance(entry, dict)
                    and isinstance(entry.get("key"), str)
                    and valid_result(entry.get("result"))
                ):
                    raise ValueError("damaged")
            except (ValueError, RecursionError):  # (json's recursion limit: a line nested ~1,000 deep)
                self.damaged += 1  # not ours or damaged: dropped, and that row is scored again
                continue
            self.entries[entry["key"]] = entry["result"]
            kept.append(line)
        if self.damaged:
            self._rewrite(kept)

    def _rewrite(self, lines: list[str]) -> None:
        """Keep only the good lines (written beside, renamed into place under the lock), so that a
        damaged entry is reported once, not on every later run."""
        tmp = self.path.with_name(f".{self.path.name}.q2tmp-{os.getpid()}")
        with uninterruptible(), locked(self.path):
            tmp.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
            os.replace(tmp, self.path)

    def add(self, items: list[tuple[str, dict]]) -> None:
        data = "".join(json.dumps({"key": key, "result": result}) + "\n" for key, result in items).encode()
        with uninterruptible():  # lines are written whole, or not at all
            try:
                fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o666)
                try:
                    with locked(self.path):
                        size = os.fstat(fd).st_size
                        try:
                            view = memoryview(data)
                            while view:
                                view = view[os.write(fd, view) :]
                            os.fsync(fd)
                        except OSError:
                            with contextlib.suppress(OSError):
                                os.ftruncate(fd, size)  # else the next opening drops the cut line
                            raise
                finally:
                    os.close(fd)
            except OSError as err:
                raise CacheWriteError(
                    err.errno, f"cannot write the cache file '{self.path}' ({err.strerror or err})"
                ) from None
        self.entries.update(items)


def model_names(scorer: Q2Scorer) -> dict[str, str]:
    """What each component is, for the cache key and the signature: the checked identity
    (`id@commit`, or `local-<digest>` for a directory) of every model built from the config, `describe()` of
    injected ones. The same before and after loading, so cached and fresh runs agree."""
    return {**scorer.component_names(), **scorer.check_models()}


def cache_key(scorer: Q2Scorer, names: dict[str, str] | None = None) -> str:
    """The options that change a score and each model's identity, hashed."""
    return config_fingerprint(scorer.config, model_names(scorer) if names is None else names)
