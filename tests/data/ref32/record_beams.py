"""Records the expected values of tests/unit/models/paper/test_beam_search.py from transformers 3.2.0: beam
search on inputs whose beams reach the length limit.

Run with the conformance environment's Python (benchmarks/conformance.py builds it), after record.py:
    .conformance/venv/bin/python tests/data/ref32/record_beams.py
It builds tiny random T5s with 3.2 (so they carry the cross-attention bias) on the T5 vocabulary of
t5/, saves their weights under beam_models/<name>/, and writes what 3.2's `generate` returns for
several prompts of expected.json, one prompt per call as the released code calls it, under several
beam settings and short length limits (beams.json). To make beams end at different steps (random
weights almost never pick the end token), the end token's output embedding of the `eos` models is
a copy of a frequent token's, scaled and perturbed: its scores sit next to that token's, and on
`tie` the copy is exact, so the two tokens tie.
"""

import json
from pathlib import Path

import torch
from transformers import T5Config, T5ForConditionalGeneration

HERE = Path(__file__).resolve().parent
SETTINGS = [  # the released code's (beam 5, 5 returned, no repeated 3-grams, early stopping) and others
    dict(num_beams=5, num_return_sequences=5, no_repeat_ngram_size=3, early_stopping=True),
    dict(num_beams=4, num_return_sequences=2, no_repeat_ngram_size=0, early_stopping=False),
    dict(num_beams=4, num_return_sequences=4, no_repeat_ngram_size=2, early_stopping=True),
]
MAX_LENGTHS = [3, 5, 8, 12]
PROMPTS = [0, 1, 3, 6, 9, 17]  # indexes into expected.json "t5": short and long prompts


def model(seed: int, eos: str | None, prompts: list[list[int]]) -> T5ForConditionalGeneration:
    torch.manual_seed(seed)
    t5 = T5ForConditionalGeneration(
        T5Config(
            vocab_size=600,
            d_model=32,
            d_kv=8,
            d_ff=64,
            num_layers=2,
            num_decoder_layers=2,
            num_heads=4,
            pad_token_id=0,
            eos_token_id=1,
            decoder_start_token_id=0,
        )
    ).eval()
    if eos:
        with torch.no_grad():
            emb = t5.shared.weight
            # the token beam search picks most often on the prompts
            picked = torch.cat(
                [
                    t5.generate(
                        input_ids=torch.tensor([ids]), max_length=12, num_beams=5, num_return_sequences=5
                    ).flatten()
                    for ids in prompts
                ]
            )
            frequent = int(torch.bincount(picked[picked > 2]).argmax())
            emb[1] = emb[frequent] if eos == "tie" else 0.97 * emb[frequent] + 0.02 * torch.randn_like(emb[1])
    return t5


def main() -> None:
    expected = json.loads((HERE / "expected.json").read_text(encoding="utf-8"))
    prompts = [expected["t5"][i]["ids"] for i in PROMPTS]
    out = {"settings": SETTINGS, "max_lengths": MAX_LENGTHS, "prompts": prompts, "models": {}}
    for name, seed, eos in (("plain", 1, None), ("eos", 2, "near"), ("eos3", 3, "near"), ("tie", 4, "tie")):
        t5 = model(seed, eos, prompts)
        t5.save_pretrained(str(HERE / "beam_models" / name))
        runs = []
        for setting in SETTINGS:
            for max_length in MAX_LENGTHS:
                beams = []
                for ids in prompts:
                    x = torch.tensor([ids])
                    with torch.no_grad():
                        y = t5.generate(
                            input_ids=x, attention_mask=torch.ones_like(x), max_length=max_length, **setting
                        )
                    beams.append(y.tolist())
                runs.append({"setting": setting, "max_length": max_length, "beams": beams})
        with torch.no_grad():
            greedy = [t5.generate(input_ids=torch.tensor([ids]), max_length=8).tolist()[0] for ids in prompts]
        out["models"][name] = {"runs": runs, "greedy_max_length_8": greedy}
    import transformers

    out["versions"] = {"transformers": transformers.__version__, "torch": torch.__version__}
    (HERE / "beams.json").write_text(json.dumps(out))
    print({k: sum(len(r["beams"]) for r in v["runs"]) for k, v in out["models"].items()})


if __name__ == "__main__":
    main()
