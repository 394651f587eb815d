"""The shared data's named datasets: ``nq``, ``scifact``, ``dl19``, ``nfcorpus`` (from ``<data>/``).

NQ document ids: the 19 distractor passages of the first 441 questions carry their DPR
Wikipedia passage id (``psgs_w100`` numbering) and keep it. The gold passages of the oracle
file carry no id; each gets ``nqgold-`` + the first 12 hex digits of SHA-1 over
``title + "\\n" + text`` (UTF-8), so the id depends only on the passage's content and is
identical on every machine. Passages with the same (title, text) are one document.
Query ids are the 0-based line numbers of ``nq-open-oracle.jsonl.gz`` as strings.
"""

from __future__ import annotations

import gzip
import hashlib
import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from bridge.core.errors import InputError
from bridge.core.fsio import read_jsonl
from bridge.core.trec import Qrels, read_qrels, restrict
from bridge.datasets.beir import load_beir
from bridge.datasets.core import NAMED, Dataset, DictCorpus, Document, Query, fingerprint, require


def nq_gold_docid(title: str, text: str) -> str:
    return "nqgold-" + hashlib.sha1(f"{title}\n{text}".encode()).hexdigest()[:12]


DESCRIPTIONS = {
    "nq": "NQ-open as released with Lost in the Middle (Liu et al., 2023), not BEIR's NQ: questions with answer "
    "lists; the corpus is each question's gold Wikipedia passage (DPR 100-word split) and the 19 Contriever "
    "distractors of the first 441 questions; original qrels: the gold passage of each question",
    "scifact": "BEIR SciFact, test split: scientific claims against paper abstracts; original qrels: the abstracts "
    "that hold evidence for or against the claim (relevant pairs only)",
    "dl19": "TREC Deep Learning 2019, passage task: the 43 judged queries; the corpus is the MS MARCO passages NIST "
    "judged, not the 8.8M collection; original qrels: NIST's graded judgments (0-3, relevant at 2 or above)",
    "nfcorpus": "NFCorpus, original release, test split: title queries against medical documents (the authors' "
    "preprocessed text); original qrels: the graded 2-1-0 links",
}
"""What each named dataset is (the report's header)."""


def _named(
    name: str, docs: dict[str, Document], queries: Iterable[Query], qrels: Qrels, files: Iterable[Path], **more: Any
) -> Dataset:
    """A named dataset read into memory: its name is its slug, its description :data:`DESCRIPTIONS`'s, its
    fingerprint that of the ``files`` it was read from."""
    return Dataset(
        name=name,
        slug=name,
        corpus=DictCorpus(docs),
        queries=tuple(queries),
        qrels=qrels,
        fingerprint=fingerprint(*files),
        description=DESCRIPTIONS[name],
        **more,
    )


@NAMED.register("nq")
def load_nq(data_dir: Path) -> Dataset:
    root = require(data_dir / "nq_open_litm", "the NQ-open folder 'nq_open_litm' of the shared data")
    oracle = require(root / "nq-open-oracle.jsonl.gz", "NQ-open questions with gold passages")
    distractor_file = require(
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
    return _named(
        "nq",
        docs,
        queries,
        qrels,
        (oracle, distractor_file),
        known_negatives={qid: tuple(d for d in ids if d not in qrels[qid]) for qid, ids in distractors.items()},
        candidate_lists={
            qid: (*qrels[qid], *(d for d in ids if d not in qrels[qid])) for qid, ids in distractors.items()
        },
    )


@NAMED.register("scifact")
def load_scifact(data_dir: Path) -> Dataset:
    return load_beir(
        data_dir / "beir_scifact", "test", name="scifact", slug="scifact", description=DESCRIPTIONS["scifact"]
    )


@NAMED.register("dl19")
def load_dl19(data_dir: Path) -> Dataset:
    root = require(data_dir / "trec_dl2019_passage", "the TREC DL 2019 passage folder 'trec_dl2019_passage'")
    qrels_file = require(root / "2019qrels-pass.txt", "NIST qrels 2019qrels-pass.txt")
    queries_file = require(root / "msmarco-test2019-queries.tsv", "queries msmarco-test2019-queries.tsv")
    docs_file = require(root / "dl2019_document.jsonl", "judged passages dl2019_document.jsonl")
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
    return _named("dl19", docs, queries, qrels, (qrels_file, queries_file, docs_file), relevance_threshold=2)


def _read_id_text(path: Path) -> Iterator[tuple[int, str, str]]:
    with open(path, encoding="utf-8") as handle:
        for lineno, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            parts = line.rstrip("\n").split("\t", 1)
            if len(parts) != 2:
                raise InputError("expected 'id<TAB>text'", path=path, line=lineno)
            yield lineno, parts[0], parts[1]


@NAMED.register("nfcorpus")
def load_nfcorpus(data_dir: Path) -> Dataset:
    root = require(data_dir / "nfcorpus_original_test", "the NFCorpus folder 'nfcorpus_original_test'")
    docs_file = require(root / "test.docs", "NFCorpus test.docs")
    queries_file = require(root / "test.titles.queries", "NFCorpus test.titles.queries")
    qrels_file = require(root / "test.2-1-0.qrel", "NFCorpus test.2-1-0.qrel")
    qrels = read_qrels(qrels_file)
    docs = {docid: Document(docid, "", text) for _, docid, text in _read_id_text(docs_file)}
    queries = tuple(Query(qid, text) for _, qid, text in _read_id_text(queries_file) if qid in qrels)
    qrels = restrict(qrels, (q.qid for q in queries))
    return _named("nfcorpus", docs, queries, qrels, (docs_file, queries_file, qrels_file))
