"""Small random T5s for the beam-search tests: pad 0 starts the decoder, and the end token's LM
head row is pushed away from zero so that beams end at different steps."""

from __future__ import annotations

import torch
from transformers import T5Config, T5ForConditionalGeneration

PAD, EOS = 0, 1


def random_t5(
    seed: int, eos_bias: float, vocab: int, d_model: int, d_kv: int, d_ff: int
) -> T5ForConditionalGeneration:
    """A seeded random T5 (2 encoder and 3 decoder layers, 4 heads) in eval mode."""
    torch.manual_seed(seed)
    config = T5Config(
        vocab_size=vocab,
        d_model=d_model,
        d_kv=d_kv,
        d_ff=d_ff,
        num_layers=2,
        num_decoder_layers=3,
        num_heads=4,
        pad_token_id=PAD,
        eos_token_id=EOS,
        decoder_start_token_id=PAD,
    )
    model = T5ForConditionalGeneration(config).eval()
    with torch.no_grad():
        model.lm_head.weight[EOS] += eos_bias * model.lm_head.weight[EOS].sign()
    return model
