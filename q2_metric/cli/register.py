"""`q2 register`: make `evaluate.load("q2")` find the Q² module (`q2_metric.evaluate_registry`)."""

from __future__ import annotations

import argparse
from typing import Any


def cmd_register(args: argparse.Namespace) -> int:
    from q2_metric.evaluate_registry import register_evaluate_module

    path = register_evaluate_module()
    print(
        f'Registered the Q² evaluate module at {path}; evaluate.load("q2") now finds it '
        "(offline: set HF_HUB_OFFLINE=1 so evaluate skips the Hub)."
    )
    return 0


def add_parser(sub: Any) -> None:
    reg = sub.add_parser("register", help="make evaluate.load('q2') find this metric (offline too)")
    reg.set_defaults(func=cmd_register)
