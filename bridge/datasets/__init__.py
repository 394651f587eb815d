"""Datasets by name: each gives a corpus, ordered queries (with answers if any) and original qrels.

Names:
  ``nq``        NQ-open (Lost-in-the-Middle release) from ``<data>/nq_open_litm``
  ``scifact``   BEIR SciFact, test split, from ``<data>/beir_scifact``
  ``dl19``      TREC DL 2019 passage, judged passages as corpus, from ``<data>/trec_dl2019_passage``
  ``nfcorpus``  NFCorpus original release, test split (title queries), from ``<data>/nfcorpus_original_test``
  ``beir:PATH[#SPLIT]``  any local BEIR folder (corpus.jsonl, queries.jsonl, qrels/SPLIT.tsv; split ``test``)
  ``irds:ID``   any ir_datasets id (offline, it serves what its cache holds)
  ``bridge:SUBSET``  the published BRIDGE qrels from ``<data>/bridge`` (see :mod:`bridge.datasets.bridge_benchmark`)

The core types live in :mod:`bridge.datasets.core`; each kind of source is a provider module
(:mod:`.named`, :mod:`.beir`, :mod:`.irds`, :mod:`.bridge`), and this module names them.
"""

from __future__ import annotations

from pathlib import Path

from bridge.core.errors import BridgeError, MissingDataError
from bridge.datasets.beir import load_beir
from bridge.datasets.core import (
    NAMED,
    SOURCES,
    AnsweredPassage,
    Corpus,
    Dataset,
    DatasetSource,
    DictCorpus,
    Document,
    Query,
)
from bridge.datasets.named import nq_gold_docid

__all__ = [
    "NAMED",
    "SOURCES",
    "AnsweredPassage",
    "Corpus",
    "Dataset",
    "DatasetSource",
    "DictCorpus",
    "Document",
    "Query",
    "dataset_slug",
    "load_beir",
    "load_dataset",
    "nq_gold_docid",
]


def _source(name: str) -> DatasetSource:
    """The kind of dataset a ``SCHEME:REST`` name is, or the error that lists what is known."""
    scheme, colon, _ = name.partition(":")
    if colon and scheme in SOURCES:
        return SOURCES[scheme]
    known = [*NAMED.names(), *(source.usage for source in SOURCES.values())]
    raise BridgeError(f"unknown dataset {name!r}; known: {', '.join(known)}")


def dataset_slug(name: str) -> str:
    """The output-folder name of a dataset, without loading it."""
    return name if name in NAMED else _source(name).slug(name)


def load_dataset(name: str, data_dir: str | Path, limit: int | None = None) -> Dataset:
    """Load a dataset by registry name; ``limit`` keeps the first N queries."""
    data_dir = Path(data_dir)
    if name in NAMED:
        if not data_dir.is_dir():
            raise MissingDataError(data_dir, "the data directory (set DATA_DIR / BRIDGE_DATA / --data-dir)")
        ds = NAMED[name](data_dir)
    else:
        ds = _source(name).load(name, data_dir)
    return ds.head(limit)
