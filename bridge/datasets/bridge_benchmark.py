"""The published BRIDGE qrels (DISL-Lab, ICLR 2026) as datasets: ``bridge:SUBSET``.

BRIDGE re-judged 7 benchmark subsets with DREAM; its authors publish one JSONL file per subset
(GitHub DISL-Lab/BRIDGE-Benchmark, Hugging Face dataset ``DISLab/BRIDGE``; labels under CC BY 4.0),
one row per query: ``q_id``, ``query``, ``doc_id`` (a list: the original relevant ids and the new
ones, merged, binary) and ``answers``. They publish no corpora. ``bridge:SUBSET`` reads those files
from a local folder, so any run from any toolkit can be scored on the original qrels and on BRIDGE's.

Subsets: ``msmarco``, ``nq`` (BEIR corpora) and ``lifestyle``, ``recreation``, ``science``,
``technology``, ``writing`` (LoTTE through RobustQA). 550 queries each, science 357.

Layout under ``<data_dir>/bridge/`` (``--data-dir`` / ``BRIDGE_DATA`` moves ``<data_dir>``)::

    <subset>_test.jsonl                 BRIDGE's file for the subset (required)
    beir/nq/corpus.jsonl                BEIR NQ: {"_id", "title", "text"} per line (required for nq)
    beir/nq/qrels/test.tsv              BEIR NQ test qrels: the original judgments (required for nq)
    beir/msmarco/corpus.jsonl           BEIR MS MARCO corpus (required for msmarco)
    beir/msmarco/qrels/dev.tsv          BEIR MS MARCO dev qrels (required for msmarco), see below
    beir/msmarco/qrels/test.tsv         BEIR MS MARCO test (TREC DL 2019) qrels (read when present)
    robustqa/<subset>/documents.jsonl   RobustQA's LoTTE documents (required for LoTTE subsets)
    robustqa/<subset>/annotations.jsonl RobustQA's LoTTE gold (optional: the original qrels)
    <subset>_original.tsv               original qrels of the subset (optional, wins over the above)

Dataset parts:

* queries: BRIDGE's rows in file order, with their ``answers`` (so the evidence stage applies).
  Rows with an empty ``doc_id`` list are skipped, as the BRIDGE evaluation script skips them (logged).
* ``extra_qrels["bridge"]``: BRIDGE's relevant ids, grade 1.
* ``qrels`` (original): the source benchmark's judgments restricted to BRIDGE's queries. nq: BEIR
  ``qrels/test.tsv``. msmarco: BEIR evaluates MS MARCO on its dev split, and BRIDGE's 1.05 original
  gold per query is the dev split's density (TREC DL 2019, BEIR's ``test.tsv``, has ~215), so
  ``dev.tsv`` is read, and ``test.tsv`` too when present. LoTTE subsets: the published layout has no
  source qrels; ``<subset>_original.tsv`` (BEIR ``query-id corpus-id score`` TSV or TREC qrels) is read
  when present, else RobustQA's ``annotations.jsonl`` (``qid`` + ``documents[].doc_id``), else the
  original qrels are empty and a warning says that the original column then scores 0 and every
  BRIDGE-relevant document counts as a hole. ``<subset>_original.tsv`` overrides any subset's source.
* corpus ids: BEIR ``_id`` (``"0"``.., ``"docN"``); RobustQA: the line's ``doc_id`` field when present
  (RobustQA writes it, equal to the line number), else the 0-based line number. A line is a JSON
  object with ``text`` (or ``doc`` / ``contents``) and optional ``title``, or a bare JSON string.

Id checks (warnings, never silent drops): BRIDGE or original relevant ids missing from the corpus
(kept: they still count in recall and the ideal DCG, as in BRIDGE's script), BRIDGE queries without
original judgments, and original relevant ids absent from BRIDGE's merged list. Duplicate ids in a
row's ``doc_id`` list are kept once and reported.

Missing files stop with one :class:`MissingBridgeFilesError` listing every missing file, where it
goes and how to obtain it. Nothing is downloaded at load time; :func:`fetch_bridge_file` downloads
BRIDGE's file only when called explicitly (``datasets`` package and network needed).

This module is the dataset itself (loading, the id checks, the explicit download); the subsets and their paths are
:mod:`bridge.datasets.bridge_layout`, BRIDGE's file :mod:`bridge.datasets.bridge_rows`, and the source benchmarks'
corpora and original qrels :mod:`bridge.datasets.bridge_sources`.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Mapping
from pathlib import Path

from bridge.core.errors import BridgeError
from bridge.core.trec import Qrels, Run, restrict
from bridge.datasets.beir import read_beir_corpus
from bridge.datasets.bridge_layout import (
    HF_DATASET,
    LICENSE,
    PREFIX,
    MissingBridgeFilesError,
    bridge_file,
    bridge_slug,
    missing_files,
    original_override,
    source_dir,
    subset,
)
from bridge.datasets.bridge_rows import IdIssue, read_bridge_file
from bridge.datasets.bridge_sources import original_qrels, read_robustqa_corpus
from bridge.datasets.core import SOURCES, Dataset, DatasetSource, DictCorpus, Query, fingerprint

log = logging.getLogger(__name__)

BRIDGE_QRELS = "bridge"
"""Name of BRIDGE's qrels set in ``Dataset.extra_qrels`` and in every report."""


def fetch_bridge_file(name: str, data_dir: str | Path) -> Path:
    """Download BRIDGE's file of one subset into the layout (explicit use only; never at load time)."""
    spec = subset(name)
    try:
        from datasets import load_dataset as hf_load_dataset
    except ImportError:
        raise BridgeError("fetching BRIDGE's files needs the 'datasets' package (pip install datasets)") from None
    target = bridge_file(data_dir, spec)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.download")
    try:
        hf_load_dataset(HF_DATASET, spec.hf_config, split="test").to_json(str(tmp), force_ascii=False)
        os.replace(tmp, target)
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
    return target


# -- the dataset --------------------------------------------------------------------------------------


def id_issues(
    bridge: Qrels, original: Qrels, corpus: DictCorpus, source: str, has_original: bool = True
) -> list[IdIssue]:
    """Mismatches between BRIDGE's qrels, the original qrels (restricted to BRIDGE's queries) and the corpus."""
    issues = []

    def pairs(qrels: Qrels, keep) -> tuple[str, ...]:
        return tuple(f"{q}:{d}" for q, docs in qrels.items() for d, g in docs.items() if keep(q, d, g))

    absent = pairs(bridge, lambda q, d, g: d not in corpus)
    if absent:
        issues.append(
            IdIssue(f"BRIDGE {source}", "relevant ids not in the corpus, kept (no run can find them)", absent)
        )
    absent = pairs(original, lambda q, d, g: g > 0 and d not in corpus)
    if absent:
        issues.append(IdIssue("original qrels", "relevant ids not in the corpus, kept", absent))
    unjudged = tuple(q for q in bridge if q not in original)
    if unjudged and has_original:
        issues.append(IdIssue(f"BRIDGE {source}", "queries without original judgments", unjudged))
    dropped = pairs(original, lambda q, d, g: g > 0 and d not in bridge.get(q, {}))
    if dropped:
        issues.append(IdIssue("original qrels", "relevant ids missing from BRIDGE's merged doc_id list", dropped))
    return issues


def load_bridge(name: str, data_dir: str | Path) -> Dataset:
    """``bridge:SUBSET`` from ``<data_dir>/bridge/`` (see the module docstring for the layout)."""
    spec = subset(name)
    data_dir = Path(data_dir)
    display = PREFIX + spec.name
    missing = missing_files(data_dir, spec)
    if missing:
        raise MissingBridgeFilesError(display, data_dir, missing)
    path = bridge_file(data_dir, spec)
    rows, empty, issues = read_bridge_file(path)
    if empty:
        issues.append(
            IdIssue(
                f"BRIDGE {path.name}",
                "rows with an empty doc_id list, skipped (as BRIDGE's script skips them)",
                tuple(r.qid for r in empty),
            )
        )
    total = len(rows) + len(empty)
    if total != spec.published_queries:
        log.warning("%s: %s has %d rows; the published subset has %d", display, path, total, spec.published_queries)
    folder = source_dir(data_dir, spec)
    if spec.source == "beir":
        corpus_file = folder / "corpus.jsonl"
        docs = read_beir_corpus(corpus_file)
    else:
        corpus_file = folder / "documents.jsonl"
        docs = read_robustqa_corpus(corpus_file)
    corpus = DictCorpus(docs)
    original, original_files, origin = original_qrels(data_dir, spec)
    qids = [r.qid for r in rows]
    original = restrict(original, qids)
    if not original_files:
        log.warning(
            "%s: no original qrels (the published layout has none for LoTTE subsets; put them in %s or RobustQA's "
            "annotations.jsonl in %s): the original column scores 0 and every BRIDGE-relevant document is a hole",
            display,
            original_override(data_dir, spec),
            folder,
        )
    bridge = {r.qid: dict.fromkeys(r.docids, 1) for r in rows}
    issues += id_issues(bridge, original, corpus, path.name, has_original=bool(original_files))
    for issue in issues:
        log.warning("%s ids: %s", display, issue.message())
    log.info(
        "%s: %d queries, %d BRIDGE-relevant pairs (labels %s, %s), original qrels from %s, %d documents",
        display,
        len(rows),
        sum(map(len, bridge.values())),
        LICENSE,
        HF_DATASET,
        origin or "nowhere",
        len(corpus),
    )
    return Dataset(
        name=display,
        slug=bridge_slug(spec.name),
        corpus=corpus,
        queries=tuple(Query(r.qid, r.query, r.answers) for r in rows),
        qrels=original,
        fingerprint=fingerprint(path, corpus_file, *original_files),
        extra_qrels={BRIDGE_QRELS: bridge},
    )


def run_docid_issues(runs: Mapping[str, Run], corpus: object) -> list[IdIssue]:
    """Retrieved ids that the dataset's corpus lacks, per run (a run from another id space scores 0 silently)."""
    get = corpus.get  # type: ignore[attr-defined]
    issues = []
    for system, run in sorted(runs.items()):
        unknown = sorted({d for docs in run.values() for d in docs if get(d) is None})
        if unknown:
            total = len({d for docs in run.values() for d in docs})
            issues.append(
                IdIssue(f"run {system}", f"of its {total} retrieved ids are not in the corpus", tuple(unknown))
            )
    return issues


SOURCES.add("bridge", DatasetSource("bridge:SUBSET", bridge_slug, load_bridge))
