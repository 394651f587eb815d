"""Answer evidence: does a passage contain one of its query's answers? Decided for free.

Datasets with short answers (NQ-open, BRIDGE) let a string match settle most pooled pairs before
any model is asked: a passage that contains none of the answers cannot give complete
information for one. The match follows DPR's ``has_answer`` (SQuAD normalization: lowercase,
no punctuation, no articles, collapsed whitespace; a normalized answer must occur as a whole
token sequence), extended where plain strings miss the same content:

* accents are stripped, and dashes, slashes and apostrophes separate words (``Röntgen`` = ``Rontgen``;
  ``Eminem's`` contains ``Eminem``; ``1990–91``);
* thousands separators vanish and decimals stay one token (``1,000`` = ``1000``; ``1.5``);
* numbers written in words become digits on both sides (``twenty-one`` = ``21``,
  ``three million`` = ``3 million`` = ``3000000``, ``first`` = ``1st``);
* month abbreviations are spelled out (``Sept.`` = ``September``), and an answer that is a date
  also matches its other common forms (``July 4, 1776`` = ``4 July 1776`` = ``4th of July 1776``
  = ``1776-07-04``).

The match is a measured trade-off, not a truth: a passage may state an answer in other words.
``bridge evidence`` reports its recall on the gold passages and what it misses.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Literal

from bridge.core.label_records import LabelRecord
from bridge.datasets import Dataset
from bridge.judging.base import Case, Judge, WrapsJudge

EVIDENCE_VERSION = "answer-match-1"
"""Changes whenever the matching rules change; part of every evidence-stage configuration id."""

EvidenceMode = Literal["gate", "hint", "off"]
EVIDENCE_MODES: tuple[str, ...] = ("gate", "hint", "off")

ARTICLES = frozenset({"a", "an", "the"})
MONTHS = (
    "january", "february", "march", "april", "may", "june",
    "july", "august", "september", "october", "november", "december",
)  # fmt: skip
MONTH_ABBREVIATIONS = {m[:3]: m for m in MONTHS if m != "may"} | {"sept": "september"}
_UNITS = (
    "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve",
    "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen",
)  # fmt: skip
_TENS = ("_", "_", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety")
_ORDINAL_UNITS = (
    "zeroth", "first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth", "tenth",
    "eleventh", "twelfth", "thirteenth", "fourteenth", "fifteenth", "sixteenth", "seventeenth", "eighteenth",
    "nineteenth",
)  # fmt: skip
_ORDINAL_TENS = (
    "_", "_", "twentieth", "thirtieth", "fortieth", "fiftieth", "sixtieth", "seventieth", "eightieth", "ninetieth",
)  # fmt: skip
_SMALL = {w: i for i, w in enumerate(_UNITS)} | {w: 10 * i for i, w in enumerate(_TENS) if i >= 2}
_SMALL_ORDINAL = {w: i for i, w in enumerate(_ORDINAL_UNITS)} | {
    w: 10 * i for i, w in enumerate(_ORDINAL_TENS) if i >= 2
}
_SCALES = {"hundred": 100, "thousand": 1_000, "million": 1_000_000, "billion": 1_000_000_000}
_SCALE_ORDINALS = {"hundredth": 100, "thousandth": 1_000, "millionth": 1_000_000, "billionth": 1_000_000_000}

_APOSTROPHES = re.compile(r"['’‘`´]")
_INITIALISM_DOT = re.compile(r"(?<=\b[a-z])\.(?=[a-z]\b)")
_TOKEN = re.compile(r"\d+(?:,\d{3})+(?:\.\d+)?|\d+\.\d+|[^\W_]+")
_DIGITS = re.compile(r"^\d+(?:\.\d+)?$")
_DIGIT_ORDINAL = re.compile(r"^(\d+)(st|nd|rd|th)$")


def ordinal(n: int) -> str:
    """``1st``, ``2nd``, ``3rd``, ``11th``, ``21st``."""
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def _plain_number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


def _number_run(tokens: Sequence[str], start: int) -> tuple[str, int] | None:
    """The number spelled at ``tokens[start:]`` as (canonical token, tokens consumed), or None.

    Cardinals become digits (``twenty one`` -> ``21``, ``one hundred and five`` -> ``105``,
    ``3 million`` -> ``3000000``), ordinals digits with a suffix (``twenty first`` -> ``21st``).
    A digit token not followed by a scale word is left alone (it is already canonical).
    """
    total = 0.0
    current: float | None = None
    last = ""  # kind of the previous word: unit, tens, hundred, scale, and, digits
    i = start
    while i < len(tokens):
        word = tokens[i]
        after_scale = last in ("hundred", "scale", "and")
        if word in _SMALL and _SMALL[word] < 20:
            if current is not None and not (after_scale or (last == "tens" and _SMALL[word] < 10)):
                break
            current, last = (current or 0) + _SMALL[word], "unit"
        elif word in _SMALL:
            if current is not None and not after_scale:
                break
            current, last = (current or 0) + _SMALL[word], "tens"
        elif word in _SMALL_ORDINAL:
            small = _SMALL_ORDINAL[word] < 20
            if current is not None and not (after_scale or (small and last == "tens" and _SMALL_ORDINAL[word] < 10)):
                break
            return ordinal(int(total + (current or 0) + _SMALL_ORDINAL[word])), i - start + 1
        elif word in _SCALE_ORDINALS and current is not None:
            return ordinal(int(total + current * _SCALE_ORDINALS[word])), i - start + 1
        elif _DIGITS.match(word) and current is None:
            if i + 1 >= len(tokens) or tokens[i + 1] not in _SCALES:
                return None
            current, last = float(word), "digits"
        elif word == "hundred" and current is not None and last in ("unit", "tens", "digits"):
            current, last = current * 100, "hundred"
        elif word in _SCALES and word != "hundred" and current is not None and last != "scale":
            total, current, last = total + current * _SCALES[word], 0.0, "scale"
        elif (
            word == "and"
            and last in ("hundred", "scale")
            and i + 1 < len(tokens)
            and (tokens[i + 1] in _SMALL or tokens[i + 1] in _SMALL_ORDINAL)
        ):
            last = "and"
        else:
            break
        i += 1
    if current is None:
        return None
    return _plain_number(total + current), i - start


def _canonical_numbers(tokens: list[str]) -> list[str]:
    out: list[str] = []
    i = 0
    while i < len(tokens):
        run = _number_run(tokens, i)
        if run is None:
            out.append(tokens[i])
            i += 1
        else:
            out.append(run[0])
            i += run[1]
    return out


def normalize(text: str) -> tuple[str, ...]:
    """The token sequence an answer or a passage is matched as (see the module docstring)."""
    text = unicodedata.normalize("NFKD", text)
    text = "".join(c for c in text if not unicodedata.combining(c)).lower()
    text = _INITIALISM_DOT.sub("", _APOSTROPHES.sub(" ", text))
    tokens = []
    for token in _TOKEN.findall(text):
        token = token.replace(",", "")
        if token in ARTICLES:
            continue
        tokens.append(MONTH_ABBREVIATIONS.get(token, token))
    return tuple(_canonical_numbers(tokens))


def _day(token: str) -> int | None:
    match = _DIGIT_ORDINAL.match(token)
    value = int(match.group(1)) if match else int(token) if token.isdigit() else None
    return value if value is not None and 1 <= value <= 31 else None


def _year(token: str) -> bool:
    return token.isdigit() and 1 <= len(token) <= 4


def date_forms(tokens: tuple[str, ...]) -> list[tuple[str, ...]]:
    """Other common spellings of a normalized date (day, month and year; or day and month)."""
    month = day = year = None
    t = list(tokens)
    if t and t[-1] != "of" and len(t) in (2, 3, 4):
        if len(t) >= 2 and t[0] in MONTHS and _day(t[1]):  # july 4 [1776]
            month, day, rest = t[0], _day(t[1]), t[2:]
        elif len(t) >= 2 and _day(t[0]) and t[1] in MONTHS:  # 4 july [1776]
            day, month, rest = _day(t[0]), t[1], t[2:]
        elif len(t) >= 3 and _day(t[0]) and t[1] == "of" and t[2] in MONTHS:  # 4th of july [1776]
            day, month, rest = _day(t[0]), t[2], t[3:]
        elif len(t) == 3 and len(t[0]) == 4 and t[0].isdigit() and t[1].isdigit() and t[2].isdigit():
            m, d = int(t[1]), int(t[2])  # 1776 07 04
            if 1 <= m <= 12 and 1 <= d <= 31:
                month, day, rest = MONTHS[m - 1], d, [t[0]]
            else:
                rest = t
        else:
            rest = t
        if month and len(rest) <= 1 and (not rest or _year(rest[0])):
            year = rest[0] if rest else None
    if month is None or day is None:
        return []
    d, th = str(day), ordinal(day)
    tail = (year,) if year else ()
    forms = [(month, d, *tail), (month, th, *tail), (d, month, *tail), (th, month, *tail), (th, "of", month, *tail)]
    if year and len(year) == 4:
        forms += [(year, f"{MONTHS.index(month) + 1:02d}", f"{day:02d}"), (year, str(MONTHS.index(month) + 1), d)]
    return forms


@lru_cache(maxsize=65536)
def answer_forms(answer: str) -> tuple[tuple[str, ...], ...]:
    """Every token sequence that counts as ``answer`` occurring in a passage."""
    tokens = normalize(answer)
    if not tokens:
        return ()
    forms = dict.fromkeys([tokens, *date_forms(tokens)])
    return tuple(forms)


def occurrences(passage: Sequence[str], needle: Sequence[str]) -> Iterator[int]:
    """Where ``needle`` starts in ``passage`` as a contiguous token sequence (lazily, left to right)."""
    n, first, whole = len(needle), needle[0], tuple(needle)
    return (i for i in range(len(passage) - n + 1) if passage[i] == first and tuple(passage[i : i + n]) == whole)


def contains(passage: Sequence[str], needle: Sequence[str]) -> bool:
    """Whether ``needle`` occurs in ``passage`` as a contiguous token sequence."""
    return next(occurrences(passage, needle), None) is not None


def matched_answers(answers: Iterable[str], passage: str) -> tuple[str, ...]:
    """The answers (as given) that occur in ``passage``, in their original order."""
    tokens = normalize(passage)
    return tuple(a for a in answers if any(contains(tokens, form) for form in answer_forms(a)))


@dataclass(frozen=True)
class EvidenceConfig:
    mode: EvidenceMode = "gate"
    """``gate``: answer-absent pairs are 0 without a call, the rest go to the judge with the matched
    answers as a hint; ``hint``: every pair goes to the judge, with the hint where a match exists;
    ``off``: no evidence stage."""

    def __post_init__(self) -> None:
        if self.mode not in EVIDENCE_MODES:
            raise ValueError(f"evidence mode must be one of {', '.join(EVIDENCE_MODES)}, got {self.mode!r}")


class EvidenceStage(WrapsJudge):
    """A judge in front of another: answer evidence first, the inner judge for what it cannot decide.

    Pairs whose query has no answers pass through unchanged. Every record carries
    ``details["evidence"]`` (mode and matched answers); records decided here have stage ``evidence``
    and route ``answer-absent``.
    """

    stage = "evidence"

    def __init__(self, inner: Judge, config: EvidenceConfig | None = None) -> None:
        self.inner = inner
        self.config = config or EvidenceConfig()
        self.name = inner.name
        self._matched: dict[tuple[tuple[str, ...], str], tuple[str, ...]] = {}
        """(answers, chunk) -> matched answers: a label run asks for a pair several times (routing,
        counts, the audit, judging), and matching normalizes the whole passage."""

    @property
    def config_id(self) -> str:
        if self.config.mode == "off":
            return self.inner.config_id
        return f"{self.inner.config_id}+ev-{self.config.mode}-{EVIDENCE_VERSION}"

    def matches(self, case: Case) -> tuple[str, ...] | None:
        """Matched answers, or None where the evidence stage does not apply (no answers, mode off)."""
        if self.config.mode == "off" or not case.answers:
            return None
        key = (case.answers, case.chunk)
        if key not in self._matched:
            self._matched[key] = matched_answers(case.answers, case.chunk)
        return self._matched[key]

    def judge(self, cases: Sequence[Case], on_record: Callable[[LabelRecord], None]) -> None:
        forward: list[Case] = []
        found: dict[tuple[str, str], tuple[str, ...] | None] = {}
        config_id = self.config_id
        for case in cases:
            matched = self.matches(case)
            found[(case.qid, case.docid)] = matched
            if matched is not None and not matched and self.config.mode == "gate":
                details = {"evidence": {"mode": self.config.mode, "matched": []}}
                on_record(
                    LabelRecord.of_pair(
                        case, label=0, route="answer-absent", judge=self.name, config_id=config_id, model="",
                        details=details, stage=self.stage,
                    )
                )  # fmt: skip
            else:
                forward.append(case if not matched else replace(case, evidence=matched))

        def stamp(record: LabelRecord) -> None:
            matched = found[(record.qid, record.docid)]
            details = dict(record.details)
            if matched is not None:
                details["evidence"] = {"mode": self.config.mode, "matched": list(matched)}
            on_record(replace(record, config_id=config_id, details=details))

        if forward:
            self.inner.judge(forward, stamp)


@dataclass(frozen=True)
class EvidenceRecall:
    """How many original relevant passages the match finds (the gate would wrongly zero the rest)."""

    found: int
    total: int
    missed: tuple[tuple[str, str], ...]
    """(qid, docid) of relevant passages without an answer match."""

    @property
    def rate(self) -> float | None:
        return self.found / self.total if self.total else None


def gold_recall(dataset: Dataset) -> EvidenceRecall:
    """Share of the relevant judged passages (queries with answers) of the *whole* dataset that contain an answer:
    the gate's miss rate is a property of the dataset, and a ``--limit`` head measures it on all of them."""
    found = total = 0
    missed = []
    for passage in dataset.answered():
        doc = dataset.corpus.get(passage.docid)
        if doc is None:
            continue
        total += 1
        if matched_answers(passage.answers, doc.contents()):
            found += 1
        else:
            missed.append((passage.qid, passage.docid))
    return EvidenceRecall(found, total, tuple(missed))
