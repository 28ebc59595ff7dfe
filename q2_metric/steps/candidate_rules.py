"""Answer candidates without English spaCy: the rules (numbers and dates in every script, BIO tags
to spans, the order of a text's candidates) and the stage over a `CandidateExtractor`.

Every candidate keeps exact character offsets: `candidate.text == text[start:end]`, in every
script (Latin with combining marks, CJK without spaces, right-to-left Arabic): the rules match the
text as it is, never a normalised copy, and a span's outer white space is left out by moving its
offsets, never by editing its text.

Numbers and dates (`numbers_and_dates`), by rule:
- digits of any script (`\\d`: ASCII, Arabic-Indic ٠-٩, Persian ۰-۹, full-width ０-９, ...), with
  inner separators `.`, `,`, `'`, Arabic ٫ and ٬ (`3,7`, `8,849`, `٦٦٥٠`, `２０２１`), and `%`/`٪`
  written against them; not digits right after a Latin, Greek or Cyrillic letter (`H2O`, `MP3`),
  while CJK and Arabic letters may touch a number (`高3776米`, `و٣٫٥`: "and 3.5");
- dates: ISO (`2021-03-05`), numeric (`05.03.2021`, `5/3/21`), CJK (`2021年3月5日`, `3月5日`,
  `1989年`; Korean `2021년 3월 5일`), a day and a month's name with an optional year in English,
  German, French, Spanish, Italian, Portuguese, Russian (the genitive `марта`) and Arabic
  (`5. März 2021`, `5 марта 2021 года`, `5 de marzo de 2021`, `٥ مارس ٢٠٢١`), and a month's
  name with a day and year or a year (`March 5, 2021`, `März 2021`).
  A date is found before the numbers inside it; numbers are the digits no date holds.
  Not found: numbers written in words (`两千一百万`, `drei`), Hijri and other calendars' month names.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from q2_metric.components import Candidate, CandidateExtractor
from q2_metric.results import Pair
from q2_metric.steps.unique import unique_call

ENTITY, NOUN_CHUNK, NUMBER, DATE = "entity", "noun_chunk", "number", "date"

# Month names (lower case; matched case-insensitively), with the forms a date writes them in.
MONTHS = {
    "en": "january february march april may june july august september october november december",
    "de": "januar jänner februar märz maerz april mai juni juli august september oktober november dezember",
    "fr": "janvier février fevrier mars avril mai juin juillet août aout septembre octobre novembre décembre decembre",
    "es": "enero febrero marzo abril mayo junio julio agosto septiembre setiembre octubre noviembre diciembre",
    "it": "gennaio febbraio marzo aprile maggio giugno luglio agosto settembre ottobre novembre dicembre",
    "pt": "janeiro fevereiro março marco abril maio junho julho agosto setembro outubro novembro dezembro",
    "ru": "января февраля марта апреля мая июня июля августа сентября октября ноября декабря "
    "январь февраль март апрель май июнь июль август сентябрь октябрь ноябрь декабрь",
    "ar": "يناير فبراير مارس أبريل ابريل مايو يونيو يوليو أغسطس اغسطس سبتمبر أكتوبر اكتوبر نوفمبر ديسمبر",
}
_MONTH = (
    "(?:"
    + "|".join(sorted({m for names in MONTHS.values() for m in names.split()}, key=len, reverse=True))
    + ")"
)
_END = r"(?!\w)"  # a word ends here (no letter, digit or mark of any script follows)
_YEAR = r"\d{4}"
_DATE = re.compile(
    "|".join(
        [
            r"(?<!\d)\d{4}-\d{1,2}-\d{1,2}(?!\d)",  # ISO
            r"(?<!\d)\d{1,2}[./]\d{1,2}[./](?:\d{4}|\d{2})(?!\d)",  # numeric
            r"(?<!\d)\d{1,4}\s?年(?:\s?\d{1,2}\s?月(?:\s?\d{1,2}\s?[日号])?)?",  # CJK, from the year
            r"(?<!\d)\d{1,2}\s?月\s?\d{1,2}\s?[日号]",  # CJK, month and day
            r"(?<!\d)\d{1,4}년(?:\s?\d{1,2}월(?:\s?\d{1,2}일)?)?",  # Korean
            # a day, a month's name (German: "5. März"; Spanish, Portuguese: "5 de marzo"), a year
            rf"(?<!\d)\d{{1,2}}\.?\s(?:de\s)?{_MONTH}{_END}(?:,?\s(?:de\s)?{_YEAR}(?!\d)(?:\s(?:года|год|г\.))?)?",
            rf"{_MONTH}\s\d{{1,2}}(?:st|nd|rd|th)?,?\s{_YEAR}(?!\d)",  # English: March 5, 2021
            rf"{_MONTH}\s{_YEAR}(?!\d)",  # a month and a year
        ]
    ),
    re.IGNORECASE,
)
# a letter of a script written with spaces and without joining words to numbers (Latin, Greek,
# Cyrillic): digits right after one belong to a name ("H2O", "MP3"), not a number
_CODE_LETTER = "A-Za-z\u00c0-\u024f\u0370-\u03ff\u0400-\u04ff"
_NUMBER = re.compile(rf"(?<![\d{_CODE_LETTER}])\d+(?:[.,'\u066b\u066c]\d+)*(?:[%\u066a])?")


def numbers_and_dates(text: str) -> list[Candidate]:
    """The dates and numbers of `text`, in text order, each with its exact offsets (module
    docstring for the rules).

    >>> [(c.text, c.kind) for c in numbers_and_dates("Am 5. März 2021 kamen 300 Gäste.")]
    [('5. März 2021', 'date'), ('300', 'number')]
    >>> [(c.text, c.start, c.end) for c in numbers_and_dates("会議は２０２１年３月５日に")]
    [('２０２１年３月５日', 3, 12)]
    """
    found = [Candidate(m.group(), m.start(), m.end(), DATE) for m in _DATE.finditer(text)]
    taken = [(c.start, c.end) for c in found]
    for m in _NUMBER.finditer(text):
        if not any(s < m.end() and m.start() < e for s, e in taken):
            found.append(Candidate(m.group(), m.start(), m.end(), NUMBER))
    return sorted(found, key=lambda c: (c.start, c.end))


def trimmed(text: str, start: int, end: int, kind: str) -> Candidate | None:
    """The candidate `text[start:end]` without its outer white space (offsets moved), None when
    nothing is left."""
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return Candidate(text[start:end], start, end, kind) if start < end else None


def bio_spans(text: str, offsets: Sequence[tuple[int, int]], labels: Sequence[str]) -> list[Candidate]:
    """Entities from per-token BIO labels (`B-X`, `I-X`, `O`; `S-X`/`E-X` of BIOES, and a bare `X`
    read as `I-X`) and the tokens' [start, end) offsets in `text` (tokens with an empty span, the
    special tokens, are skipped): a `B-` opens an entity, an `I-` of the same type extends it, an `I-`
    of another type or after `O` opens one (lenient, as transformers' "simple" grouping). An
    entity spans its first token's start to its last token's end, outer white space left out.

    >>> t = "Anna lebt in Köln."
    >>> spans = bio_spans(t, [(0, 4), (4, 9), (9, 12), (12, 17), (17, 18)], ["B-PER", "O", "O", "B-LOC", "O"])
    >>> [(c.text, c.start, c.end) for c in spans]
    [('Anna', 0, 4), ('Köln', 13, 17)]
    """
    out: list[Candidate] = []
    current: list[int] | None = None  # [start, end] of the open entity
    kind = ""

    def close() -> None:
        if current is not None:
            found = trimmed(text, current[0], current[1], ENTITY)
            if found is not None:
                out.append(found)

    for (start, end), label in zip(offsets, labels):
        if start >= end:
            continue
        tag, _, typ = label.partition("-") if "-" in label else ("I", "", label)
        if label == "O" or tag not in ("B", "I", "S", "E"):
            close()
            current = None
            continue
        if tag in ("B", "S") or current is None or typ != kind:
            close()
            current, kind = [start, end], typ
        else:
            current[1] = end
        if tag in ("S", "E"):
            close()
            current = None
    close()
    return out


def ordered_candidates(
    entities: Iterable[Candidate], noun_chunks: Iterable[Candidate] = (), rules: Iterable[Candidate] = ()
) -> list[Candidate]:
    """A text's candidates in the paper's order: every entity (repeats kept), then each noun chunk
    whose lower-cased text is no candidate's so far, then every number and date (`rules`); an
    entity or noun chunk that overlaps a number or date is left out (the rule's span is exact where
    a model's may cut a date in pieces).

    >>> e = [Candidate("Köln", 0, 4, "entity"), Candidate("März", 30, 34, "entity")]
    >>> n = [Candidate("köln", 0, 4, "noun_chunk"), Candidate("die Stadt", 9, 18, "noun_chunk")]
    >>> r = [Candidate("1989", 22, 26, "number"), Candidate("5. März", 27, 34, "date")]
    >>> [c.text for c in ordered_candidates(e, n, r)]
    ['Köln', 'die Stadt', '1989', '5. März']
    """
    rules = list(rules)

    def free(c: Candidate) -> bool:
        return not any(r.start < c.end and c.start < r.end for r in rules)

    out = [c for c in entities if free(c)]
    seen = {c.text.lower() for c in out}
    for chunk in noun_chunks:
        if free(chunk) and chunk.text.lower() not in seen:
            out.append(chunk)
            seen.add(chunk.text.lower())
    return out + rules


def find_candidates_by(pairs: Sequence[Pair], extractor: CandidateExtractor, drop: Iterable[str]) -> str:
    """Stage "candidates" over a `CandidateExtractor` (the languages without the paper's spaCy
    pipeline): extract each distinct response's candidates once, and set `candidates` and
    `candidate_offsets` of every pair, as `candidates.find_candidates` does; a candidate equal
    (case-insensitively) to a word in `drop` is removed. Returns the extractor's name (the spec
    that ran)."""
    found = unique_call([p.response for p in pairs], extractor.extract)
    dropped = {d.lower() for d in drop}
    for p in pairs:
        kept = [c for c in found[p.response] if c.text.lower() not in dropped]
        p.result.candidates = [c.text for c in kept]
        p.result.candidate_offsets = [(c.start, c.end) for c in kept]
    return extractor.name
