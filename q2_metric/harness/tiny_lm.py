"""A tiny random causal LM (GPT-2, 2 layers, d 32, a byte-level BPE tokenizer trained on the shipped
WoW contexts) for trying the harnesses offline: `python -m q2_metric.harness tiny-lm DIR`. Its
replies are gibberish; with the tiny Q² models (`Q2_TINY=1`) the whole loop runs in seconds."""

from __future__ import annotations

from pathlib import Path


def build_tiny_lm(folder: str | Path, seed: int = 0) -> Path:
    """Build (or rebuild) the model into `folder`, saved with `save_pretrained`; returns the folder."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

    from q2_metric.harness import wow_contexts

    rows = wow_contexts()
    texts = [r[c] for r in rows for c in ("topic", "message", "knowledge")]
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.train_from_iterator(
        texts,
        trainers.BpeTrainer(
            vocab_size=500,
            special_tokens=["<|endoftext|>"],
            initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
            show_progress=False,
        ),
    )
    end = "<|endoftext|>"
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok, bos_token=end, eos_token=end, unk_token=end, pad_token=end
    )
    fast.model_max_length = 1024
    torch.manual_seed(seed)
    config = GPT2Config(
        vocab_size=len(fast),
        n_positions=1024,
        n_embd=32,
        n_layer=2,
        n_head=2,
        bos_token_id=fast.bos_token_id,
        eos_token_id=fast.eos_token_id,
    )
    folder = Path(folder)
    GPT2LMHeadModel(config).eval().save_pretrained(folder)
    fast.save_pretrained(folder)
    return folder
