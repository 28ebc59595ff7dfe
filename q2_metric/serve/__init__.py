"""`q2 serve`: Q² as an HTTP guardrail service (FastAPI on uvicorn, or Ray Serve past one machine).

One process loads the models once; the runtime's micro-batcher (`q2_metric.runtime.micro.
MicroBatcher`) decides which items are scored together; every item goes through the front-end
contract (`q2_metric.frontend`). The app is `q2_metric.serve.app.create_app`; the Ray Serve
deployment `q2_metric.serve.ray_serve`. See docs/serve.md.
"""
