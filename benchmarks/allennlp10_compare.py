"""Compare what the NLI backend feeds a `q2 convert-nli` model with what AllenNLP 1.0 fed it, pair by
pair, for a JSONL file written by tests/data/allennlp10/record_allennlp10.py (`--annotated FILE`,
or the test set tests/data/allennlp10/expected.json with `--pinned`). Prints identical / total.

    .venv/bin/python benchmarks/allennlp10_compare.py .conformance/allennlp_annotated.jsonl
    .venv/bin/python benchmarks/allennlp10_compare.py --pinned [--hf]   # --hf: before, transformers' pairs
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "unit" / "models" / "paper"))  # the test module that writes archives
sys.path.insert(0, str(ROOT / "tests"))  # support.data, which that module imports


def main() -> int:
    from test_allennlp_input import write_archive  # the archive layout the tests use

    from q2_metric.config import Q2Config
    from q2_metric.models.allennlp_convert import convert_archive
    from q2_metric.models.hf_nli import HFNLIClassifier

    parser = argparse.ArgumentParser()
    parser.add_argument("records", nargs="?")
    parser.add_argument("--pinned", action="store_true", help="the pinned pairs of tests/data/allennlp10")
    parser.add_argument(
        "--hf", action="store_true", help="the model unmarked: transformers' pair encoding (before)"
    )
    args = parser.parse_args()
    if args.pinned:
        rows = json.loads((ROOT / "tests/data/allennlp10/expected.json").read_text(encoding="utf-8"))["pairs"]
    else:
        with open(args.records, encoding="utf-8") as f:
            rows = [json.loads(line) for line in f]
    tmp = Path(tempfile.mkdtemp())
    model_dir = convert_archive(write_archive(tmp), tmp / "nli")
    if args.hf:
        config = json.loads((model_dir / "config.json").read_text(encoding="utf-8"))
        del config["q2_nli_input"]
        (model_dir / "config.json").write_text(json.dumps(config), encoding="utf-8")
    nli = HFNLIClassifier(Q2Config(nli_model=str(model_dir), device="cpu"))
    seen: list[dict] = []
    nli.model.register_forward_pre_hook(
        lambda m, a, kw: seen.append({k: v.tolist() for k, v in kw.items() if v is not None}),
        with_kwargs=True,
    )
    same = 0
    for r in rows:
        seen.clear()
        nli.classify([r["premise"]], [r["hypothesis"]])
        ok = (
            len(seen) == 1
            and "token_type_ids" not in seen[0]
            and r["token_type_ids"] is None
            and seen[0]["input_ids"] == r["input_ids"][:1]
            and seen[0]["attention_mask"] == r["attention_mask"][:1]
        )
        same += ok
        if not ok:
            print(
                f"differs{' (slow-tokenizer wrapper, not comparable)' if r.get('slow_only') else ''}: "
                f"{r['premise'][:50]!r} / {r['hypothesis'][:30]!r}"
            )
    print(f"{nli.tokenization}: model input ids and masks identical {same}/{len(rows)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
