"""`q2 space`: assemble a Hugging Face Space folder."""

from __future__ import annotations

import argparse


def cmd_space(args: argparse.Namespace) -> int:
    from q2_metric.hub.space import build_space, check_space_folder

    check_space_folder(args.out_dir)
    out = build_space(args.out_dir)
    files = sorted(p.name for p in out.iterdir() if p.is_file())
    print(
        f"Wrote the Space to {out}: {', '.join(files)}\n"
        f"Try it: pip install -r requirements.txt && python app.py (inside {out}); "
        f"publish it: hf upload --repo-type space <you>/q2 {out} ."
    )
    return 0


def add_parser(sub: argparse._SubParsersAction) -> None:
    space = sub.add_parser("space", help="assemble a Hugging Face Space folder (card, app, wheel)")
    space.add_argument("out_dir", help="folder to write (created if missing)")
    space.set_defaults(func=cmd_space)
