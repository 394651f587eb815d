"""Datasets by name: each gives a corpus, ordered queries (with answers if any) and original qrels.

Names:
  ``nq``        NQ-open (Lost-in-the-Middle release) from ``<data>/nq_open_litm``
  ``scifact``   BEIR SciFact, test split, from ``<data>/beir_scifact``
  ``dl19``      TREC DL 2019 passage, judged passages as corpus, from ``<data>/trec_dl2019_passage``
  ``nfcorpus``  NFCorpus original release, test split (title queries), from ``<data>/nfcorpus_original_test``
  ``beir:PATH[#SPLIT]``  any local BEIR folder (corpus.jsonl, queries.jsonl, qrels/SPLIT.tsv; split ``test``)
  ``irds:ID``   any ir_datasets id (offline, it serves what its cache holds)
  ``bridge:SUBSET``  the published BRIDGE qrels from ``<data>/bridge`` (see :mod:`bridge.datasets.bridge`)

The core types live in :mod:`bridge.datasets.core`; each kind of source is a provider module
(:mod:`.named`, :mod:`.beir`, :mod:`.irds`, :mod:`.bridge`), and this module names them.
"""

from __future__ import annotations

from pathlib import Path

from bridge.datasets.beir import load_beir
from bridge.datasets.bridge import bridge_slug, load_bridge
from bridge.datasets.core import AnsweredPassage, Corpus, Dataset, DictCorpus, Document, Query
from bridge.datasets.core import slug as _slug
from bridge.datasets.irds import load_irds
from bridge.datasets.named import NAMED, nq_gold_docid
from bridge.errors import BridgeError, MissingDataError

__all__ = [
    "AnsweredPassage",
    "Corpus",
    "Dataset",
    "DictCorpus",
    "Document",
    "Query",
    "dataset_slug",
    "load_beir",
    "load_dataset",
    "nq_gold_docid",
]
NAMED_DATASETS = NAMED


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
        ds = load_bridge(name, data_dir)
    else:
        dataset_slug(name)  # raises the "unknown dataset" error
        raise AssertionError("unreachable")
    return ds.head(limit)
