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
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from bridge.core.errors import BridgeError, InputError, MissingDataError
from bridge.core.fsio import atomic_write, read_jsonl
from bridge.core.trec import Qrels, Run, restrict
from bridge.datasets.beir import read_beir_corpus, read_beir_qrels
from bridge.datasets.core import SOURCES, Dataset, DatasetSource, DictCorpus, Document, Query, fingerprint

log = logging.getLogger(__name__)

PREFIX = "bridge:"
BRIDGE_QRELS = "bridge"
"""Name of BRIDGE's qrels set in ``Dataset.extra_qrels`` and in every report."""
HF_DATASET = "DISLab/BRIDGE"
LICENSE = "CC BY 4.0"
BEIR_URL = "https://public.ukp.informatik.tu-darmstadt.de/thakur/BEIR/datasets/{name}.zip"
LOTTE_URL = "https://downloads.cs.stanford.edu/nlp/data/colbert/colbertv2/lotte.tar.gz"
EXAMPLES = 5


@dataclass(frozen=True)
class Subset:
    name: str
    """``nq``, ``msmarco``, ``lifestyle``, ..."""
    hf_config: str
    """Configuration name on the Hugging Face dataset card (``NQ``, ``MSMARCO``, ``Lifestyle``, ...)."""
    source: str
    """``beir`` or ``robustqa``: where the corpus (and the original qrels) come from."""
    published_queries: int
    qrels_splits: tuple[str, ...] = ()
    """BEIR qrels splits holding BRIDGE's queries: the first is required, the others read when present."""


SUBSETS: Mapping[str, Subset] = {
    "msmarco": Subset("msmarco", "MSMARCO", "beir", 550, ("dev", "test")),
    "nq": Subset("nq", "NQ", "beir", 550, ("test",)),
    "lifestyle": Subset("lifestyle", "Lifestyle", "robustqa", 550),
    "recreation": Subset("recreation", "Recreation", "robustqa", 550),
    "science": Subset("science", "Science", "robustqa", 357),
    "technology": Subset("technology", "Technology", "robustqa", 550),
    "writing": Subset("writing", "Writing", "robustqa", 550),
}


def subset(name: str) -> Subset:
    """The subset of ``bridge:NAME`` (or of ``NAME``); unknown names list the known ones."""
    key = name[len(PREFIX) :] if name.startswith(PREFIX) else name
    spec = SUBSETS.get(key.lower())
    if spec is None:
        raise BridgeError(f"unknown BRIDGE subset {key!r}; known: {', '.join(PREFIX + s for s in SUBSETS)}")
    return spec


def bridge_slug(name: str) -> str:
    """``bridge:nq`` -> ``bridge-nq`` (validates the subset without touching the disk)."""
    return f"bridge-{subset(name).name}"


def bridge_root(data_dir: str | Path) -> Path:
    return Path(data_dir) / "bridge"


def bridge_file(data_dir: str | Path, spec: Subset) -> Path:
    return bridge_root(data_dir) / f"{spec.name}_test.jsonl"


def original_override(data_dir: str | Path, spec: Subset) -> Path:
    return bridge_root(data_dir) / f"{spec.name}_original.tsv"


def _source_dir(data_dir: str | Path, spec: Subset) -> Path:
    return bridge_root(data_dir) / spec.source / spec.name


# -- missing files --------------------------------------------------------------------------------


@dataclass(frozen=True)
class MissingFile:
    path: Path
    what: str
    how: str


class MissingBridgeFilesError(MissingDataError):
    """Every file a ``bridge:SUBSET`` dataset lacks, in one error: where it goes and how to get it."""

    def __init__(self, dataset: str, data_dir: Path, missing: Sequence[MissingFile]) -> None:
        self.path = missing[0].path
        self.missing = tuple(missing)
        lines = [
            f"{dataset} needs {len(missing)} missing file(s) under {bridge_root(data_dir)} "
            "(--data-dir / BRIDGE_DATA sets the data directory):"
        ]
        for m in missing:
            lines += [f"  - {m.path}", f"      what: {m.what}", f"      get:  {m.how}"]
        BridgeError.__init__(self, "\n".join(lines))


def _how_bridge(data_dir: Path, spec: Subset) -> str:
    target = bridge_file(data_dir, spec)
    return (
        f"where a network exists, python -c \"from datasets import load_dataset; load_dataset('{HF_DATASET}', "
        f"'{spec.hf_config}', split='test').to_json('{target.name}')\" and copy the file to this path (or, with "
        f'bridge installed there, python -c "from bridge.datasets.bridge_benchmark import fetch_bridge_file; '
        f"fetch_bridge_file('{spec.name}', '{data_dir}')\" writes it here)"
    )


def _how_beir(data_dir: Path, spec: Subset) -> str:
    url = BEIR_URL.format(name=spec.name)
    return (
        f"the BEIR {spec.name} folder: python -c \"from beir import util; util.download_and_unzip('{url}', "
        f"'{bridge_root(data_dir) / 'beir'}')\" (or download and unzip {url} there)"
    )


def _how_robustqa(spec: Subset) -> str:
    return (
        f"git clone https://github.com/awslabs/robustqa-acl23; download and untar {LOTTE_URL} into "
        "robustqa-acl23/data; run move_lotte_files.py of DISL-Lab/BRIDGE-Benchmark there and "
        f"`python code/process_raw.py --data {spec.name} --split test`; copy data/{spec.name}/test/documents.jsonl "
        "to this path"
    )


def missing_files(data_dir: str | Path, spec: Subset) -> list[MissingFile]:
    """What ``bridge:SUBSET`` needs and does not find (empty: everything is there)."""
    data_dir = Path(data_dir)
    needed = [
        MissingFile(
            bridge_file(data_dir, spec),
            f"BRIDGE's {spec.hf_config} qrels: one JSON row per query with q_id, query, doc_id (list), answers "
            f"({spec.published_queries} queries; labels {LICENSE})",
            _how_bridge(data_dir, spec),
        )
    ]
    folder = _source_dir(data_dir, spec)
    if spec.source == "beir":
        needed.append(
            MissingFile(
                folder / "corpus.jsonl",
                f"the BEIR {spec.name} corpus ({{_id, title, text}} per line)",
                _how_beir(data_dir, spec),
            )
        )
        if not original_override(data_dir, spec).exists():
            split = spec.qrels_splits[0]
            needed.append(
                MissingFile(
                    folder / "qrels" / f"{split}.tsv",
                    f"the BEIR {spec.name} {split} qrels (the original judgments of BRIDGE's queries)",
                    _how_beir(data_dir, spec),
                )
            )
    else:
        needed.append(
            MissingFile(
                folder / "documents.jsonl",
                f"RobustQA's LoTTE {spec.name} test documents (one JSON per line; id = doc_id or 0-based line)",
                _how_robustqa(spec),
            )
        )
    return [m for m in needed if not m.path.exists()]


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


# -- BRIDGE's file ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class BridgeRow:
    qid: str
    query: str
    docids: tuple[str, ...]
    """Relevant ids in file order, each once."""
    answers: tuple[str, ...] = ()
    line: int = 0

    def to_json(self) -> dict:
        return {"q_id": self.qid, "query": self.query, "doc_id": list(self.docids), "answers": list(self.answers)}


@dataclass(frozen=True)
class IdIssue:
    """One kind of id mismatch, listed with its count and a few examples."""

    source: str
    problem: str
    ids: tuple[str, ...]

    def message(self, examples: int = EXAMPLES) -> str:
        shown = ", ".join(self.ids[:examples]) + (", ..." if len(self.ids) > examples else "")
        return f"{self.source}: {len(self.ids)} {self.problem} ({shown})"


def _id(value: object, path: Path, line: int, field: str) -> str:
    if isinstance(value, bool) or not isinstance(value, str | int) or value == "":
        raise InputError(
            f"expected a non-empty string or integer id, found {value!r}", path=path, line=line, field=field
        )
    return str(value)


def read_bridge_file(path: str | Path) -> tuple[list[BridgeRow], list[BridgeRow], list[IdIssue]]:
    """(rows with relevant ids, rows with an empty ``doc_id`` list, issues) of one BRIDGE JSONL file."""
    path = Path(path)
    rows: list[BridgeRow] = []
    empty: list[BridgeRow] = []
    seen: dict[str, int] = {}
    duplicates: list[str] = []
    for lineno, record in read_jsonl(path):
        if "q_id" not in record:
            raise InputError("missing 'q_id'", path=path, line=lineno, field="q_id")
        qid = _id(record["q_id"], path, lineno, "q_id")
        if qid in seen:
            raise InputError(f"q_id {qid!r} repeats line {seen[qid]}", path=path, line=lineno, field="q_id")
        seen[qid] = lineno
        query = record.get("query")
        if not isinstance(query, str):
            raise InputError(f"expected the query text, found {query!r}", path=path, line=lineno, field="query")
        raw = record.get("doc_id")
        if not isinstance(raw, list):
            raise InputError(f"expected a list of ids, found {raw!r}", path=path, line=lineno, field="doc_id")
        docids = [_id(d, path, lineno, "doc_id") for d in raw]
        unique = tuple(dict.fromkeys(docids))
        duplicates += [f"{qid}:{d}" for d in unique if docids.count(d) > 1]
        answers = record.get("answers")
        if answers is None:
            answers = []
        elif isinstance(answers, str):
            answers = [answers]
        if not isinstance(answers, list) or not all(isinstance(a, str) for a in answers):
            raise InputError(f"expected a list of strings, found {answers!r}", path=path, line=lineno, field="answers")
        row = BridgeRow(qid, query, unique, tuple(answers), lineno)
        (rows if unique else empty).append(row)
    issues = []
    if duplicates:
        issues.append(
            IdIssue(f"BRIDGE {path.name}", "ids listed twice in a row's doc_id, kept once", tuple(duplicates))
        )
    return rows, empty, issues


def write_bridge_file(rows: Iterable[BridgeRow], path: str | Path) -> int:
    """Write rows in BRIDGE's JSONL layout, atomically; return the number of rows."""
    count = 0
    with atomic_write(path) as handle:
        for row in rows:
            handle.write(json.dumps(row.to_json(), ensure_ascii=False) + "\n")
            count += 1
    return count


# -- corpora and original qrels ----------------------------------------------------------------------


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
            docid = _id(value["doc_id"], path, lineno, "doc_id") if "doc_id" in value else str(index)
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
        qid = _id(row.get("qid"), path, lineno, "qid")
        documents = row.get("documents")
        if not isinstance(documents, list) or not all(isinstance(d, dict) and "doc_id" in d for d in documents):
            raise InputError("expected a list of {'doc_id': ...} objects", path=path, line=lineno, field="documents")
        for doc in documents:
            qrels.setdefault(qid, {})[_id(doc["doc_id"], path, lineno, "documents.doc_id")] = 1
    return qrels


def _original_qrels(data_dir: Path, spec: Subset) -> tuple[Qrels, list[Path], str]:
    """(qrels, files read, where they come from); empty qrels with an explanation when there is no source."""
    override = original_override(data_dir, spec)
    if override.exists():
        return read_original_tsv(override), [override], override.name
    folder = _source_dir(data_dir, spec)
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
    folder = _source_dir(data_dir, spec)
    if spec.source == "beir":
        corpus_file = folder / "corpus.jsonl"
        docs = read_beir_corpus(corpus_file)
    else:
        corpus_file = folder / "documents.jsonl"
        docs = read_robustqa_corpus(corpus_file)
    corpus = DictCorpus(docs)
    original, original_files, origin = _original_qrels(data_dir, spec)
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
