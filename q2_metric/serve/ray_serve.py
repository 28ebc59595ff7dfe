"""`q2 serve`'s app on Ray Serve, past one machine: the same FastAPI app (`create_app`) through
`serve.ingress`, built on each replica (each loads the models once and runs its own micro-batcher).

    from q2_metric.serve.ray_serve import q2_deployment
    serve.run(q2_deployment({"tiny": True}, num_replicas=2), route_prefix="/")

`max_ongoing_requests` is how many requests Ray lets into one replica at once: set it at least to
the micro-batcher's `max_batch` so that batches can fill (Ray's default, 5, would cap them at 5
single-item requests). See docs/serve.md.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from q2_metric.errors import Q2OptionError
from q2_metric.frontend import decision_of
from q2_metric.runtime.cache import runtime_config
from q2_metric.serve.app import create_app
from q2_metric.serve.limits import Limits

DEFAULT_MAX_ONGOING = 128


def q2_deployment(
    options: Mapping[str, Any] | None = None,
    limits: Limits | None = None,
    *,
    num_replicas: int = 1,
    max_ongoing_requests: int = DEFAULT_MAX_ONGOING,
    ray_actor_options: Mapping[str, Any] | None = None,
) -> Any:
    """A bound Ray Serve application of the service: `options` are Q² options as Python names
    (checked here, by the contract's options path, before anything is deployed: `tiny`, `variant`,
    `batch_size`, `max_batch` and `operating_point` too, as every adapter takes them), `limits` the service's
    (`Limits`; `max_batch` in `options` sets its `max_batch`)."""
    from ray import serve

    op = decision_of(options).operating_point  # read before anything is deployed
    config, max_batch = runtime_config(options)
    if max_ongoing_requests < 1 or num_replicas < 1:
        raise Q2OptionError("num_replicas and max_ongoing_requests must be integers >= 1.")

    limits = limits or Limits()
    if max_batch is not None:
        limits = dataclasses.replace(limits, max_batch=max_batch)

    def build_app() -> Any:  # on each replica: its own app, models and micro-batcher
        return create_app(config, limits, operating_point=op)

    deployment = serve.deployment(
        serve.ingress(build_app)(),
        name="q2",
        num_replicas=num_replicas,
        max_ongoing_requests=max_ongoing_requests,
        ray_actor_options=dict(ray_actor_options or {"num_cpus": 1}),
    )
    return deployment.bind()
