"""Labelling pairs from Python: the judge chain a name or a spec builds, run as ``bridge label`` runs it, and what a
label run leaves (:class:`Labels`).
"""

from __future__ import annotations

import tempfile
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bridge.api.frames import as_runs, pool_entries
from bridge.core.errors import BridgeError
from bridge.core.label_records import LabelRecord, augment_qrels
from bridge.core.layout import Workspace
from bridge.core.trec import Qrels
from bridge.datasets import Dataset
from bridge.estimate.calibration import Calibration, Pair
from bridge.pool.pooling import PoolEntry

if TYPE_CHECKING:
    import pandas as pd

    from bridge.label.chain import ChainSpec
    from bridge.label.files import LabelPaths


@dataclass(frozen=True)
class Labels:
    """A label run's outcome: every pool pair's counted record, the pool, and what the open pairs' P rest on."""

    records: tuple[LabelRecord, ...]
    pool: tuple[Pair, ...]
    calibrations: Mapping[str, Calibration] = field(default_factory=dict)
    audit: Mapping[str, Any] | None = None
    """The judge audit (judge-audit.json), None where the run made none."""

    def qrels(self, original: Qrels) -> Qrels:
        """``original`` plus every decided label (original judgments never overwritten): the augmented qrels."""
        return augment_qrels(original, self.records)

    @property
    def frame(self) -> pd.DataFrame:
        """One row per labelled pair: ``query_id, doc_id, label`` (None: undecided), ``route, judge, stage``."""
        import pandas as pd

        rows = [(r.qid, r.docid, r.label, r.route, r.judge, r.stage) for r in self.records]
        return pd.DataFrame(rows, columns=["query_id", "doc_id", "label", "route", "judge", "stage"])

    @classmethod
    def read(cls, paths: LabelPaths) -> Labels:
        """What a label run left at ``paths`` (:func:`bridge.label.files.read_label_state`)."""
        from bridge.label.files import read_label_state

        state = read_label_state(paths)
        return cls(state.records, tuple((e.qid, e.docid) for e in state.pool), state.calibrations, state.audit)


def read_labels_folder(dataset: Dataset | str, workspace: Workspace | None = None) -> Labels:
    """The labels ``bridge label`` left in a workspace (``qrels/<ds>/``, ``reports/<ds>/judge-audit.json``)."""
    from bridge.datasets import dataset_slug
    from bridge.label.files import LabelPaths

    slug = dataset.slug if isinstance(dataset, Dataset) else dataset_slug(dataset)
    paths = LabelPaths.of_workspace(workspace or Workspace(), slug)
    if not paths.labels.exists():
        raise BridgeError(f"{paths.labels} not found: run `bridge label` first")
    return Labels.read(paths)


@dataclass(frozen=True)
class LabelingOptions:
    """:func:`label_pairs`' rarer settings (a :class:`bridge.label.chain.ChainSpec` given as ``judge`` carries its
    own ``fallback``, ``audit_pairs`` and ``cache_dir``)."""

    fallback: str | None = None
    """The judge of pairs no earlier stage decides (an answer judge's default: none, so they stay open with a P;
    ``auto``'s: cascade)."""
    audit_pairs: int = 0
    """Known pairs judged to measure the judge (0: none)."""
    max_minutes: float | None = None
    """The costly judges' budget (None: none)."""
    runs: Mapping[str, Any] | None = None
    """The systems to estimate: the free stages decide first and the costly judge gets pairs in value order, as
    ``bridge label`` does (None: every pair, priority order)."""
    ask_all: bool = False
    """With ``runs``: the costly judge may also take the pairs that decide no comparison, after those that do
    (``bridge label --ask-all``); the way to fill qrels rather than to compare systems."""
    cache_dir: str | Path = "cache"
    """Models, encodings and the LLM response cache."""


def label_pairs(
    dataset: Dataset,
    pairs: pd.DataFrame | Sequence[PoolEntry],
    judge: str | ChainSpec = "auto",
    *,
    reference: str | Path | None = None,
    llm: Any = None,
    folder: str | Path | None = None,
    progress: bool = False,
    options: LabelingOptions = LabelingOptions(),
) -> Labels:
    """Decide ``pairs`` (a :func:`pool_pairs` frame) with a judge chain built from a spec, as ``bridge label`` does.

    ``judge``: a registered judge (``auto``: topic adapters where topics have enough human judgments, then
    ``options.fallback``; ``cascade``, ``dream``, ``llmjudge``, ``umbrela``; ``answer-lexical`` and the other answer
    judges, which need ``reference``, a file of labelled answer-bearing pairs; ``qrels``, ``constant``, ``random``),
    or a :class:`bridge.label.chain.ChainSpec` for every setting (then ``reference``, ``llm``, ``options.fallback``,
    ``options.audit_pairs`` and ``options.cache_dir`` come from the spec). ``llm``: a :class:`bridge.llm.LLMConfig`
    for judges that call a model. ``folder``: where the label files go (kept to resume; default: a temporary
    folder). ``options``: the fallback judge, the audit, the costly judges' budget and value order, the cache
    (:class:`LabelingOptions`).

    >>> labels = label_pairs(ds, pairs, "llmjudge", llm=config,
    ...                      options=LabelingOptions(audit_pairs=60, max_minutes=10, runs=runs))  # doctest: +SKIP
    """
    from bridge.label.chain import build_chain
    from bridge.label.files import LabelPaths
    from bridge.label.labeler import label_pool
    from bridge.label.plan import LabelOptions
    from bridge.label.value import ValueConfig
    from bridge.pool.pooling import write_pool

    spec = judge if not isinstance(judge, str) else _chain_spec(judge, reference, llm, progress, options)
    budgeted = spec.within_budget(options.max_minutes)
    if budgeted != spec and judge != "auto":  # auto's fallback stands aside quietly: the free stages are what it asks
        warnings.warn(
            f"{spec.judge.name} asks an LLM and the budget is 0 (max_minutes=0): it is not asked; the free stages "
            "decide what they can and every other pair keeps the estimate's prior P",
            stacklevel=2,
        )
    spec = budgeted
    entries = pool_entries(pairs)
    with tempfile.TemporaryDirectory(prefix="bridge-labels-") as scratch:
        paths = LabelPaths.in_folder(Path(folder) if folder is not None else Path(scratch))
        write_pool(entries, paths.pool)
        chain, _, _ = build_chain(spec, dataset)
        runs = as_runs(options.runs) if options.runs else None
        run_options = LabelOptions(audit=spec.audit, progress=progress, max_minutes=options.max_minutes, runs=runs,
                                   value=ValueConfig(ask_all=options.ask_all))  # fmt: skip
        label_pool(dataset, chain, paths, run_options)
        return Labels.read(paths)


def _chain_spec(
    judge: str, reference: str | Path | None, llm: Any, progress: bool, options: LabelingOptions
) -> ChainSpec:
    """The chain of a judge named as ``bridge label --judge`` names it."""
    from bridge.judging import JudgeSpec
    from bridge.judging.free.answer_fits import AnswerContextConfig, AnswerJudgeConfig
    from bridge.judging.quality.audit import AuditConfig
    from bridge.label.chain import ChainSpec, answer_judges

    spec = ChainSpec(progress=progress, cache_dir=Path(options.cache_dir))
    if llm is not None:
        spec = replace(spec, llm=llm)
    judge_spec = JudgeSpec(judge)
    if judge in answer_judges():
        if reference is None:
            raise BridgeError(f"the answer judge {judge} is calibrated on labelled pairs: pass reference=FILE")
        config = AnswerJudgeConfig(AnswerContextConfig(str(reference)))
        fallback = JudgeSpec(options.fallback) if options.fallback is not None else None
        judge_spec = JudgeSpec(judge, config, fallback)
        spec = replace(spec, adapters="off", exemplar="off")
    elif judge == "auto":
        judge_spec = JudgeSpec(options.fallback) if options.fallback else JudgeSpec()
    else:  # one judge for every pair: no free stage in front of it, as `bridge label --judge NAME`
        spec = replace(spec, adapters="off", exemplar="off")
    return replace(spec, judge=judge_spec, audit=AuditConfig(pairs=options.audit_pairs, gate_pairs=0))
