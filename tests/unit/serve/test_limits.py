"""The service's limits (`q2_metric.serve.limits`), each declared once with its flag and help: the
`q2 serve` flags are made from them, with the same defaults."""

from __future__ import annotations

import dataclasses

import pytest

from q2_metric.errors import Q2OptionError
from q2_metric.serve.limits import Limits, flags


def test_the_cli_flags_are_the_limits():
    from q2_metric.cli import build_parser

    parser = build_parser()
    args = parser.parse_args(["serve"])
    declared = {f.name: f.default for f in dataclasses.fields(Limits) if "help" in f.metadata}
    assert {name for name, *_ in flags()} == set(declared) >= {"read_timeout", "drain_timeout", "max_queue"}
    assert {name: getattr(args, name) for name in declared} == declared
    assert Limits(**{name: getattr(args, name) for name in declared}) == Limits()
    text = " ".join(parser._subparsers._group_actions[0].choices["serve"].format_help().split())  # type: ignore[union-attr]
    for _, flag, _, default, _ in flags():
        assert flag in text and f"(default: {default})" in text


@pytest.mark.parametrize(
    "given, words",
    [
        ({"max_queue": 0}, "Invalid --max-queue=0: use an integer >= 1."),
        ({"read_timeout": 0}, "Invalid --read-timeout=0: use a number of seconds > 0."),
        ({"drain_timeout": float("nan")}, "Invalid --drain-timeout=nan: use a number of seconds > 0."),
        ({"max_batch": 0}, "Invalid Q² option --max-batch=0: use an integer >= 1."),
        ({"max_wait": -1}, "Invalid Q² option --max-wait=-1: use a number of seconds >= 0."),
    ],
)
def test_each_limit_is_checked_in_flag_words(given, words):
    with pytest.raises(Q2OptionError) as err:
        Limits(**given)
    assert str(err.value) == words


def test_the_policy_is_the_runtimes_adaptive_one():
    policy = Limits(max_batch=8, max_wait=0.5).policy
    assert (policy.max_batch, policy.max_wait, policy.adaptive) == (8, 0.5, True)
    assert "api_key" not in Limits(api_key="k").shown()


def test_the_docs_table_names_every_limit():
    from support.data import ROOT

    page = (ROOT / "docs" / "serve.md").read_text(encoding="utf-8")
    assert [flag for _, flag, *_ in flags() if f"| `{flag}` |" not in page] == []
