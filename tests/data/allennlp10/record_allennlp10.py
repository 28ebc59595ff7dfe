"""Records the expected values of tests/unit/models/paper/test_allennlp_input.py from AllenNLP 1.0.

The released `run_nli.py` calls `Predictor.from_path(snli_roberta-2020.06.09.tar.gz,
predictor_name="textual_entailment").predict(premise=..., hypothesis=...)`. This script runs the
same AllenNLP 1.0.0 / allennlp-models 1.0.0 code (the `snli` reader with a `pretrained_transformer`
tokenizer, add_special_tokens false, and a `pretrained_transformer` indexer and embedder,
max_length 512, as in the archive's training config) on a tiny RoBERTa whose byte-level BPE
tokenizer is trained here (roberta/), builds the archive, loads it with `Predictor.from_path` and
records the keyword arguments the embedder passes to the transformer for each pair
(`input_ids`, `attention_mask`, `token_type_ids` when given), after AllenNLP's folding of
sequences longer than 512.

Environment (Python 3.11): torch==2.13.0 (CPU), then `pip install --no-deps` allennlp==1.0.0,
allennlp-models==1.0.0, transformers==2.11.0 (allennlp 1.0.0 requires transformers>=2.9,<2.12),
overrides==3.0.0 and the plain-Python modules their imports need (numpy, regex, sacremoses,
filelock, requests, tqdm, sentencepiece, six, packaging, jsonpickle, h5py, nltk, scipy,
scikit-learn, narwhals, threadpoolctl, joblib, cloudpickle, tensorboardX, protobuf, tokenizers);
spaCy 2.x and boto3 are replaced by the import-only stand-ins in tests/data/allennlp10/stubs/ (never called
on this path). Run:
    PYTHONPATH=tests/data/allennlp10/stubs .conformance/allennlp-venv/bin/python tests/data/allennlp10/record_allennlp10.py \
        [--annotated .conformance/allennlp_annotated.jsonl]

One departure, forced: AllenNLP 1.0 asks transformers for the *fast* tokenizer (use_fast=True),
which in 2020 was tokenizers 0.7.0 (Rust; no wheel for Python 3.11, its source needs an old nightly
toolchain), and 2.11's fast class cannot drive today's tokenizers. `slow_tokenizers()` therefore
makes transformers' AutoTokenizer return 2.11's slow `RobertaTokenizer`, the byte-level BPE both
implement; the archive's config is as trained. Everything after the tokenizer (special
tokens, type ids, masks, folding at 512) is AllenNLP's own code.
"""

import argparse
import csv
import io
import json
import sys
import tarfile
from pathlib import Path

import torch

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))
from conformance import TORTURE  # noqa: E402  (stdlib-only module top)

LABELS = ["entailment", "contradiction", "neutral"]
LONG = " ".join(["The 1990s , in Berlin ( Germany ) - were a time of change ."] * 60)


def span(question: str, answer: str) -> str:
    """The released code's NLI premise/hypothesis shape for a span."""
    return question + " " + answer + "."


PAIRS = [
    (span("who created pokémon ?", "satoshi tajiri"), span("who created pokémon ?", "Satoshi Tajiri")),
    (span("what is the capital of france ?", "paris"), span("what is the capital of france ?", "Lyon")),
    (span("when was it released ?", "1995 , in tokyo"), span("when was it released ?", "1996")),
    (span("what is ``it'' ?", "''quoted''"), span("what is ``it'' ?", "it")),
    (span("", ""), span("", "x")),
    ("gardening is considered to be a relaxing activity.", "i love gardening ."),
    ("  leading and trailing  ", " hypothesis with spaces "),
    ("double  space\tand tab\nnewline", "x"),
    ("Café Zoë naïve crème brûlée", "cafe zoe naive"),
    ("emoji 😀👍 and 中文 text 北京", "寿司 (sushi) is japanese."),
    ("He wrote <s> and </s> and <pad> in <mask> text", "<unk> tokens"),
    ("", "an empty premise"),
    ("an empty hypothesis", ""),
    (" ", "   "),
    ("don't you've seen it? i'm sure they're right.", "do n't you 've seen it ?"),
    ("ＡＢＣ ｆｕｌｌｗｉｄｔｈ ① ﬁ ligature ™", "½ fractions"),
    (LONG.lower(), "the 1990s were a time of change ."),  # > 512 tokens: AllenNLP folds
    ("short premise .", LONG),  # a long hypothesis
    (" ".join(["word"] * 505), "six tokens of hypothesis here ."),  # the pair crosses 512
] + [(k.lower(), r.lower()) for r, k in TORTURE]  # the end-to-end fallback's shape


def train(texts, out: Path) -> None:
    from tokenizers import ByteLevelBPETokenizer
    from transformers import RobertaConfig, RobertaTokenizer

    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(
        texts, vocab_size=1000, min_frequency=2, special_tokens=["<s>", "<pad>", "</s>", "<unk>", "<mask>"]
    )
    out.mkdir(exist_ok=True)
    bpe.save_model(str(out))
    RobertaTokenizer(str(out / "vocab.json"), str(out / "merges.txt")).save_pretrained(str(out))
    RobertaConfig(
        vocab_size=bpe.get_vocab_size(),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=64,
        max_position_embeddings=514,
        type_vocab_size=1,
    ).save_pretrained(str(out))


def build_archive(base: Path, path: Path) -> None:
    """The archive, and beside it the base model directory its config names (tokenizer files from
    `base`, random weights: the embedder loads them before the archive's weights replace them)."""
    import shutil

    from transformers import RobertaConfig, RobertaModel

    torch.manual_seed(0)
    roberta = RobertaModel(RobertaConfig.from_pretrained(str(base)))
    model_dir = path.parent / "allennlp10_base"
    shutil.copytree(base, model_dir, dirs_exist_ok=True)
    roberta.save_pretrained(str(model_dir))
    base = model_dir
    ff, cls = torch.nn.Linear(32, 32), torch.nn.Linear(32, 3)
    weights = {
        f"_text_field_embedder.token_embedder_tokens.transformer_model.{k}": v
        for k, v in roberta.state_dict().items()
    }
    weights.update({f"_feedforward._linear_layers.0.{k}": v for k, v in ff.state_dict().items()})
    weights.update({f"_classification_layer.{k}": v for k, v in cls.state_dict().items()})
    name = str(base)
    config = {
        "dataset_reader": {
            "type": "snli",
            "tokenizer": {"type": "pretrained_transformer", "model_name": name, "add_special_tokens": False},
            "token_indexers": {
                "tokens": {"type": "pretrained_transformer", "model_name": name, "max_length": 512}
            },
        },
        "model": {
            "type": "basic_classifier",
            "text_field_embedder": {
                "token_embedders": {
                    "tokens": {"type": "pretrained_transformer", "model_name": name, "max_length": 512}
                }
            },
            "seq2vec_encoder": {"type": "cls_pooler", "embedding_dim": 32},
            "feedforward": {"input_dim": 32, "num_layers": 1, "hidden_dims": 32, "activations": "tanh"},
            "dropout": 0.1,
        },
    }
    with tarfile.open(path, "w:gz") as tar:
        for member, data in (
            ("config.json", json.dumps(config).encode()),
            ("vocabulary/labels.txt", ("\n".join(LABELS) + "\n").encode()),
            ("vocabulary/non_padded_namespaces.txt", b"*tags\n*labels\n"),
        ):
            info = tarfile.TarInfo(member)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        buf = io.BytesIO()
        torch.save(weights, buf)
        info = tarfile.TarInfo("weights.th")
        info.size = buf.tell()
        buf.seek(0)
        tar.addfile(info, buf)


def slow_tokenizers() -> None:
    """AutoTokenizer.from_pretrained with use_fast=False, whatever the caller asked (see above)."""
    from transformers.tokenization_auto import AutoTokenizer

    original = AutoTokenizer.from_pretrained.__func__

    def from_pretrained(cls, *args, **kwargs):
        kwargs["use_fast"] = False
        return original(cls, *args, **kwargs)

    AutoTokenizer.from_pretrained = classmethod(from_pretrained)


def plain_tanh() -> None:
    """On torch 2.x `nn.Module.__init__` takes **kwargs, so AllenNLP 1.0's from_params passes its
    extras (vocab) to `nn.Tanh` and fails; re-register "tanh" as a class whose __init__ takes none.
    Model side only: no input id depends on it."""
    from allennlp.nn.activations import Activation

    class Tanh(torch.nn.Tanh):
        def __init__(self) -> None:
            super().__init__()

    Activation.register("tanh", exist_ok=True)(Tanh)


def recorder(predictor):
    """Run predictor.predict and return what the transformer received, per call."""
    transformer = predictor._model._text_field_embedder._token_embedders["tokens"].transformer_model
    seen = []

    def hook(module, args, kwargs):
        seen.append({k: v.tolist() for k, v in kwargs.items() if v is not None})

    transformer.register_forward_pre_hook(hook, with_kwargs=True)

    slow = predictor._dataset_reader._tokenizer.tokenizer

    def record(premise: str, hypothesis: str) -> dict:
        seen.clear()
        try:
            predictor.predict(premise=premise, hypothesis=hypothesis)
        except KeyError:  # make_output_human_readable looks the token ids up in the archive's (here empty)
            pass  # "tokens" vocabulary, after the model has run; the inputs are recorded by then
        except RuntimeError as err:  # unfolding a folded (> 512) sequence divides long tensors with `/`,
            if "can't be cast" not in str(err):  # an integer on torch 1.5, a float on torch 2: it fails
                raise  # after the transformer has run (the CLS pooler reads the first segment's <s>)
        (kw,) = seen
        return {
            "premise": premise,
            "hypothesis": hypothesis,
            "input_ids": kw["input_ids"],
            "attention_mask": [[int(x) for x in row] for row in kw["attention_mask"]],
            "token_type_ids": kw.get("token_type_ids"),
            # 2.11's slow tokenize() strips whitespace at special-token splits and returns nothing for
            # whitespace-only text; the fast tokenizer AllenNLP 1.0 used does neither: not comparable
            "slow_only": any(slow.tokenize(t) != slow._tokenize(t) for t in (premise, hypothesis)),
        }

    return record


def annotated_pairs() -> list[tuple[str, str]]:
    rows = []
    data = ROOT / "data" / "q2_wow"
    for name in ("dodeca_consistent", "dodeca_inconsistent", "memnet_consistent", "memnet_inconsistent"):
        with open(data / f"{name}.csv", newline="", encoding="utf-8") as f:
            rows += [(r["knowledge"], r["response"]) for r in csv.DictReader(f)]
    return rows


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--annotated", help="also record the annotated set's pairs into this JSONL file")
    args = parser.parse_args()
    import allennlp_models.pair_classification  # noqa: F401  (registers the snli reader, as run_nli.py does)
    from allennlp.predictors.predictor import Predictor

    slow_tokenizers()
    plain_tanh()
    texts = [t for pair in PAIRS for t in pair] + [t for pair in annotated_pairs()[:300] for t in pair]
    base = HERE / "roberta"
    train(texts, base)
    archive = Path("/tmp/allennlp10_snli_tiny.tar.gz")
    build_archive(base, archive)
    record = recorder(Predictor.from_path(str(archive), predictor_name="textual_entailment"))
    expected = [record(p, h) for p, h in PAIRS]
    (HERE / "expected.json").write_text(
        json.dumps({"pairs": expected}, ensure_ascii=False) + "\n", encoding="utf-8"
    )
    print(f"{len(expected)} pairs recorded", file=sys.stderr)
    if args.annotated:
        with open(args.annotated, "w", encoding="utf-8") as f:
            for knowledge, response in annotated_pairs():
                for shape, p, h in (
                    ("fallback", knowledge.lower(), response.lower()),
                    (
                        "span",
                        span(
                            "what is " + " ".join(response.split()[:6]) + " ?",
                            " ".join(knowledge.split()[:4]),
                        ),
                        span(
                            "what is " + " ".join(response.split()[:6]) + " ?",
                            " ".join(response.split()[-3:]),
                        ),
                    ),
                ):
                    r = record(p, h)
                    f.write(json.dumps(dict(r, shape=shape), ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
