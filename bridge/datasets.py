"""Dataset registry: each name gives a corpus, ordered queries (with answers if any) and original qrels.

Names:
  ``nq``        NQ-open (Lost-in-the-Middle release) from ``<data>/nq_open_litm``
  ``scifact``   BEIR SciFact, test split, from ``<data>/beir_scifact``
  ``dl19``      TREC DL 2019 passage, judged passages as corpus, from ``<data>/trec_dl2019_passage``
  ``nfcorpus``  NFCorpus original release, test split (title queries), from ``<data>/nfcorpus_original_test``
  ``beir:PATH[#SPLIT]``  any local BEIR folder (corpus.jsonl, queries.jsonl, qrels/SPLIT.tsv; split ``test``)
  ``irds:ID``   any ir_datasets id (offline, it serves what its cache holds)
  ``bridge:SUBSET``  the published BRIDGE qrels from ``<data>/bridge`` (see :mod:`bridge.bridge_benchmark`)

NQ document ids: the 19 distractor passages of the first 441 questions carry their DPR
Wikipedia passage id (``psgs_w100`` numbering) and keep it. The gold passages of the oracle
file carry no id; each gets ``nqgold-`` + the first 12 hex digits of SHA-1 over
``title + "\\n" + text`` (UTF-8), so the id depends only on the passage's content and is
identical on every machine. Passages with the same (title, text) are one document.
Query ids are the 0-based line numbers of ``nq-open-oracle.jsonl.gz`` as strings.
"""

from __future__ import annotations

import csv
import gzip
import hashlib
import json
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Protocol

from bridge.errors import BridgeError, InputError, MissingDataError
from bridge.fsio import read_jsonl
from bridge.trec import Qrels, read_qrels, restrict


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
    """Identifies the source files (paths, sizes, mtimes); cache keys include it."""
    relevance_threshold: int = 1
    """Minimum grade counted as relevant (binary measures, hole analysis)."""
    limit: int | None = field(default=None)
    known_negatives: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """Unjudged documents known not to answer a query (nq: the answer-free distractors the
    dataset's authors chose), used as audit negatives where the qrels judge no non-relevant pair."""
    extra_qrels: Mapping[str, Qrels] = field(default_factory=dict)
    """Further qrels sets that come with the dataset (bridge:SUBSET: ``bridge``), compared with ``qrels`` by eval."""
    answered_passages: tuple[AnsweredPassage, ...] | None = None
    """The relevant passages of every query of the *whole* dataset (set by :meth:`head`, so a ``--limit`` run
    still draws answer-swap negatives from all of them); None: computed from this dataset."""

    @property
    def qids(self) -> list[str]:
        return [q.qid for q in self.queries]

    @property
    def has_answers(self) -> bool:
        return any(q.answers for q in self.queries)

    def answered(self) -> tuple[AnsweredPassage, ...]:
        """Judged-relevant passages of queries with answers, of the whole dataset."""
        if self.answered_passages is not None:
            return self.answered_passages
        return tuple(
            AnsweredPassage(q.qid, q.text, q.answers, docid)
            for q in self.queries
            if q.answers
            for docid, grade in sorted(self.qrels.get(q.qid, {}).items())
            if grade >= self.relevance_threshold
        )

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
        answered = self.answered() if self.has_answers else None
        return replace(
            self,
            queries=queries,
            qrels=qrels,
            limit=limit,
            known_negatives=negatives,
            extra_qrels=extra,
            answered_passages=answered,
        )


def _require(path: Path, expected: str) -> Path:
    if not path.exists():
        raise MissingDataError(path, expected)
    return path


def _fingerprint(*paths: Path) -> str:
    h = hashlib.sha256()
    for p in paths:
        st = p.stat()
        h.update(f"{p.resolve()}|{st.st_size}|{st.st_mtime_ns}\n".encode())
    return h.hexdigest()[:16]


def _slug(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-") or "dataset"


def nq_gold_docid(title: str, text: str) -> str:
    return "nqgold-" + hashlib.sha1(f"{title}\n{text}".encode()).hexdigest()[:12]


def load_nq(data_dir: Path) -> Dataset:
    root = _require(data_dir / "nq_open_litm", "the NQ-open folder 'nq_open_litm' of the shared data")
    oracle = _require(root / "nq-open-oracle.jsonl.gz", "NQ-open questions with gold passages")
    distractor_file = _require(
        root / "nq-open-20docs-gold_at_0.first441.clean.jsonl.gz", "NQ-open 20-passage contexts (first 441 questions)"
    )
    docs: dict[str, Document] = {}
    by_content: dict[tuple[str, str], str] = {}
    distractors: dict[str, list[str]] = {}
    questions: dict[str, str] = {}
    with gzip.open(distractor_file, "rt", encoding="utf-8") as handle:
        for lineno, line in enumerate(handle, start=1):
            row = json.loads(line)
            questions[str(lineno - 1)] = row["question"]
            for ctx in row["ctxs"]:
                if ctx.get("isgold") or "id" not in ctx:
                    continue
                key = (ctx["title"], ctx["text"])
                docid = str(ctx["id"])
                known = docs.get(docid)
                if known is not None and (known.title, known.text) != key:
                    raise InputError(
                        f"DPR id {docid} appears with two different texts", path=distractor_file, line=lineno
                    )
                docs[docid] = Document(docid, ctx["title"], ctx["text"])
                by_content.setdefault(key, docid)
                distractors.setdefault(str(lineno - 1), []).append(docid)
    queries: list[Query] = []
    qrels: Qrels = {}
    with gzip.open(oracle, "rt", encoding="utf-8") as handle:
        for lineno, line in enumerate(handle):
            row = json.loads(line)
            qid = str(lineno)
            gold = next((c for c in row["ctxs"] if c.get("isgold")), None)
            if gold is None:
                raise InputError("question has no gold passage (isgold)", path=oracle, line=lineno + 1, field="ctxs")
            key = (gold["title"], gold["text"])
            docid = by_content.get(key) or nq_gold_docid(*key)
            by_content.setdefault(key, docid)
            docs.setdefault(docid, Document(docid, gold["title"], gold["text"]))
            queries.append(Query(qid, row["question"], tuple(row["answers"])))
            qrels[qid] = {docid: 1}
            if qid in questions and questions[qid] != row["question"]:
                raise InputError(
                    f"line {lineno + 1} of {distractor_file.name} asks {questions[qid]!r}, not this question",
                    path=oracle,
                    line=lineno + 1,
                    field="question",
                )
    return Dataset(
        name="nq",
        slug="nq",
        corpus=DictCorpus(docs),
        queries=tuple(queries),
        qrels=qrels,
        fingerprint=_fingerprint(oracle, distractor_file),
        known_negatives={qid: tuple(d for d in ids if d not in qrels[qid]) for qid, ids in distractors.items()},
    )


def _read_beir_qrels(path: Path) -> Qrels:
    qrels: Qrels = {}
    with open(path, encoding="utf-8") as handle:
        reader = csv.reader(handle, delimiter="\t")
        for lineno, row in enumerate(reader, start=1):
            if lineno == 1 and row and row[0] == "query-id":
                continue
            if not row:
                continue
            if len(row) != 3:
                raise InputError(f"expected 3 tab-separated columns, found {len(row)}", path=path, line=lineno)
            try:
                grade = int(row[2])
            except ValueError:
                raise InputError(f"score {row[2]!r} is not an integer", path=path, line=lineno, field="score") from None
            qrels.setdefault(row[0], {})[row[1]] = grade
    return qrels


def load_beir(folder: Path, split: str = "test", name: str | None = None, slug: str | None = None) -> Dataset:
    folder = _require(folder, "a BEIR folder with corpus.jsonl, queries.jsonl and qrels/")
    corpus_file = _require(folder / "corpus.jsonl", "BEIR corpus.jsonl ({'_id', 'title', 'text'} per line)")
    queries_file = _require(folder / "queries.jsonl", "BEIR queries.jsonl ({'_id', 'text'} per line)")
    qrels_file = _require(folder / "qrels" / f"{split}.tsv", f"BEIR qrels for split {split!r}")
    docs: dict[str, Document] = {}
    for lineno, row in read_jsonl(corpus_file):
        if "_id" not in row:
            raise InputError("missing '_id'", path=corpus_file, line=lineno, field="_id")
        docid = str(row["_id"])
        docs[docid] = Document(docid, row.get("title") or "", row.get("text") or "")
    qrels = _read_beir_qrels(qrels_file)
    queries: list[Query] = []
    for lineno, row in read_jsonl(queries_file):
        qid = str(row.get("_id", ""))
        if not qid:
            raise InputError("missing '_id'", path=queries_file, line=lineno, field="_id")
        if qid in qrels:
            answers = row.get("answers") or row.get("metadata", {}).get("answers") or ()
            queries.append(Query(qid, row.get("text", ""), tuple(str(a) for a in answers)))
    display = name or f"beir:{folder}"
    return Dataset(
        name=display,
        slug=slug or _slug(f"beir-{folder.name}-{split}" if split != "test" else f"beir-{folder.name}"),
        corpus=DictCorpus(docs),
        queries=tuple(queries),
        qrels=restrict(qrels, (q.qid for q in queries)),
        fingerprint=_fingerprint(corpus_file, queries_file, qrels_file),
    )


def load_scifact(data_dir: Path) -> Dataset:
    return load_beir(data_dir / "beir_scifact", "test", name="scifact", slug="scifact")


def load_dl19(data_dir: Path) -> Dataset:
    root = _require(data_dir / "trec_dl2019_passage", "the TREC DL 2019 passage folder 'trec_dl2019_passage'")
    qrels_file = _require(root / "2019qrels-pass.txt", "NIST qrels 2019qrels-pass.txt")
    queries_file = _require(root / "msmarco-test2019-queries.tsv", "queries msmarco-test2019-queries.tsv")
    docs_file = _require(root / "dl2019_document.jsonl", "judged passages dl2019_document.jsonl")
    qrels = read_qrels(qrels_file)
    queries: list[Query] = []
    with open(queries_file, encoding="utf-8") as handle:
        for lineno, line in enumerate(handle, start=1):
            parts = line.rstrip("\n").split("\t")
            if len(parts) != 2:
                raise InputError(f"expected 'qid<TAB>text', found {len(parts)} fields", path=queries_file, line=lineno)
            if parts[0] in qrels:
                queries.append(Query(parts[0], parts[1]))
    docs: dict[str, Document] = {}
    for lineno, row in read_jsonl(docs_file):
        if "docid" not in row or "doc" not in row:
            raise InputError("expected fields 'docid' and 'doc'", path=docs_file, line=lineno)
        docs[str(row["docid"])] = Document(str(row["docid"]), "", row["doc"])
    return Dataset(
        name="dl19",
        slug="dl19",
        corpus=DictCorpus(docs),
        queries=tuple(queries),
        qrels=qrels,
        fingerprint=_fingerprint(qrels_file, queries_file, docs_file),
        relevance_threshold=2,
    )


def _read_id_text(path: Path) -> Iterator[tuple[int, str, str]]:
    with open(path, encoding="utf-8") as handle:
        for lineno, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            parts = line.rstrip("\n").split("\t", 1)
            if len(parts) != 2:
                raise InputError("expected 'id<TAB>text'", path=path, line=lineno)
            yield lineno, parts[0], parts[1]


def load_nfcorpus(data_dir: Path) -> Dataset:
    root = _require(data_dir / "nfcorpus_original_test", "the NFCorpus folder 'nfcorpus_original_test'")
    docs_file = _require(root / "test.docs", "NFCorpus test.docs")
    queries_file = _require(root / "test.titles.queries", "NFCorpus test.titles.queries")
    qrels_file = _require(root / "test.2-1-0.qrel", "NFCorpus test.2-1-0.qrel")
    qrels = read_qrels(qrels_file)
    docs = {docid: Document(docid, "", text) for _, docid, text in _read_id_text(docs_file)}
    queries = tuple(Query(qid, text) for _, qid, text in _read_id_text(queries_file) if qid in qrels)
    return Dataset(
        name="nfcorpus",
        slug="nfcorpus",
        corpus=DictCorpus(docs),
        queries=queries,
        qrels=restrict(qrels, (q.qid for q in queries)),
        fingerprint=_fingerprint(docs_file, queries_file, qrels_file),
    )


class IrdsCorpus:
    """Lazy corpus over an ir_datasets docs store (large collections are not loaded into memory)."""

    def __init__(self, irds_dataset: object) -> None:
        self._ds = irds_dataset
        self._store = None

    @staticmethod
    def _doc(raw: object) -> Document:
        title = getattr(raw, "title", "") or ""
        text = getattr(raw, "text", None) or getattr(raw, "body", None) or ""
        return Document(str(raw.doc_id), title, text)  # type: ignore[attr-defined]

    def __iter__(self) -> Iterator[Document]:
        return (self._doc(d) for d in self._ds.docs_iter())  # type: ignore[attr-defined]

    def __len__(self) -> int:
        return int(self._ds.docs_count())  # type: ignore[attr-defined]

    def get(self, docid: str) -> Document | None:
        if self._store is None:
            self._store = self._ds.docs_store()  # type: ignore[attr-defined]
        try:
            return self._doc(self._store.get(docid))
        except KeyError:
            return None


def load_irds(dataset_id: str) -> Dataset:
    try:
        import ir_datasets
    except ImportError as exc:  # pragma: no cover - ir_datasets is a core dependency
        raise BridgeError("irds: datasets need the 'ir-datasets' package") from exc
    try:
        ds = ir_datasets.load(dataset_id)
        queries = tuple(Query(str(q.query_id), getattr(q, "text", "") or "") for q in ds.queries_iter())
        qrels: Qrels = {}
        for qrel in ds.qrels_iter():
            qrels.setdefault(str(qrel.query_id), {})[str(qrel.doc_id)] = int(qrel.relevance)
    except KeyError as exc:
        raise BridgeError(f"ir_datasets has no dataset {dataset_id!r}") from exc
    except Exception as exc:
        raise BridgeError(
            f"ir_datasets could not provide {dataset_id!r} offline ({type(exc).__name__}: {exc}); "
            "its files must already be in $IR_DATASETS_HOME"
        ) from exc
    queries = tuple(q for q in queries if q.qid in qrels)
    return Dataset(
        name=f"irds:{dataset_id}",
        slug=_slug(f"irds-{dataset_id.replace('/', '-')}"),
        corpus=IrdsCorpus(ds),
        queries=queries,
        qrels=qrels,
        fingerprint=hashlib.sha256(dataset_id.encode()).hexdigest()[:16],
    )


NAMED_DATASETS: dict[str, Callable[[Path], Dataset]] = {
    "nq": load_nq,
    "scifact": load_scifact,
    "dl19": load_dl19,
    "nfcorpus": load_nfcorpus,
}


def dataset_slug(name: str) -> str:
    """The output-folder name of a dataset, without loading it."""
    if name in NAMED_DATASETS:
        return name
    if name.startswith("beir:"):
        path, _, split = name[5:].partition("#")
        folder = Path(path).name
        return _slug(f"beir-{folder}-{split}" if split and split != "test" else f"beir-{folder}")
    if name.startswith("irds:"):
        return _slug(f"irds-{name[5:].replace('/', '-')}")
    if name.startswith("bridge:"):
        from bridge.bridge_benchmark import bridge_slug

        return bridge_slug(name)
    raise BridgeError(
        f"unknown dataset {name!r}; known: {', '.join(NAMED_DATASETS)}, beir:PATH, irds:ID, bridge:SUBSET"
    )


def load_dataset(name: str, data_dir: str | Path, limit: int | None = None) -> Dataset:
    """Load a dataset by registry name; ``limit`` keeps the first N queries."""
    data_dir = Path(data_dir)
    if name in NAMED_DATASETS:
        if not data_dir.is_dir():
            raise MissingDataError(data_dir, "the data directory (set DATA_DIR / BRIDGE_DATA / --data-dir)")
        ds = NAMED_DATASETS[name](data_dir)
    elif name.startswith("beir:"):
        path, _, split = name[5:].partition("#")
        ds = load_beir(Path(path), split or "test", name=name, slug=dataset_slug(name))
    elif name.startswith("irds:"):
        ds = load_irds(name[5:])
    elif name.startswith("bridge:"):
        from bridge.bridge_benchmark import load_bridge

        ds = load_bridge(name, data_dir)
    else:
        dataset_slug(name)  # raises the "unknown dataset" error
        raise AssertionError("unreachable")
    return ds.head(limit)
