"""Threads (issue 40, item 4): one `Q2Scorer` shared by threads, and `q2_metric.score` called from
threads with different options. Each thread's result must equal the same call made alone (scores,
and the signature of its own options). The expected values are the lone calls' (the threads'
correctness is what is tested, not the scores)."""

import math
import threading

import pytest

import q2_metric
from q2_metric.scorer import Q2Scorer, cached_scorer

OPTIONS = [  # options that change the scores or the signature, on the same models
    {"use_nli": True},
    {"use_nli": False},
    {"fallback_scores": (1.0, 0.25, 0.0)},
    {"fallback_scores": (0.9, 0.6, 0.1), "use_nli": False},
]


def _same(a: list[float], b: list[float]) -> bool:
    return len(a) == len(b) and all(x == y or (math.isnan(x) and math.isnan(y)) for x, y in zip(a, b))


def _run_threads(jobs):
    """Run each job in its own thread, all started together; return their results in order."""
    out, errors = [None] * len(jobs), []
    start = threading.Barrier(len(jobs))

    def work(i, job):
        try:
            start.wait()
            out[i] = job()
        except BaseException as err:
            errors.append((i, err))

    threads = [threading.Thread(target=work, args=(i, job)) for i, job in enumerate(jobs)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=600)
    assert errors == []
    return out


@pytest.fixture(scope="module")
def batch(rows):
    return [r["response"] for r in rows[:6]], [r["knowledge"] for r in rows[:6]]


def test_score_from_threads_keeps_each_calls_options(tiny_config, batch):
    responses, knowledge = batch
    alone = [q2_metric.score(responses, knowledge, tiny_config, **opts) for opts in OPTIONS]
    # the options matter: the signatures differ, and the fallback scores change the numbers
    assert len({str(r.signature) for r in alone}) == len(OPTIONS)
    assert not _same(alone[0].scores, alone[2].scores)
    together = _run_threads(
        [lambda o=opts: q2_metric.score(responses, knowledge, tiny_config, **o) for opts in OPTIONS * 2]
    )
    for i, result in enumerate(together):
        lone = alone[i % len(OPTIONS)]
        assert str(result.signature) == str(lone.signature)
        assert _same(result.scores, lone.scores) and _same(result.scores_no_nli, lone.scores_no_nli)


def test_cached_scorers_keep_their_options_when_another_thread_asks_for_others(tiny_config, batch):
    responses, knowledge = batch
    first = cached_scorer(tiny_config, use_nli=True)
    second = cached_scorer(tiny_config, use_nli=False)  # the same models, other options
    assert first.config.use_nli is True and second.config.use_nli is False
    assert first.qg is second.qg  # one set of models in memory
    a, b = first.score(responses, knowledge), second.score(responses, knowledge)
    assert "nli" in str(a.signature) and str(a.signature) != str(b.signature)
    again = first.score(responses, knowledge)
    assert str(again.signature) == str(a.signature) and _same(again.scores, a.scores)


def test_one_scorer_shared_by_threads_gives_each_call_its_own_result(tiny_config, rows):
    scorer = Q2Scorer(tiny_config)
    chunks = [
        ([r["response"] for r in rows[i : i + 3]], [r["knowledge"] for r in rows[i : i + 3]])
        for i in range(0, 12, 3)
    ]
    alone = [scorer.score(*chunk) for chunk in chunks]
    together = _run_threads([lambda c=chunk: scorer.score(*c) for chunk in chunks * 2])
    for i, result in enumerate(together):
        lone = alone[i % len(chunks)]
        assert _same(result.scores, lone.scores)
        assert [r.candidates for r in result.responses] == [r.candidates for r in lone.responses]
        assert [[q.question for q in r.questions] for r in result.responses] == [
            [q.question for q in r.questions] for r in lone.responses
        ]


def test_the_python_api_checks_its_options_before_any_model(monkeypatch):
    from q2_metric.errors import Q2OptionError

    def no_model(*args, **kwargs):
        raise AssertionError("a model was loaded")

    for backend in (
        "hf_qg.HFQuestionGenerator",
        "hf_qa.HFQuestionAnswerer",
        "hf_nli.HFNLIClassifier",
        "spacy_parser.SpacyParser",
    ):
        monkeypatch.setattr(f"q2_metric.models.{backend}.__init__", no_model)
    cases = [
        ({"fallback_scores": (0, 2, 1)}, r"fallback_scores=\(0, 2, 1\): use 3 numbers in \[0, 1\]"),
        ({"use_nli": "false"}, r"use_nli='false': use True or False"),
        ({"qg_batch_size": 0}, r"qg_batch_size=0: use an integer >= 1"),
    ]
    for opts, message in cases:
        for call in (
            lambda opts=opts: q2_metric.score(["a"], ["b"], **opts),
            lambda opts=opts: Q2Scorer(**opts),
            lambda opts=opts: cached_scorer(**opts),
        ):
            with pytest.raises(Q2OptionError, match=message):
                call()
    for call in (
        lambda: q2_metric.score(["a"], ["b"], use_nlii=True),
        lambda: Q2Scorer(use_nlii=True),
        lambda: cached_scorer(use_nlii=True),
    ):
        with pytest.raises(
            TypeError, match=r"'use_nlii' is not a Q² option \(did you mean 'use_nli'\?\)"
        ) as info:
            call()
        assert isinstance(info.value, Q2OptionError)


def test_a_scorer_pickles_without_its_lock(tiny_config):
    """Ray ships scorers to its workers by pickling them: the lock stays behind, the copy has its own."""
    import pickle

    view = cached_scorer(tiny_config, use_nli=False)
    copy = pickle.loads(pickle.dumps(view))
    assert copy.config == view.config and copy._lock is not view._lock and copy._origin is None
    with copy._lock:  # a working lock of its own
        pass


def test_threads_loading_different_models_never_build_one_on_the_meta_device(tiny_models):
    """transformers builds a model on the "meta" device by patching torch process-wide while it
    loads: a model another thread loaded meanwhile came out with meta weights ("Cannot copy out of
    meta tensor", issue 49). Loads take turns (`loading._LOADING`)."""
    from transformers import (
        AutoModelForQuestionAnswering,
        AutoModelForSeq2SeqLM,
        AutoModelForSequenceClassification,
    )

    from q2_metric.models.loading import load_pretrained

    jobs = [
        (AutoModelForQuestionAnswering, tiny_models["qa"]),
        (AutoModelForSequenceClassification, tiny_models["nli"]),
        (AutoModelForSeq2SeqLM, tiny_models["qg"]),
    ] * 2
    models = _run_threads(
        [
            lambda loader=loader, path=path: [load_pretrained(loader, path) for _ in range(3)]
            for loader, path in jobs
        ]
    )
    meta = [type(m).__name__ for ms in models for m in ms if any(p.is_meta for p in m.parameters())]
    assert meta == []


def test_scorers_of_different_models_in_threads_give_their_lone_results(
    tiny_config, tiny_models, batch, tmp_path
):
    import shutil

    responses, knowledge = batch
    other_qa = shutil.copytree(tiny_models["qa"], tmp_path / "qa")  # other model options, same bytes
    configs = [tiny_config, tiny_config.replace(qa_model=str(other_qa), nli_model=tiny_models["nli"])]
    configs.append(tiny_config.replace(qa_model=str(other_qa), use_nli=False))
    alone = [Q2Scorer(c).score(responses, knowledge) for c in configs]
    together = _run_threads([lambda c=c: Q2Scorer(c).score(responses, knowledge) for c in configs * 2])
    for i, result in enumerate(together):
        lone = alone[i % len(configs)]
        assert str(result.signature) == str(lone.signature) and _same(result.scores, lone.scores)


def test_score_takes_progress_as_compute_does(tiny_config, batch, capsys):
    """`progress=False` was accepted by `compute()` and refused by `q2_metric.score()` (issue 49):
    both take True/False; `score` also a callback; anything else is one sentence."""
    from q2_metric.errors import Q2OptionError

    responses, knowledge = batch
    quiet = q2_metric.score(responses, knowledge, tiny_config, progress=False)
    assert capsys.readouterr().err == ""
    seen = []
    told = q2_metric.score(responses, knowledge, tiny_config, progress=lambda *a: seen.append(a[0]))
    assert "questions" in seen and _same(told.scores, quiet.scores)
    with pytest.raises(Q2OptionError, match=r"progress='yes': use True, False or a callback"):
        q2_metric.score(responses, knowledge, tiny_config, progress="yes")
