"""The source benchmark's side of ``bridge:SUBSET``: RobustQA's LoTTE documents as a corpus and the original qrels
(``<subset>_original.tsv``, BEIR's qrels splits or RobustQA's annotations), which BRIDGE does not publish.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

from bridge.core.errors import InputError
from bridge.core.fsio import read_jsonl
from bridge.core.trec import Qrels
from bridge.datasets.beir import read_beir_qrels
from bridge.datasets.bridge_layout import Subset, original_override, source_dir
from bridge.datasets.bridge_rows import json_id
from bridge.datasets.core import Document

_TEXT_FIELDS = ("text", "doc", "contents")


def iter_robustqa_documents(path: Path) -> Iterator[Document]:
    """RobustQA ``documents.jsonl``: id = the ``doc_id`` field, else the 0-based line number."""
    with open(path, encoding="utf-8") as handle:
        for index, line in enumerate(handle):
            if not line.strip():
                continue
            lineno = index + 1
            try:
                value = json.loads(line)
            except json.JSONDecodeError as exc:
                raise InputError(f"not valid JSON ({exc.msg})", path=path, line=lineno) from None
            if isinstance(value, str):
                yield Document(str(index), "", value)
                continue
            if not isinstance(value, dict):
                raise InputError(
                    f"expected a JSON object with a text field or a JSON string, found {type(value).__name__}",
                    path=path,
                    line=lineno,
                )
            text = next((value[f] for f in _TEXT_FIELDS if isinstance(value.get(f), str)), None)
            if text is None:
                raise InputError(
                    f"no text: expected a string field {' / '.join(map(repr, _TEXT_FIELDS))}, found keys "
                    f"{sorted(value)}",
                    path=path,
                    line=lineno,
                    field="text",
                )
            docid = json_id(value["doc_id"], path, lineno, "doc_id") if "doc_id" in value else str(index)
            yield Document(docid, str(value.get("title") or ""), text)


def read_robustqa_corpus(path: Path) -> dict[str, Document]:
    docs: dict[str, Document] = {}
    for doc in iter_robustqa_documents(path):
        if doc.docid in docs:
            raise InputError(f"document id {doc.docid!r} appears twice", path=path, field="doc_id")
        docs[doc.docid] = doc
    return docs


def read_original_tsv(path: Path) -> Qrels:
    """``<subset>_original.tsv``: BEIR TSV (``query-id corpus-id score``, header optional) or TREC qrels."""
    qrels: Qrels = {}
    with open(path, encoding="utf-8") as handle:
        for lineno, line in enumerate(handle, start=1):
            fields = line.split()
            if not fields or (lineno == 1 and fields[0] == "query-id"):
                continue
            if len(fields) == 3:
                qid, docid, grade = fields
            elif len(fields) == 4:
                qid, _, docid, grade = fields
            else:
                raise InputError(
                    f"expected 'qid docid score' (BEIR) or 'qid 0 docid score' (TREC), found {len(fields)} columns",
                    path=path,
                    line=lineno,
                )
            try:
                qrels.setdefault(qid, {})[docid] = int(grade)
            except ValueError:
                raise InputError(f"score {grade!r} is not an integer", path=path, line=lineno, field="score") from None
    return qrels


def read_robustqa_annotations(path: Path) -> Qrels:
    """RobustQA ``annotations.jsonl``: ``{"qid", "documents": [{"doc_id", ...}]}``; every listed document is gold."""
    qrels: Qrels = {}
    for lineno, row in read_jsonl(path):
        qid = json_id(row.get("qid"), path, lineno, "qid")
        documents = row.get("documents")
        if not isinstance(documents, list) or not all(isinstance(d, dict) and "doc_id" in d for d in documents):
            raise InputError("expected a list of {'doc_id': ...} objects", path=path, line=lineno, field="documents")
        for doc in documents:
            qrels.setdefault(qid, {})[json_id(doc["doc_id"], path, lineno, "documents.doc_id")] = 1
    return qrels


def original_qrels(data_dir: Path, spec: Subset) -> tuple[Qrels, list[Path], str]:
    """(qrels, files read, where they come from); empty qrels with an explanation when there is no source."""
    override = original_override(data_dir, spec)
    if override.exists():
        return read_original_tsv(override), [override], override.name
    folder = source_dir(data_dir, spec)
    if spec.source == "beir":
        qrels: Qrels = {}
        files = []
        for split in spec.qrels_splits:
            path = folder / "qrels" / f"{split}.tsv"
            if path.exists():
                for qid, docs in read_beir_qrels(path).items():
                    qrels.setdefault(qid, {}).update(docs)
                files.append(path)
        return qrels, files, " + ".join(f"BEIR qrels/{p.name}" for p in files)
    annotations = folder / "annotations.jsonl"
    if annotations.exists():
        return read_robustqa_annotations(annotations), [annotations], "RobustQA annotations.jsonl"
    return {}, [], ""
