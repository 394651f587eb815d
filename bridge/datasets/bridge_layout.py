"""Where ``bridge:SUBSET``'s files lie and what each one is: the seven subsets, their paths under
``<data_dir>/bridge/``, and the one error that lists every missing file with how to obtain it (see
:mod:`bridge.datasets.bridge_benchmark` for the layout). Kept apart from reading the files, so a caller can name or
check a subset without touching the disk.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from bridge.core.errors import BridgeError, MissingDataError

PREFIX = "bridge:"
HF_DATASET = "DISLab/BRIDGE"
LICENSE = "CC BY 4.0"
BEIR_URL = "https://public.ukp.informatik.tu-darmstadt.de/thakur/BEIR/datasets/{name}.zip"
LOTTE_URL = "https://downloads.cs.stanford.edu/nlp/data/colbert/colbertv2/lotte.tar.gz"


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


def source_dir(data_dir: str | Path, spec: Subset) -> Path:
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
    folder = source_dir(data_dir, spec)
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
