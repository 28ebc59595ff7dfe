"""`q2 serve`: Q² as an HTTP guardrail service (FastAPI on uvicorn; docs/serve.md)."""

from __future__ import annotations

import argparse
import sys

from q2_metric.cli.common import add_config_args, config_from_args
from q2_metric.errors import Q2Error


def _default_threshold() -> float:
    """`--threshold`'s default (the limits' own module: no FastAPI needed)."""
    from q2_metric.serve.limits import Limits

    return float(Limits.threshold)


def cmd_serve(args: argparse.Namespace) -> int:
    from q2_metric import frontend
    from q2_metric.cli.common import _spell_flag
    from q2_metric.scorer import Q2Scorer

    # the operating point, options, limits and the key checked, then the models, before the server starts
    decision = None
    if args.operating_point is not None:  # read first: a bad file is one sentence, before any model work
        default = _default_threshold()
        decision = frontend.decision(
            args.operating_point, None if args.threshold == default else args.threshold, spell=_spell_flag
        )
        args.threshold = decision.threshold
    config = config_from_args(args, say=lambda msg: print(msg, file=sys.stderr))
    try:
        from q2_metric.serve.app import create_app, uvicorn_server
        from q2_metric.serve.limits import Limits, api_key_from, flags
    except ImportError as err:
        raise Q2Error(
            f"q2 serve needs the serve extra ({err.name} is missing): pip install 'q2-metric[serve]'."
        ) from None
    try:
        limits = Limits(
            **{name: getattr(args, name) for name, *_ in flags()}, api_key=api_key_from(args.api_key_file)
        )
    except OSError as err:
        raise Q2Error(f"Cannot read the API key file '{args.api_key_file}': {err.strerror}.") from None
    with frontend.model_words(_spell_flag, "`--tiny`"):
        frontend.check_models(Q2Scorer(config), spell=_spell_flag)
    app = create_app(config, limits, operating_point=None if decision is None else decision.operating_point)
    app.state.service.say = lambda text: print(text, file=sys.stderr, flush=True)
    auth = "an API key (Authorization: Bearer)" if limits.api_key else "no API key"
    print(f"q2 serve: http://{args.host}:{args.port} ({auth}); loading the models...", file=sys.stderr)
    if decision is not None and decision.operating_point is not None:
        o = decision.summary() or {}
        print(
            f"q2 serve: deciding at the operating point {o['rule']} on {o['dataset']} "
            f"(threshold {o['threshold']:g}, op:{o['signature']})",
            file=sys.stderr,
        )
    uvicorn_server(app, args.host, args.port, log_level=args.log_level, access_log=args.access_log).run()
    return 0


def add_parser(sub: argparse._SubParsersAction) -> None:
    serve = sub.add_parser(
        "serve",
        help="serve Q² over HTTP: a guardrail service (POST /v1/score; docs/serve.md)",
        description="Q² as an HTTP service: one process, models loaded once, requests' items scored "
        "together by the micro-batcher. An API key, when wanted, comes from the environment variable "
        "Q2_SERVE_API_KEY or --api-key-file.",
    )
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on (default: 127.0.0.1)")
    serve.add_argument("--port", type=int, default=8000, help="port to listen on (default: 8000)")
    serve.add_argument("--api-key-file", default=None, help="file whose first line is the API key")
    serve.add_argument(
        "--log-level", default="warning", choices=("critical", "error", "warning", "info", "debug")
    )
    serve.add_argument("--access-log", action="store_true", help="one line per request on stderr")
    serve.add_argument(
        "--operating-point",
        metavar="FILE",
        default=None,
        help="an operating-point file (q2 calibrate): its threshold decides the verdicts (requests "
        "that give no threshold of their own) and the signature names it",
    )
    from q2_metric.serve.limits import flags  # the limits' own module: no FastAPI needed for --help

    limits = serve.add_argument_group("limits and batching")
    for name, flag, kind, default, text in flags():
        limits.add_argument(flag, dest=name, type=kind, default=default, help=f"{text} (default: {default})")
    add_config_args(serve)
    serve.set_defaults(func=cmd_serve)
