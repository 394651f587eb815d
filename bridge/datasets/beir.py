"""Any local BEIR folder (``beir:PATH[#SPLIT]``): corpus.jsonl, queries.jsonl, qrels/SPLIT.tsv."""

from __future__ import annotations

import csv
from pathlib import Path

from bridge.core.errors import InputError
from bridge.core.fsio import read_jsonl
from bridge.core.trec import Qrels, restrict
from bridge.datasets.core import SOURCES, Dataset, DatasetSource, DictCorpus, Document, Query, fingerprint, require
from bridge.datasets.core import slug as make_slug


def read_beir_qrels(path: Path) -> Qrels:
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


def read_beir_corpus(path: Path) -> dict[str, Document]:
    """A BEIR corpus.jsonl (``_id``, ``title``, ``text`` per line)."""
    docs: dict[str, Document] = {}
    for lineno, row in read_jsonl(path):
        if "_id" not in row:
            raise InputError("missing '_id'", path=path, line=lineno, field="_id")
        docid = str(row["_id"])
        docs[docid] = Document(docid, row.get("title") or "", row.get("text") or "")
    return docs


def load_beir(
    folder: Path, split: str = "test", name: str | None = None, slug: str | None = None, description: str = ""
) -> Dataset:
    folder = require(folder, "a BEIR folder with corpus.jsonl, queries.jsonl and qrels/")
    corpus_file = require(folder / "corpus.jsonl", "BEIR corpus.jsonl ({'_id', 'title', 'text'} per line)")
    queries_file = require(folder / "queries.jsonl", "BEIR queries.jsonl ({'_id', 'text'} per line)")
    qrels_file = require(folder / "qrels" / f"{split}.tsv", f"BEIR qrels for split {split!r}")
    docs = read_beir_corpus(corpus_file)
    qrels = read_beir_qrels(qrels_file)
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
        slug=slug or make_slug(f"beir-{folder.name}-{split}" if split != "test" else f"beir-{folder.name}"),
        corpus=DictCorpus(docs),
        queries=tuple(queries),
        qrels=restrict(qrels, (q.qid for q in queries)),
        fingerprint=fingerprint(corpus_file, queries_file, qrels_file),
        description=description or f"a BEIR folder ({folder}, {split} split)",
    )


def _folder_and_split(name: str) -> tuple[Path, str]:
    """``beir:PATH[#SPLIT]`` -> (PATH, SPLIT or "")."""
    path, _, split = name.removeprefix("beir:").partition("#")
    return Path(path), split


def beir_slug(name: str) -> str:
    folder, split = _folder_and_split(name)
    return make_slug(f"beir-{folder.name}-{split}" if split and split != "test" else f"beir-{folder.name}")


def _load_named_beir(name: str, data_dir: Path) -> Dataset:
    folder, split = _folder_and_split(name)
    return load_beir(folder, split or "test", name=name, slug=beir_slug(name))


SOURCES.add("beir", DatasetSource("beir:PATH", beir_slug, _load_named_beir))
