"""`q2 serve`: Q² as an HTTP guardrail service (FastAPI on uvicorn; docs/serve.md)."""

from __future__ import annotations

import argparse
import sys

from q2_metric.cli.common import add_config_args, config_from_args
from q2_metric.errors import Q2Error

_LIMITS = (
    ("--max-body-bytes", int, 1_000_000, "largest request body in bytes (larger: 413)"),
    ("--max-items", int, 256, "most items in one request (more: 413)"),
    ("--max-queue", int, 1024, "most items accepted and not yet answered (more: 429 with Retry-After)"),
    ("--timeout", float, 60.0, "seconds a request may take (longer: 504; its items leave their batch)"),
    ("--max-batch", int, 64, "most items per engine call"),
    (
        "--max-wait",
        float,
        0.02,
        "longest quiet gap a batch waits out for the items it expects (a lone client's request never waits)",
    ),
    ("--threshold", float, 0.5, "default decision threshold: consistent iff Q² > it"),
)


def cmd_serve(args: argparse.Namespace) -> int:
    from q2_metric import frontend
    from q2_metric.cli.common import _spell_flag
    from q2_metric.scorer import Q2Scorer

    # options, limits and the key checked, then the models, before the server starts
    config = config_from_args(args, say=lambda msg: print(msg, file=sys.stderr))
    try:
        from q2_metric.serve.app import Limits, api_key_from, create_app, uvicorn_server
    except ImportError as err:
        raise Q2Error(
            f"q2 serve needs the serve extra ({err.name} is missing): pip install 'q2-metric[serve]'."
        ) from None
    try:
        limits = Limits(
            max_body_bytes=args.max_body_bytes,
            max_items=args.max_items,
            max_queue=args.max_queue,
            timeout=args.timeout,
            max_batch=args.max_batch,
            max_wait=args.max_wait,
            threshold=args.threshold,
            api_key=api_key_from(args.api_key_file),
        )
    except OSError as err:
        raise Q2Error(f"Cannot read the API key file '{args.api_key_file}': {err.strerror}.") from None
    with frontend.model_words(_spell_flag, "`--tiny`"):
        frontend.check_models(Q2Scorer(config), spell=_spell_flag)
    app = create_app(config, limits)
    auth = "an API key (Authorization: Bearer)" if limits.api_key else "no API key"
    print(f"q2 serve: http://{args.host}:{args.port} ({auth}); loading the models...", file=sys.stderr)
    uvicorn_server(app, args.host, args.port, log_level=args.log_level).run()
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
    limits = serve.add_argument_group("limits and batching")
    for flag, kind, default, text in _LIMITS:
        limits.add_argument(flag, type=kind, default=default, help=f"{text} (default: {default})")
    add_config_args(serve)
    serve.set_defaults(func=cmd_serve)
