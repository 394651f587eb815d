"""bridge as PyTerrier transformers: :class:`Judge` labels a result frame's pairs, :class:`Retriever` is a first-stage
system of a pool file."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd
import pyterrier as pt

from bridge.core.errors import BridgeError
from bridge.pyterrier.conversions import QRELS_COLUMNS, RESULT_COLUMNS, _dataset, _results
from bridge.pyterrier.filling import FILLED_EXTRA, JudgeConfig, infer_qrels

if TYPE_CHECKING:
    from bridge.core.trec import Qrels
    from bridge.datasets import Dataset

JUDGE_COLUMNS = ("label", "p_relevant", "route")


class Judge(pt.Transformer):
    """Adds ``label``, ``p_relevant`` and ``route`` to a result frame, so ``bm25 >> judge`` is a pipeline: a judged
    pair keeps its grade (route ``qrels``, P 1 or 0), every other pair of a judged topic gets the judge's label
    (empty where no stage decided) and the hole model's P; pairs of topics the qrels do not judge get none. Every row
    it receives is judged: cut the ranking first (``bm25 % 10 >> judge``)."""

    def __init__(
        self,
        dataset: Dataset | str,
        qrels: Any = None,
        *,
        judge: str | JudgeConfig = "auto",
        verbose: bool = False,
    ) -> None:
        from bridge.api import as_qrels

        self.dataset = _dataset(dataset)
        self.qrels: Qrels = as_qrels(qrels if qrels is not None else self.dataset.qrels)
        """In bridge's form, read once: every transform looks up its topics in it."""
        self.judge = JudgeConfig.of(judge)
        self.verbose = verbose

    def transform(self, inp: pd.DataFrame) -> pd.DataFrame:
        """``inp`` with ``label`` (nullable integer), ``p_relevant`` and ``route``."""
        pt.validate.columns(inp, includes=["qid", "docno"])
        out = inp.drop(columns=[c for c in JUDGE_COLUMNS if c in inp.columns])
        keys = out.assign(qid=out.qid.astype(str), docno=out.docno.astype(str))[["qid", "docno"]]
        filled = pd.DataFrame(columns=[*QRELS_COLUMNS, *FILLED_EXTRA])
        if keys.qid.isin(list(self.qrels)).any():
            found = infer_qrels(out, self.qrels, dataset=self.dataset, judge=self.judge, depth=None,
                                keep_undecided=True, verbose=self.verbose)  # fmt: skip
            filled = found.set_axis(filled.columns, axis=1)
        merged = keys.merge(filled[["qid", "docno", *JUDGE_COLUMNS]], on=["qid", "docno"], how="left")
        return out.assign(
            label=pd.array(merged.label, dtype="Int64"),
            p_relevant=merged.p_relevant.astype(float).to_numpy(),
            route=merged.route.fillna("").to_numpy(),
        )

    def transform_outputs(self, input_columns: list[str]) -> list[str]:
        """PyTerrier's inspection: what a frame with these columns comes out with."""
        pt.validate.columns(pd.DataFrame(columns=input_columns), includes=["qid", "docno"])
        return [c for c in input_columns if c not in JUDGE_COLUMNS] + list(JUDGE_COLUMNS)

    def __repr__(self) -> str:
        return f"bridge.Judge({self.dataset.name!r}, judge={self.judge.judge!r})"


class Retriever(pt.Transformer):
    """A first-stage system of a pool file (``bm25``, ``bm25s``, ``splade-tiny``, ``dense-minilm``, ...) as a
    transformer over topics: its index or encoding is built once, or loaded from ``cache_dir`` where ``bridge
    retrieve`` left it."""

    def __init__(
        self,
        dataset: Dataset | str,
        system: str = "bm25s",
        *,
        pool_config: str = "default",
        k: int = 100,
        cache_dir: str | Path = "cache",
        verbose: bool = False,
    ) -> None:
        from bridge.retrievers.pipeline import load_pool_config

        self.dataset = _dataset(dataset)
        specs = {s.name: s for s in load_pool_config(pool_config)}
        if system not in specs:
            raise BridgeError(f"no system {system!r} in the pool {pool_config!r} (it has {', '.join(specs)})")
        self.spec, self.k, self.cache_dir, self.verbose = specs[system], k, Path(cache_dir), verbose
        self._retriever: Any = None

    def transform(self, inp: pd.DataFrame) -> pd.DataFrame:
        """The top ``k`` passages of each topic, PyTerrier's result columns after the topics'."""
        from bridge.datasets.core import Query
        from bridge.retrievers.pipeline import open_first_stage

        pt.validate.columns(inp, includes=["qid", "query"])
        if inp.empty:
            return pd.DataFrame(columns=self.transform_outputs(list(inp.columns)))
        if self._retriever is None:
            self._retriever = open_first_stage(self.dataset, self.spec, self.cache_dir, self.verbose)
        topics = inp.drop_duplicates("qid")
        queries = [Query(str(q), str(text)) for q, text in zip(topics.qid, topics["query"], strict=True)]
        return _results(self._retriever.search(queries, self.k), topics)

    def transform_outputs(self, input_columns: list[str]) -> list[str]:
        """PyTerrier's inspection: topics in, results out."""
        pt.validate.columns(pd.DataFrame(columns=input_columns), includes=["qid", "query"])
        return [*input_columns, *(c for c in RESULT_COLUMNS if c not in input_columns)]

    def __repr__(self) -> str:
        return f"bridge.Retriever({self.dataset.name!r}, {self.spec.name!r})"
