"""Q²'s rail manifest for NeMo Guardrails (`RAIL`, a `nemoguardrails.manifests.RailManifest`): the output
rail `check answer with q2`, its action `q2_check_answer` (`nemo.py`, a `RailOutcome`), the answer
bound from `bot_message` and the knowledge from the rail's `$knowledge=` parameter.

IORails, NeMo Guardrails 0.24's engine, runs a configured rail through its manifest
(`guardrails/compiled_rail.py`: `compile_rail` resolves the flow to a surface, imports its action
and binds its parameters). Two limits of 0.24 keep Q²'s rail off a plain `Guardrails(config)`:

- The catalog IORails reads is NeMo's built-ins only: `manifests/registry.py` `default_rail_catalog()`
  is `RailCatalog.discover_built_ins()` (`manifests/catalog.py`), which imports the `rail.py`
  modules under `nemoguardrails/library` and nowhere else; `IORails.unsupported_reason`
  (`guardrails/iorails.py`, through `compiled_rail.unservable_reason`) then finds no surface named
  `check answer with q2`, and `Guardrails` falls back to `LLMRails`, where the rail runs (the
  config folder `nemo.stream_config_folder()`).
- Per-request values reach a manifest's action only as `user_message` and `bot_message`
  (`compiled_rail.py`: `_CONTEXT_KEYS`, `_request_context`); a required binding to any other
  context variable (`$q2_knowledge`, `$relevant_chunks`) makes the rail unservable ("needs context
  variable(s) ..., which IORails does not supply"). So on IORails the knowledge can only be the
  rail's `$knowledge="..."` parameter, fixed when the config is loaded (one knowledge per config);
  the knowledge of each turn needs `LLMRails` and `$q2_knowledge`.

`catalog()` is NeMo's built-in catalog with this manifest added (NeMo checks it for collisions);
IORails' own `compile_rail(flow, RailDirection.OUTPUT, deps, catalog=catalog())` compiles and runs
the rail from it (tests/integration/test_guardrails_nemo_stream.py).
"""

from __future__ import annotations

from nemoguardrails.manifests import (
    ActionRef,
    Binding,
    RailActions,
    RailCatalog,
    RailDirection,
    RailFlows,
    RailManifest,
    RailManifestRecord,
    RailMetadata,
    RailPrivacy,
    RailRequirements,
    RailSpec,
    RailSurface,
    ServiceRequirement,
    default_rail_catalog,
)

from q2_metric.guardrails.nemo import STREAM_ACTION, STREAM_FLOW

SERVICE = "Q² service (q2 serve)"
CHECK_ANSWER = ActionRef(name=STREAM_ACTION, target=f"q2_metric.guardrails.nemo:{STREAM_ACTION}")

RAIL = RailManifest(
    name="q2",
    metadata=RailMetadata(
        display_name="Q² factual consistency",
        description=(
            "Blocks a bot answer (or a streamed chunk of it) unless the Q² service finds each "
            "sentence, and the whole, consistent with the knowledge given."
        ),
        categories=("output",),
        capabilities=("allow", "block", "fact_check"),
        tags=("q2", "fact-checking", "grounding", "streaming"),
        docs_url="docs/guardrails.md",
        owner="q2-metric",
    ),
    spec=RailSpec(
        flows=RailFlows(files=(), v1_files=("nemo_stream_config/q2.co",), flow_names=(STREAM_FLOW,)),
        actions=RailActions(refs=(CHECK_ANSWER,)),
        surfaces=(
            RailSurface(
                name=STREAM_FLOW,
                direction=RailDirection.OUTPUT,
                action=CHECK_ANSWER,
                bindings=(
                    Binding.context("bot_message", "bot_message"),
                    Binding.surface_param("knowledge", "knowledge", required=False),
                ),
            ),
        ),
        requirements=RailRequirements(services=(ServiceRequirement(name=SERVICE, required=True),)),
        privacy=RailPrivacy(sends_bot_text=True, sends_retrieved_chunks=True, remote_services=(SERVICE,)),
    ),
)


def catalog() -> RailCatalog:
    """NeMo Guardrails' built-in rail catalog with Q²'s rail added (a name, flow, action or
    surface that collides with a built-in one is NeMo's `ValueError`)."""
    records = list(default_rail_catalog().records.values())
    return RailCatalog([*records, RailManifestRecord(manifest=RAIL, source=__name__)])


__all__ = ["RAIL", "catalog"]
