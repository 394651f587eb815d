"""Core dataset types: documents, queries, a corpus, and the dataset every stage reads.

A provider (:mod:`bridge.datasets.named`, :mod:`.beir`, :mod:`.irds`, :mod:`.bridge`) turns a
source folder into a :class:`Dataset`; :mod:`bridge.datasets` names them (the registry).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import Protocol

from bridge.core.digests import content_digest
from bridge.core.errors import BridgeError, MissingDataError
from bridge.core.registry import Registry
from bridge.core.trec import Qrels, restrict


@dataclass(frozen=True)
class Document:
    docid: str
    title: str
    text: str

    def contents(self) -> str:
        """Title and text as one string, the form indexed and shown to judges."""
        return f"{self.title}\n{self.text}" if self.title else self.text


@dataclass(frozen=True)
class Query:
    qid: str
    text: str
    answers: tuple[str, ...] = ()


class Corpus(Protocol):
    def __iter__(self) -> Iterator[Document]: ...
    def __len__(self) -> int: ...
    def get(self, docid: str) -> Document | None: ...


class DictCorpus:
    """An in-memory corpus (all bundled datasets fit easily)."""

    def __init__(self, docs: dict[str, Document]) -> None:
        self._docs = docs

    def __iter__(self) -> Iterator[Document]:
        return iter(self._docs.values())

    def __len__(self) -> int:
        return len(self._docs)

    def __contains__(self, docid: object) -> bool:
        return docid in self._docs

    def get(self, docid: str) -> Document | None:
        return self._docs.get(docid)


@dataclass(frozen=True)
class AnsweredPassage:
    """A judged-relevant passage of a query with answers (what answer-swap audit negatives are drawn from)."""

    qid: str
    question: str
    answers: tuple[str, ...]
    docid: str


@dataclass(frozen=True)
class Dataset:
    name: str
    """Registry name as given by the user (``nq``, ``beir:/x/y``)."""
    slug: str
    """File-system-safe name used for ``runs/<slug>``, ``qrels/<slug>``, caches."""
    corpus: Corpus
    queries: tuple[Query, ...]
    qrels: Qrels
    fingerprint: str
    """Identifies the source files by their contents (:func:`fingerprint`); cache keys include it."""
    relevance_threshold: int = 1
    """Minimum grade counted as relevant (binary measures, hole analysis)."""
    description: str = ""
    """What the collection is, in a sentence (the report's header says it: nq is not BEIR's NQ)."""
    limit: int | None = field(default=None)
    known_negatives: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """Unjudged documents known not to answer a query (nq: the answer-free distractors the
    dataset's authors chose), used as audit negatives where the qrels judge no non-relevant pair."""
    candidate_lists: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """Passages the dataset's authors retrieved for a topic (nq: the 20 contexts of the first 441 questions, gold
    included). A hole of a topic with its own list is another kind of hole than one of a topic without
    (:mod:`bridge.datasets.kinds`)."""
    extra_qrels: Mapping[str, Qrels] = field(default_factory=dict)
    """Further qrels sets that come with the dataset (bridge:SUBSET: ``bridge``), compared with ``qrels`` by eval."""
    unlimited: Dataset | None = field(default=None, repr=False, compare=False)
    """The whole dataset this one is the head of (set by :meth:`head`): a ``--limit`` run still measures the gate
    on every relevant passage, draws answer-swap negatives from all of them and audits on reference pairs of any
    question; None: this is the whole dataset."""

    @property
    def qids(self) -> list[str]:
        return [q.qid for q in self.queries]

    @property
    def has_answers(self) -> bool:
        return any(q.answers for q in self.queries)

    def judged_topics(self) -> tuple[str, ...]:
        """Queries the original qrels judge, or (where the dataset brings its own qrels, e.g. BRIDGE's on LoTTE
        without source qrels) any of its qrels sets judges: the topics a leaderboard averages over."""
        judged_by = [self.qrels, *self.extra_qrels.values()]
        return tuple(q for q in self.qids if any(q in qrels for qrels in judged_by))

    def whole(self) -> Dataset:
        """The whole dataset (itself unless it is a ``--limit`` head)."""
        return self.unlimited if self.unlimited is not None else self

    @cached_property
    def _answered(self) -> tuple[AnsweredPassage, ...]:
        whole = self.whole()
        return tuple(
            AnsweredPassage(q.qid, q.text, q.answers, docid)
            for q in whole.queries
            if q.answers
            for docid, grade in sorted(whole.qrels.get(q.qid, {}).items())
            if grade >= self.relevance_threshold
        )

    @cached_property
    def listed_passages(self) -> frozenset[str]:
        """Every passage on some topic's candidate list."""
        return frozenset(d for docs in self.candidate_lists.values() for d in docs)

    def answered(self) -> tuple[AnsweredPassage, ...]:
        """Judged-relevant passages of queries with answers, of the whole dataset."""
        return self._answered

    def query(self, qid: str) -> Query:
        for q in self.queries:
            if q.qid == qid:
                return q
        raise KeyError(qid)

    def head(self, limit: int | None) -> Dataset:
        """The first ``limit`` queries (deterministic: dataset order) and their qrels."""
        if limit is None:
            return self
        if limit <= 0:
            raise BridgeError(f"--limit must be positive, got {limit}")
        queries = self.queries[:limit]
        keep = {q.qid for q in queries}
        negatives = {qid: docs for qid, docs in self.known_negatives.items() if qid in keep}
        qrels = restrict(self.qrels, keep)
        extra = {name: restrict(other, keep) for name, other in self.extra_qrels.items()}
        return replace(
            self,
            queries=queries,
            qrels=qrels,
            limit=limit,
            known_negatives=negatives,
            extra_qrels=extra,
            unlimited=self.whole(),
        )


def require(path: Path, expected: str) -> Path:
    if not path.exists():
        raise MissingDataError(path, expected)
    return path


def fingerprint(*paths: Path) -> str:
    """A dataset's identity from its source files' contents, in order (never their folder, names or mtimes): a
    fresh copy of the same data keeps every index and encoding keyed by it, and a changed byte misses them."""
    h = hashlib.sha256()
    for p in paths:
        h.update(f"{content_digest(p)}\n".encode())
    return h.hexdigest()[:16]


def slug(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-") or "dataset"


@dataclass(frozen=True)
class DatasetSource:
    """A kind of dataset named ``SCHEME:REST``: a local BEIR folder, an ir_datasets id, a BRIDGE subset."""

    usage: str
    """How its names are written, for errors (``beir:PATH``)."""
    slug: Callable[[str], str]
    """The output-folder name of a full name, without loading it (validates the name)."""
    load: Callable[[str, Path], Dataset]
    """The dataset of a full name, from the data directory."""


NAMED: Registry[Callable[[Path], Dataset]] = Registry("dataset", ("bridge.datasets.named",))
"""The shared data's named datasets: name -> loader of ``<data>/``."""
SOURCES: Registry[DatasetSource] = Registry(
    "dataset source", ("bridge.datasets.beir", "bridge.datasets.irds", "bridge.datasets.bridge_benchmark")
)
"""Kinds of dataset by the scheme before the colon of their names."""
