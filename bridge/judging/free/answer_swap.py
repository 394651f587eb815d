"""Answer-swap negatives: known non-relevant pairs that hold an answer string, like the pool's hard pairs.

On a dataset with short answers (nq) the evidence gate decides every answer-free pair for free, so
the only pool pairs an LLM ever decides hold one of the question's answer strings. An audit whose
negatives are all answer-free never sees that kind of pair. An *answer swap* builds such pairs
with a known label: question q paired with the gold passage of another question q'.

The rule. (q, p) is an answer-swap negative when p is a judged-relevant passage of other questions
(its *donors*) and

1. p contains one of q's answers, matched exactly as the evidence gate matches (so the pair passes
   the gate and reaches the LLM with the matched answers as a hint, like an answer-bearing pool pair);
2. for every donor q' of p, the answers of q and q' share nothing: no normalized answer of one occurs
   as a token sequence inside a normalized answer of the other (``1945`` and ``24 October 1945``
   share; so do ``NFL`` and ``the NFL``);
3. for every donor q' of p, the questions are not near-duplicates: fewer than ``max_question_overlap``
   (half) of the shorter question's content words (normalized tokens without stopwords) occur in the
   other (the overlap coefficient);
4. p is not judged for q;
5. the passage's title does not occur in q, and
6. q names no donor's answer: none of q's content words occurs in an answer of q'.

Conditions 5 and 6 keep out passages about q's own subject, the likeliest to answer it: "what was
Beijing previously known as" with the gold passage of "where is Beijing located" ("Beijing, formerly
romanized as Peking"); "when was the last time the Astros were in the World Series" with the gold
passage of "who won the American League pennant in 2017" (the Houston Astros).

The label is known by construction only as far as the rule goes: a passage written for q' can
still answer q (two questions about one event). The maintainers' reading of a sample measures
that rate (bench/RESULTS.md).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from bridge.datasets import AnsweredPassage, Dataset
from bridge.judging.free.evidence import answer_forms, contains, normalize

STOPWORDS = frozenset({
    "a", "an", "the", "of", "in", "on", "at", "to", "for", "from", "by", "with", "and", "or", "is", "are", "was",
    "were", "be", "been", "being", "do", "does", "did", "what", "who", "whom", "whose", "which", "when", "where",
    "why", "how", "many", "much", "it", "its", "this", "that", "these", "those", "as", "into", "than", "then",
    "there", "their", "they", "he", "she", "his", "her", "him", "we", "you", "your", "i", "me", "my", "our", "us",
    "not", "no", "s", "first", "last", "name", "called",
})  # fmt: skip
MAX_QUESTION_OVERLAP = 0.5


@dataclass(frozen=True)
class AnswerSwap:
    """Question ``qid`` paired with ``docid``, a gold passage of ``donors``, holding ``matched`` of its answers."""

    qid: str
    docid: str
    donors: tuple[str, ...]
    matched: tuple[str, ...]
    overlap: int
    """How many of the question's content words (answers excluded) the passage holds: retrieved pairs are
    topical, so the audit takes the most topical swaps of a question first."""


def content_words(question: str) -> frozenset[str]:
    return frozenset(t for t in normalize(question) if t not in STOPWORDS)


def question_overlap(a: str, b: str) -> float:
    """The share of the shorter question's content words that the other holds (0 when either has none)."""
    x, y = content_words(a), content_words(b)
    return len(x & y) / min(len(x), len(y)) if x and y else 0.0


def answers_share(a: Iterable[str], b: Iterable[str]) -> bool:
    """Whether any normalized answer of one list occurs as a token sequence inside an answer of the other."""
    forms_a = [f for answer in a for f in answer_forms(answer)]
    forms_b = [f for answer in b for f in answer_forms(answer)]
    return any(contains(y, x) for x in forms_a for y in forms_b if len(x) <= len(y)) or any(
        contains(x, y) for y in forms_b for x in forms_a if len(y) <= len(x)
    )


def answer_swaps(
    dataset: Dataset, qids: Sequence[str] | None = None, max_question_overlap: float = MAX_QUESTION_OVERLAP
) -> list[AnswerSwap]:
    """Every answer-swap negative of ``qids`` (default: the dataset's queries), in query order, then docid."""
    donors_of: dict[str, list[AnsweredPassage]] = defaultdict(list)
    for passage in dataset.answered():
        donors_of[passage.docid].append(passage)
    tokens: dict[str, tuple[str, ...]] = {}
    index: dict[str, set[str]] = defaultdict(set)
    for docid in sorted(donors_of):
        doc = dataset.corpus.get(docid)
        if doc is None:
            continue
        tokens[docid] = normalize(doc.contents())
        for token in set(tokens[docid]):
            index[token].add(docid)
    out: list[AnswerSwap] = []
    for qid in dataset.qids if qids is None else qids:
        query = dataset.query(qid)
        if not query.answers:
            continue
        judged = dataset.qrels.get(qid, {})
        question_tokens = normalize(query.text)
        subject = content_words(query.text)
        found: dict[str, list[str]] = defaultdict(list)
        for answer in query.answers:
            for form in answer_forms(answer):
                candidates = set.intersection(*(index.get(t, set()) for t in set(form)))
                for docid in candidates:
                    if contains(tokens[docid], form) and answer not in found[docid]:
                        found[docid].append(answer)
        for docid in sorted(found):
            donors = donors_of[docid]
            if docid in judged or any(d.qid == qid for d in donors):
                continue
            if any(answers_share(query.answers, d.answers) for d in donors):
                continue
            if any(question_overlap(query.text, d.question) >= max_question_overlap for d in donors):
                continue
            title = normalize(dataset.corpus.get(docid).title)  # type: ignore[union-attr]
            if title and contains(question_tokens, title):
                continue
            if any(subject & {t for a in d.answers for t in normalize(a)} for d in donors):
                continue
            matched = tuple(a for a in query.answers if a in found[docid])
            words = content_words(query.text) - {t for a in query.answers for t in normalize(a)}
            overlap = len(words & set(tokens[docid]))
            out.append(AnswerSwap(qid, docid, tuple(d.qid for d in donors), matched, overlap))
    return out
