"""Any ir_datasets id (``irds:ID``); offline, ir_datasets serves what its cache holds."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator

from bridge.core.errors import BridgeError
from bridge.core.trec import Qrels
from bridge.datasets.core import SOURCES, Dataset, DatasetSource, Document, Query, slug


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
        slug=slug(f"irds-{dataset_id.replace('/', '-')}"),
        corpus=IrdsCorpus(ds),
        queries=queries,
        qrels=qrels,
        fingerprint=hashlib.sha256(dataset_id.encode()).hexdigest()[:16],
        description=f"ir_datasets {dataset_id!r} (what its local cache holds)",
    )


def irds_slug(name: str) -> str:
    return slug(f"irds-{name.removeprefix('irds:').replace('/', '-')}")


SOURCES.add("irds", DatasetSource("irds:ID", irds_slug, lambda name, _data_dir: load_irds(name.removeprefix("irds:"))))
