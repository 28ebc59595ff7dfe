"""Model FLOPs from the shapes actually run: matrix-product work of the QA, NLI and QG models.

Counted: every matrix product (projections, feed-forward, attention scores and their weighted sum,
ALBERT's embedding projection, heads, T5's LM head), 2 FLOPs per multiply-add, as
`torch.utils.flop_counter` counts them. Not counted: elementwise work (softmax, norms, GELU),
embedding look-ups, beam bookkeeping; on these models they are a few percent of the arithmetic but
can be much more of the time, which is what the fraction of peak shows.

Shapes come from the calls themselves: `FlopMeter` hooks a model's forward passes and adds up
what each one computed. For an encoder: rows x padded width, attention over the whole width (a
masked position is still computed). For T5's `generate`: the encoder once per input, then per
decoder step every beam row (finished beams included, as the batch runs on), self-attention over
the tokens so far, cross-attention over the encoder output (its keys and values computed once, at
the first step, on one row per input when the beams share them: `t5_shared_cross`), the LM head on
every row.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch

from q2_metric.models.paper.t5_cache import decoder_cache


@dataclass(frozen=True)
class Dims:
    """The sizes that set a transformer's matrix-product work."""

    kind: str  # "encoder" (ALBERT/BERT/RoBERTa with a head) or "t5"
    hidden: int
    inner: int  # attention width: heads x head size
    ff: int
    layers: int
    ff_inputs: int = 1  # 2 for gated feed-forward (T5 v1.1)
    embedding: int = 0  # ALBERT's factorised embedding size (0: none)
    head: str = "none"  # "qa" (2 logits per token), "cls" (RoBERTa's head on the first token), "none"
    labels: int = 0
    decoder_layers: int = 0
    vocab: int = 0

    @property
    def per_token_layer(self) -> int:
        """FLOPs of one encoder layer's projections and feed-forward for one token."""
        return 2 * (4 * self.hidden * self.inner + (self.ff_inputs + 1) * self.hidden * self.ff)


# Architectures whose matrix products the formulas describe exactly (others: no FLOP figures
# rather than wrong ones, e.g. DeBERTa's relative attention or BART's separate decoder).
ENCODERS = frozenset({"albert", "bert", "roberta", "xlm-roberta", "electra"})
SEQ2SEQ = frozenset({"t5", "mt5"})


def dims_of(config: Any) -> Dims:
    """The `Dims` of a transformers config (ALBERT, BERT, RoBERTa, XLM-R, ELECTRA, T5); TypeError
    for another model type."""
    if config.model_type not in ENCODERS | SEQ2SEQ:
        raise TypeError(f"no FLOP formulas for model type {config.model_type!r}")
    if config.model_type in SEQ2SEQ:
        gated = bool(getattr(config, "is_gated_act", False))
        return Dims(
            "t5",
            config.d_model,
            config.num_heads * config.d_kv,
            config.d_ff,
            config.num_layers,
            ff_inputs=2 if gated else 1,
            decoder_layers=config.num_decoder_layers,
            vocab=config.vocab_size,
        )
    embedding = getattr(config, "embedding_size", config.hidden_size)
    archs = " ".join(getattr(config, "architectures", None) or [])
    head = "qa" if "QuestionAnswering" in archs else "cls" if "SequenceClassification" in archs else "none"
    return Dims(
        "encoder",
        config.hidden_size,
        config.hidden_size,
        config.intermediate_size,
        config.num_hidden_layers,
        embedding=embedding if embedding != config.hidden_size else 0,
        head=head,
        labels=getattr(config, "num_labels", 0),
    )


def encoder_flops(d: Dims, rows: int, width: int) -> int:
    """One encoder forward over `rows` x `width` tokens (T5's encoder, or ALBERT/BERT/RoBERTa
    with its head): projections and feed-forward per token, attention over the whole width."""
    tokens = rows * width
    flops = d.layers * (tokens * d.per_token_layer + rows * 4 * width * width * d.inner)
    if d.embedding:
        flops += tokens * 2 * d.embedding * d.hidden
    if d.head == "qa":
        flops += tokens * 2 * d.hidden * 2
    elif d.head == "cls":
        flops += rows * 2 * d.hidden * (d.hidden + d.labels)
    return flops


def decoder_step_flops(
    d: Dims, rows: int, new: int, past: int, source: int, cross_kv: bool, cross_rows: int | None = None
) -> int:
    """One T5 decoder call: `rows` sequences of `new` tokens after `past` cached ones, attending to
    `source` encoder positions; `cross_kv`: this call computes the cross-attention keys and values,
    on `cross_rows` rows (default `rows`; one per input when beams share them)."""
    tokens = rows * new
    attended = sum(past + i + 1 for i in range(new))  # causal self-attention lengths per row
    per_layer = (
        tokens * 2 * (4 * d.hidden * d.inner + 2 * d.hidden * d.inner + (d.ff_inputs + 1) * d.hidden * d.ff)
        + rows * attended * 4 * d.inner
        + tokens * source * 4 * d.inner
    )
    if cross_kv:
        per_layer += (rows if cross_rows is None else cross_rows) * source * 2 * 2 * d.hidden * d.inner
    return d.decoder_layers * per_layer + tokens * 2 * d.hidden * d.vocab


def merged_step_flops(d: Dims, rows: int, new: int, past: int, beams: int, groups: Sequence[Any]) -> int:
    """One merged decoder call over several batches (`t5_merged_decoder.CrossGroup`s, each with its
    rows and its keys' length): `decoder_step_flops` of each batch alone, added up (the keys and
    values of each batch, one row per input, are counted at the first step, when they are made)."""
    total = decoder_step_flops(d, rows, new, past, 0, False)
    for g in groups:
        length = int(g.keys[0].shape[-2])
        per_layer = g.rows * new * length * 4 * d.inner
        if past == 0:
            per_layer += (g.rows // beams) * length * 2 * 2 * d.hidden * d.inner
        total += d.decoder_layers * per_layer
    return total


def _shape(args: tuple, kwargs: dict, name: str) -> tuple[int, ...] | None:
    x = kwargs.get(name, args[0] if args and name in ("input_ids", "hidden_states") else None)
    if x is None and name == "input_ids":
        x = kwargs.get("inputs_embeds")
        return None if x is None else tuple(x.shape[:2])
    return None if x is None else tuple(x.shape)


class FlopMeter:
    """Adds up the model FLOPs of every forward pass of one model (see the module docstring).

    >>> meter = FlopMeter.attach(model)   # doctest: +SKIP
    >>> model(**batch); meter.flops, meter.tokens   # doctest: +SKIP
    """

    def __init__(self, model: torch.nn.Module) -> None:
        self.dims = dims_of(model.config)
        self._model = model
        self.flops = 0
        self.tokens = 0  # tokens through the model (encoder inputs + decoder tokens x rows)
        self.calls = 0  # forward passes (decoder steps count one each)
        # wall time inside those forward passes (on a GPU: the time to queue them, as nothing waits)
        self.seconds = 0.0
        self._started, self._depth = 0.0, 0
        self._handles = []
        hook = dict(with_kwargs=True)
        if self.dims.kind == "t5":
            counted = [(model.encoder, self._encoder), (model.decoder, self._decoder)]
            timed = [model.encoder, model]  # generate() calls the encoder alone, then the model per step
        else:
            counted, timed = [(model, self._encoder)], [model]
        for module in timed:
            self._handles += [
                module.register_forward_pre_hook(self._start),
                module.register_forward_hook(self._stop, always_call=True),
            ]
        for module, count in counted:
            self._handles.append(module.register_forward_pre_hook(count, **hook))

    @classmethod
    def attach(cls, model: torch.nn.Module) -> FlopMeter:
        """The model's meter, attached on first use (one per model)."""
        meter = getattr(model, "_q2_flop_meter", None)
        if meter is None:
            meter = cls(model)
            model._q2_flop_meter = meter
        return meter

    @classmethod
    def attach_if_known(cls, model: torch.nn.Module) -> FlopMeter | None:
        """`attach`, or None for a model whose sizes the meter cannot read."""
        try:
            return cls.attach(model)
        except (AttributeError, TypeError):
            return None

    def detach(self) -> None:
        for h in self._handles:
            h.remove()
        self._handles = []
        if getattr(self._model, "_q2_flop_meter", None) is self:
            del self._model._q2_flop_meter

    def _start(self, module: Any, args: Any) -> None:
        if self._depth == 0:
            self._started = time.perf_counter()
        self._depth += 1

    def _stop(self, module: Any, args: Any, output: Any) -> None:
        self._depth -= 1
        if self._depth == 0:
            self.seconds += time.perf_counter() - self._started

    def _encoder(self, module: Any, args: Any, kwargs: Any) -> None:
        shape = _shape(args, kwargs, "input_ids")
        if shape is None:
            return
        rows, width = shape
        self.flops += encoder_flops(self.dims, rows, width)
        self.tokens += rows * width
        self.calls += 1

    def _decoder(self, module: Any, args: Any, kwargs: Any) -> None:
        shape = _shape(args, kwargs, "input_ids")
        source = kwargs.get("encoder_hidden_states")
        if shape is None or source is None:
            return
        rows, new = shape
        cache = decoder_cache(kwargs)
        past = int(cache.get_seq_length()) if cache is not None else 0
        cross = getattr(cache, "cross_attention_cache", None)
        cross_kv = cross is None or int(cross.get_seq_length()) == 0
        sharing = getattr(self._model, "_q2_shared_cross", None)
        shared = getattr(sharing, "beams", 1)
        groups = getattr(sharing, "groups", None)
        if groups:  # merged steps (`t5_merged_decoder`): each batch attends to its own length
            self.flops += merged_step_flops(self.dims, rows, new, past, shared, groups)
            self.tokens += rows * new
            self.calls += 1
            return
        self.flops += decoder_step_flops(
            self.dims,
            rows,
            new,
            past,
            source.shape[1],
            cross_kv,
            cross_rows=rows // shared if rows % shared == 0 else rows,
        )
        self.tokens += rows * new
        self.calls += 1


def matmul_peak(
    dtype: torch.dtype = torch.float32,
    n: int = 2048,
    seconds: float = 1.0,
    device: torch.device | str = "cpu",
    onednn: bool = False,
) -> float:
    """Measured FLOP/s of a large square `torch.mm` in `dtype` (the best of repeated runs over
    about `seconds`): the machine's practical matrix-product peak for the current thread setting.
    `onednn=True` times oneDNN's product instead (the CPU kernel of `cpu_matmul='onednn'`)."""
    device = torch.device(device)
    a = torch.randn(n, n, device=device).to(dtype)
    b = torch.randn(n, n, device=device).to(dtype)
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    if onednn:

        def mm(a: Any, b: Any) -> Any:  # a @ b.T, the same FLOPs
            return torch.ops.mkldnn._linear_pointwise(a, b, None, "none", [], "")
    else:
        mm = torch.mm
    mm(a, b)
    sync()
    best, spent = float("inf"), 0.0
    while spent < seconds:
        t0 = time.perf_counter()
        mm(a, b)
        sync()
        dt = time.perf_counter() - t0
        best, spent = min(best, dt), spent + dt
    return 2 * n**3 / best
