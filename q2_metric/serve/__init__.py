"""`q2 serve`: Q² as an HTTP guardrail service (FastAPI on uvicorn, or Ray Serve past one machine).

One process loads the models once; the runtime's micro-batcher (`q2_metric.runtime.micro.
MicroBatcher`) decides which items are scored together; every item goes through the front-end
contract (`q2_metric.frontend`), checked once. Split by job, the path going only down:

- `app`: the routes, module-level handlers (`create_app`, `uvicorn_server`);
- `protocol`: the request and response models (pydantic: the validator and the OpenAPI schema),
  the body read with its deadline, JSON that is text, each item's entry from its record;
- `service`: the one item check, the queue bound, the micro-batcher and the engine;
- `limits`: each limit once, with its flag and help; `metrics`: Prometheus, every answer counted;
- `ray_serve`: the same app as a Ray Serve deployment. See docs/serve.md.
"""
