"""From a dataset to the pairs to judge: the dataset by name, its systems' runs, the pool of their unjudged pairs."""

from __future__ import annotations

import tempfile
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bridge.api.frames import as_qrels, as_runs
from bridge.core.layout import DEFAULT_DATA_DIR
from bridge.core.trec import Qrels, Run, read_run
from bridge.datasets import Dataset
from bridge.datasets import load_dataset as _load_dataset
from bridge.pool.pooling import build_pool

if TYPE_CHECKING:
    import pandas as pd


def load_dataset(name: str, data_dir: str | Path = DEFAULT_DATA_DIR, limit: int | None = None) -> Dataset:
    """A dataset by name (``nq``, ``dl19``, ``scifact``, ``nfcorpus``, ``beir:PATH``, ``irds:ID``, ``bridge:SUBSET``)
    from ``data_dir``; ``limit`` keeps its first N queries. ``.qrels``, ``.queries`` and ``.corpus`` are plain
    objects."""
    return _load_dataset(name, data_dir, limit)


def retrieve(
    dataset: Dataset,
    systems: Sequence[str] = ("bm25s",),
    *,
    pool_config: str = "default",
    k: int = 100,
    cache_dir: str | Path = "cache",
    progress: bool = False,
) -> dict[str, Run]:
    """Run ``systems`` of a pool file (``bridge/retrievers/pools/<pool_config>.toml``) over ``dataset``: ``{system:
    run}``. Indexes and encodings are cached in ``cache_dir``, as ``bridge retrieve`` caches them."""
    from bridge.retrievers.pipeline import load_pool_config, select_systems
    from bridge.retrievers.pipeline import retrieve as run_systems

    specs = select_systems(load_pool_config(pool_config), list(systems))
    with tempfile.TemporaryDirectory(prefix="bridge-runs-") as folder:
        results = run_systems(dataset, specs, Path(folder), Path(cache_dir), k=k, progress=progress)
        return {r.system: read_run(r.path) for r in results if r.system in systems}


def pool_pairs(
    runs: Mapping[str, Any],
    qrels: Qrels | Dataset | pd.DataFrame | str | Path,
    *,
    depth: int = 10,
    topics: Iterable[str] | None = None,
) -> pd.DataFrame:
    """The pairs in some run's top ``depth`` that ``qrels`` does not judge (any grade): ``query_id, doc_id,
    systems`` (comma-separated), ``min_rank``. ``topics``: default every query the runs rank."""
    import pandas as pd

    runs = as_runs(runs)
    judged = as_qrels(qrels)
    qids = list(topics) if topics is not None else sorted({q for run in runs.values() for q in run})
    entries = build_pool(runs, judged, qids, depth)
    rows = [(e.qid, e.docid, ",".join(e.systems), e.min_rank) for e in entries]
    return pd.DataFrame(rows, columns=["query_id", "doc_id", "systems", "min_rank"])
