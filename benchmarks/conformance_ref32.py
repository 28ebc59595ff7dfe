"""The transformers 3.2 side of the conformance run (`benchmarks/conformance.py`); runs in the
separate environment that script builds, never imports q2_metric.

    python conformance_ref32.py build JOB.json   # random-weight T5 and ALBERT, built and saved by 3.2
    python conformance_ref32.py run JOB.json     # the released QG/QA code on the job's inputs

`run` loads the released `pipeline/question_generation.py` and `pipeline/question_answering.py`
unmodified (they load their models by Hub id, relative to the working directory, which is set to
the folder holding the saved models) and records what their models receive and return by wrapping
the module-level model objects. `question_generation.py` loads spaCy at import for candidate
extraction, which the conformance run does on the project side: a stand-in `spacy` module is given
to it, and its candidate function is never called.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
import time
import types
from pathlib import Path

import torch

QG_ID = "mrm8488/t5-base-finetuned-question-generation-ap"
QA_ID = "ktrapeznikov/albert-xlarge-v2-squad-v2"
CROSS_BIAS = "decoder.block.0.layer.1.EncDecAttention.relative_attention_bias.weight"


def build(job: dict) -> None:
    from transformers import (
        AlbertConfig,
        AlbertForQuestionAnswering,
        AlbertTokenizer,
        T5Config,
        T5ForConditionalGeneration,
        T5Tokenizer,
    )

    out = Path(job["models"])
    t5_tok = T5Tokenizer(job["t5_spiece"])
    albert_tok = AlbertTokenizer(job["albert_spiece"])
    torch.manual_seed(job.get("seed", 0))
    t5 = T5ForConditionalGeneration(
        T5Config(
            vocab_size=t5_tok.vocab_size,
            pad_token_id=t5_tok.pad_token_id,
            eos_token_id=t5_tok.eos_token_id,
            decoder_start_token_id=t5_tok.pad_token_id,
            **job["t5_shape"],
        )
    )
    with torch.no_grad():  # a trained-looking bias: random N(0, 1) is what T5's init gives it too
        t5.state_dict()[CROSS_BIAS].normal_(0.0, job.get("bias_std", 1.0))
    albert = AlbertForQuestionAnswering(
        AlbertConfig(
            vocab_size=albert_tok.vocab_size,
            pad_token_id=albert_tok.pad_token_id,
            max_position_embeddings=512,
            **job["albert_shape"],
        )
    )
    # `eos`: the bias present, and the end token's output embedding a scaled, perturbed copy of the
    # token beam search picks most on the probe prompts, so that beams end at different steps
    # (random weights almost never pick the end token): both the limit and earlier endings occur
    eos = T5ForConditionalGeneration(t5.config)
    eos.load_state_dict(t5.state_dict())
    eos.eval()
    with torch.no_grad():
        picked = torch.cat(
            [
                eos.generate(
                    input_ids=torch.tensor([t5_tok.encode(p)]),
                    max_length=12,
                    num_beams=5,
                    num_return_sequences=5,
                ).flatten()
                for p in job.get("probe", ["a"])
            ]
        )
        frequent = int(torch.bincount(picked[picked > 2]).argmax())
        emb = eos.shared.weight
        emb[1] = 0.97 * emb[frequent] + 0.02 * torch.randn_like(emb[1])
    for folder, model, zero in (
        (out / "bias", t5, False),
        (out / "eos", eos, False),
        (out / "zeroed", t5, True),
    ):
        qg_dir = folder / QG_ID
        if zero:
            with torch.no_grad():
                t5.state_dict()[CROSS_BIAS].zero_()
        model.save_pretrained(str(qg_dir))
        t5_tok.save_pretrained(str(qg_dir))
        qa_dir = folder / QA_ID
        albert.save_pretrained(str(qa_dir))
        albert_tok.save_pretrained(str(qa_dir))
    print(json.dumps({"cross_bias_saved": CROSS_BIAS in t5.state_dict()}))


class Recorder(torch.nn.Module):
    """Stands in for the released modules' model object: calls it, records what went in and out."""

    def __init__(self, model, log: list) -> None:
        super().__init__()
        self.model, self.log, self.active = model, log, True

    def generate(self, **kwargs):
        if self.active:
            out = self.model.generate(**kwargs)
        else:  # only the input is compared for this prompt: an empty question stands in
            n = kwargs.get("num_return_sequences", 1)
            c = self.model.config
            out = torch.tensor([[c.decoder_start_token_id, c.eos_token_id]] * n)
        self.log.append(
            {
                "input_ids": kwargs["input_ids"][0].tolist(),
                "attention_mask": kwargs["attention_mask"][0].tolist(),
                "output": out.tolist(),
            }
        )
        return out

    def forward(self, **kwargs):
        inputs = {k: v[0].tolist() for k, v in kwargs.items() if torch.is_tensor(v)}
        if len(inputs["input_ids"]) > self.model.config.max_position_embeddings:
            # the released code cannot read it: ALBERT has no position past 512
            self.log.append(inputs | {"start": -1, "end": -1, "margin": 0.0})
            raise ValueError("longer than the model's positions")
        out = self.model(**kwargs)
        start, end = out[0][0], out[1][0]
        s, e = int(torch.argmax(start)), int(torch.argmax(end))
        # margins to the runner-up, to tell a float-rounding near-tie from a real difference
        top_s, top_e = torch.topk(start, 2).values.tolist(), torch.topk(end, 2).values.tolist()
        self.log.append(
            inputs | {"start": s, "end": e, "margin": min(top_s[0] - top_s[1], top_e[0] - top_e[1])}
        )
        return out


def load_released(released: Path, name: str, cwd: Path):
    """Import a released pipeline module (unmodified) with `cwd` as the working directory."""
    sys.modules.setdefault("spacy", types.SimpleNamespace(load=lambda *_a, **_k: None))
    here = os.getcwd()
    os.chdir(cwd)
    try:
        spec = importlib.util.spec_from_file_location(
            f"released_{name}_{cwd.name}", released / "pipeline" / f"{name}.py"
        )
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        os.chdir(here)
    return module


def run(job: dict) -> None:
    released, models = Path(job["released"]), Path(job["models"])
    lengths = job.get("max_lengths", [job["max_length"]])
    result: dict = {"qg": {}, "qa": {}}
    started = time.time()
    for variant in job["variants"]:
        qg = load_released(released, "question_generation", models / variant)
        log: list = []
        qg.qg_model = recorder = Recorder(qg.qg_model.eval(), log)
        rows = []
        for (answer, context), generate in zip(job["qg"], job["generate"]):
            row = {}
            for n, L in enumerate(lengths):  # the first length's keys are plain, the others' end in @L
                at = "" if n == 0 else f"@{L}"
                recorder.active = generate
                beams = qg.get_questions_beam(answer, context, max_length=L)
                beam_rec = log.pop()
                row |= {
                    "input_ids": beam_rec["input_ids"],
                    "attention_mask": beam_rec["attention_mask"],
                    "beam_ids" + at: beam_rec["output"],
                    "beam" + at: beams,
                    # the prompt decoded as the beam path decodes a question
                    "prompt_decoded": qg.qg_tokenizer.decode(
                        beam_rec["input_ids"], skip_special_tokens=True
                    ).replace("question: ", "", 1),
                }
                if job["greedy"] and generate:
                    greedy = qg.get_question_greedy(answer, context, max_length=L)
                    ids = log.pop()["output"][0]
                    # the released greedy path decodes without skip_special_tokens; also record 3.2's
                    # decoding with it, the way the beam path decodes
                    row |= {
                        "greedy_ids" + at: ids,
                        "greedy_released" + at: greedy,
                        "greedy" + at: qg.qg_tokenizer.decode(ids, skip_special_tokens=True).replace(
                            "question: ", "", 1
                        ),
                    }
                if not generate:
                    break  # only the input is compared
            rows.append(row)
        result["qg"][variant] = rows
    qa = load_released(released, "question_answering", models / job["variants"][0])
    log = []
    qa.qa_model = Recorder(qa.qa_model.eval(), log)
    rows = []
    for question, text in job["qa"]:
        try:
            answer = qa.get_answer(question, text)
        except ValueError:
            answer = None
        rec = log.pop()
        rows.append(
            {
                "input_ids": rec["input_ids"],
                "token_type_ids": rec["token_type_ids"],
                "attention_mask": rec["attention_mask"],
                "start": rec["start"],
                "end": rec["end"],
                "margin": rec["margin"],
                "answer": answer,
                # the text's tokens as the released code turns a span into its answer
                "text_decoded": qa.qa_tokenizer.convert_tokens_to_string(
                    qa.qa_tokenizer.convert_ids_to_tokens(
                        rec["input_ids"][rec["token_type_ids"].index(1) : -1]
                    )
                )
                if 1 in rec["token_type_ids"]
                else "",
            }
        )
    result["qa"] = rows
    result["seconds"] = time.time() - started
    import transformers

    result["versions"] = {"transformers": transformers.__version__, "torch": torch.__version__}
    Path(job["output"]).write_text(json.dumps(result))


if __name__ == "__main__":
    what, path = sys.argv[1], sys.argv[2]
    job = json.loads(Path(path).read_text())
    torch.set_num_threads(job.get("threads", 1))
    {"build": build, "run": run}[what](job)
