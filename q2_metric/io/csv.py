"""Reading a CSV table strictly (RFC 4180), row by row."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

from q2_metric.errors import Q2InputError
from q2_metric.io.formats import Row, read_text


def _read_csv(
    path: Path, encoding: str, multiline: bool, sep: str = ","
) -> tuple[list[Row], list[str] | None]:
    """The rows of RFC 4180 text separated by `sep` (a comma; a tab for a quoted TSV)."""
    return csv_rows(path, read_text(path, encoding), multiline, sep)


def csv_rows(path: Path, text: str, multiline: bool, sep: str = ",") -> tuple[list[Row], list[str] | None]:
    """`_read_csv` on text already read."""
    records = _scan_csv(text, multiline, sep)
    header = None
    for line, fields, problem in records:
        if fields == []:
            continue
        if fields is None:
            raise Q2InputError(f"The header on line {line} of '{path}' cannot be read: {problem}.")
        header = fields
        break
    if header is None:
        return [], None
    check_unique_columns(path, header)
    rows: list[Row] = []
    for line, fields, problem in records:
        if fields == []:
            continue  # blank line
        row = Row(len(rows) + 1, line)
        if fields is None:
            row.error = f"line {line}: " + re.sub(
                r"field #(\d+)", lambda m: _field_name(header, int(m.group(1)) - 1), problem
            )
        elif len(fields) != len(header):
            row.fields = dict(zip(header, fields))
            row.error = (
                f"line {line}: {len(fields)} field(s) but the header has {len(header)} "
                f"(a {'comma' if sep == ',' else 'tab'} in an unquoted field, or a missing one?)"
            )
        else:
            row.fields = dict(zip(header, fields))
        rows.append(row)
    return rows, header


def check_unique_columns(path: Path, header: list[str]) -> None:
    """Refuse a header that names a column twice, in one pass (a header may have 10⁵ columns)."""
    seen: set[str] = set()
    duplicates: set[str] = set()
    for c in header:
        (duplicates if c in seen else seen).add(c)
    if duplicates:
        raise Q2InputError(
            f"The header of '{path}' names column '{min(duplicates)}' twice; give every column its own name."
        )


def _field_name(header: list[str], index: int) -> str:
    return f"field '{header[index]}'" if index < len(header) else f"field {index + 1}"


_QUOTED = re.compile(r'"([^"]*(?:""[^"]*)*)"')
_REQUOTE = "; quote the whole field and double any quote inside it"


def _csv_patterns(text: str, sep: str = ",") -> tuple[str, re.Pattern[str], re.Pattern[str], re.Pattern[str]]:
    """The file's line break, and the patterns of an unquoted field (strict, and with quotes as
    data) and of a record's end. Records end at LF or CRLF; a CR not followed by LF is data (in a
    file without any LF, the classic Mac OS kind, CR ends records)."""
    s = re.escape(sep)
    if "\n" in text or "\r" not in text:
        field = rf'(?:[^{s}"\r\n]|\r(?!\n))*'
        return "\n", re.compile(field), re.compile(field.replace('"', "")), re.compile(r"\r?\n")
    return "\r", re.compile(rf'[^{s}"\r]*'), re.compile(rf"[^{s}\r]*"), re.compile(r"\r")


def _end(field: re.Pattern[str], text: str, at: int) -> int:
    """Where `field` (a pattern of `_csv_patterns`, which also matches the empty string) ends from `at`."""
    found = field.match(text, at)
    assert found is not None  # `*` patterns always match
    return found.end()


def _scan_csv(text: str, multiline: bool, sep: str = ",") -> Iterator[tuple[int, list[str] | None, str]]:
    """(1-based line, fields or None, problem) for each record of RFC 4180 CSV text; a blank line
    gives `[]`.

    A quoted field may hold commas, doubled quotes, CR, LF and CRLF: they are data, so a record is
    one row whatever it holds, and its line is the file's line it starts on. A record that cannot
    be read as written (an unterminated quote, text after a closing quote, a quote inside an
    unquoted field, or, with `multiline` off, a quoted field running over lines) is reported on its
    first line; where its end is unknown, reading starts again on the next line, so one stray quote
    never swallows the rows after it."""
    nl, unquoted, lenient, end = _csv_patterns(text, sep)
    pos, line, n = 0, 1, len(text)
    while pos < n:
        fields: list[str] = []
        problem, resync = "", False
        p = pos
        while True:
            if text.startswith('"', p):
                m = _QUOTED.match(text, p)
                if m is None:
                    problem, resync = "a double quote opened on this line is never closed" + _REQUOTE, True
                    break
                value = m.group(1).replace('""', '"')
                if not multiline and nl in value:
                    last = line + text.count(nl, pos, m.end())
                    problem = (
                        f"a quoted field opened on this line runs on to line {last} (a stray double "
                        "quote?) while --no-multiline says the rows of this file are one line each; "
                        "fix the quote, or leave out --no-multiline if fields really span lines"
                    )
                    resync = True
                    break
                p = m.end()
                if p < n and text[p] != sep and not end.match(text, p):
                    problem = "a closing double quote is followed by more text in the same field" + _REQUOTE
                    resync = True
                    break
            else:
                first = p
                p = _end(unquoted, text, p)
                if text.startswith('"', p):  # the record still ends where it seems to; it is bad
                    problem = problem or (
                        f"field #{len(fields) + 1} holds a double quote without being "
                        "quoted; quote the whole field and double the quote inside it"
                    )
                    p = _end(lenient, text, p)
                value = text[first:p]
            fields.append(value)
            if text.startswith(sep, p):
                p += 1
                continue
            m = end.match(text, p)
            p = m.end() if m else n
            break
        if resync:
            cut = text.find(nl, pos)
            yield line, None, problem
            pos, line = (n if cut < 0 else cut + len(nl)), line + 1
            continue
        blank = fields == [""] and not text.startswith('"', pos)
        yield line, None if problem else [] if blank else fields, problem
        line += text.count(nl, pos, p)
        pos = p
