"""The set-up the one-off A/B experiments of this folder share (`python benchmarks/experiments/ab_*.py`).

Each experiment compares two ways of running one stage on random-weight models of the paper's shapes,
interleaved (the order alternates per repetition), and prints the figures behind a decision recorded
in `benchmarks/RESULTS.md`. Here: the command line with a fixed seed, the alternating order, the
random T5-base of the question-generation model, the paper's beam search, and `bench_speed` (the
speed benchmark's inputs and its scripted decisions), importable from this folder.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TypeVar

import torch
from transformers import T5Config, T5ForConditionalGeneration

BENCHMARKS = Path(__file__).resolve().parents[1]
if str(BENCHMARKS) not in sys.path:
    sys.path.insert(0, str(BENCHMARKS))

import bench_speed  # noqa: E402  (benchmarks/bench_speed.py: load_pairs, Decisions, WorkingQG)

T = TypeVar("T")

__all__ = ["bench_speed", "interleaved", "paper_beam_search", "parser", "random_t5_base"]


def parser(doc: str) -> argparse.ArgumentParser:
    """The experiment's command line, described by its docstring's first line; torch is seeded (0)."""
    torch.manual_seed(0)
    return argparse.ArgumentParser(description=doc.splitlines()[0])


def interleaved(rep: int, ways: Sequence[T]) -> list[T]:
    """The ways to compare in repetition `rep`: as given on even repetitions, reversed on odd ones
    (so neither always runs first, on a warmer or a busier machine)."""
    return list(ways) if rep % 2 == 0 else list(ways)[::-1]


def random_t5_base(vocab_size: int) -> T5ForConditionalGeneration:
    """A random-weight T5-base (the paper's QG shape) in eval mode; seed torch first."""
    return T5ForConditionalGeneration(
        T5Config(
            vocab_size=vocab_size,
            d_model=768,
            d_kv=64,
            d_ff=3072,
            num_layers=12,
            num_decoder_layers=12,
            num_heads=12,
            decoder_start_token_id=0,
            pad_token_id=0,
            eos_token_id=1,
        )
    ).eval()


def paper_beam_search(steps: int, **extra: Any) -> dict[str, Any]:
    """`generate` keywords of the paper's beam search (5 beams, 5 returned, no repeated trigram),
    run for exactly `steps` steps so that both ways do the same work."""
    return dict(
        num_beams=5,
        num_return_sequences=5,
        no_repeat_ngram_size=3,
        min_new_tokens=steps,
        max_new_tokens=steps,
        do_sample=False,
        **extra,
    )
