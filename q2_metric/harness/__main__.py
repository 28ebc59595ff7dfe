"""`python -m q2_metric.harness lm-eval-path`: the folder of the lm-eval tasks (`--include_path`);
`python -m q2_metric.harness tiny-lm DIR`: a tiny random causal LM to try the harnesses offline."""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args == ["lm-eval-path"]:
        from q2_metric.harness import lm_eval_include_path

        print(lm_eval_include_path())
        return 0
    if len(args) == 2 and args[0] == "tiny-lm":
        from q2_metric.harness.tiny_lm import build_tiny_lm

        print(build_tiny_lm(args[1]))
        return 0
    print("usage: python -m q2_metric.harness lm-eval-path | tiny-lm DIR", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
