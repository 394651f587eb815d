"""The exemplar judge: the passages people marked relevant say what relevant means for their topic.

Most benchmarks a researcher brings hold one to a few relevant passages per topic and no negatives (BEIR folders,
MS MARCO, NQ, scifact). There every quantity learned from "judged pairs" is biased, yet each topic's known relevant
passages are the best description of what it asks for: a hole that resembles them is likely relevant. autoqrels'
one-shot labelers compare each hole with the known relevant passage (MacAvaney and Soldaini, SIGIR 2023); this stage
does it with the shipped sentence encoder, for free, and calibrates the result.

Each hole of a topic with a known relevant passage is described by :data:`FEATURES` (the fit names the ones it uses):

* ``exemplar_cosine``     its largest cosine to a known relevant passage of its topic (all-MiniLM-L6-v2);
* ``exemplar_percentile`` where that cosine stands among the topic's pool holes (0-1), which reads alike whatever
  the collection's typical similarity;
* ``query_cosine``, ``query_percentile`` the same against the query. Offered to the fit, not forced: the query cosine
  is the dense retriever's own score, and an estimate that rewards it ranks the dense systems up.

P(relevant) comes from a calibration fitted on holes whose labels are known, the sparse-judgment benchmark of a deeply
judged collection (:mod:`bridge.evaluation.reusability.sparse_cuts`: each topic cut to K relevant passages, every other
pool pair a hole with its hidden label), shipped in ``bridge/data/exemplar-fit.json`` with the logit shifts that carry
it elsewhere: one common to a collection (measured between collections) and one per topic (how far topics stray from the
fit where it was made). The hole model draws both (:mod:`bridge.estimate.holes`), so a collection unlike the one it was
fitted on widens the interval instead of moving it. A pair whose own passage is a known relevant one (an audit pair) is
compared with the
topic's other known relevant passages only (leave one positive out); a topic without another goes to the next judge.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, replace
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from bridge.core.errors import InputError
from bridge.core.fsio import read_utf8
from bridge.core.label_records import LabelRecord, Usage
from bridge.datasets import Dataset
from bridge.estimate.calibration import Calibration, PairFacts
from bridge.judging.base import (
    Case,
    Decider,
    Judge,
    JudgeContext,
    Preparable,
    Preparation,
    Prepared,
    describe_stage,
    judge_record,
    register_judge,
)
from bridge.judging.learned.topic_models import Encoder
from bridge.judging.llm.comparer import FEATURE as LLM_FEATURE
from bridge.judging.llm.comparer import Comparer
from bridge.judging.replies import usage_of
from bridge.judging.settings import option

NAME = STAGE = "exemplar"
FEATURES = ("exemplar_cosine", "exemplar_percentile", "query_cosine", "query_percentile")
ALL_FEATURES = (*FEATURES, LLM_FEATURE)
"""What a fit may use: the free features and the LLM's comparison."""
LLM_NAME = LLM_STAGE = "exemplar-llm"
SHIPPED_FIT = "exemplar-fit.json"
"""Under ``bridge/data/``: the calibration every dataset with a known relevant passage per topic gets by default."""
SHIPPED_LLM_FIT = "exemplar-llm-fit.json"
"""Under ``bridge/data/``: the free features and the LLM's comparison in one calibration (``--refine exemplar-llm``)."""


def shipped_fit_path(name: str = SHIPPED_FIT) -> Path:
    return Path(str(resources.files("bridge") / "data" / name))


@dataclass(frozen=True)
class ExemplarFit:
    """A calibration of the exemplar features, what it was fitted on and how well it did there."""

    calibration: Calibration
    encoder: str
    """The sentence encoder whose cosines it was fitted on (the judge must use the same)."""
    provenance: Mapping[str, Any]
    """Where it was fitted (collection, cuts, seeds, commit) and its quality on the benchmarks (for the report)."""

    @property
    def features(self) -> tuple[str, ...]:
        return tuple(f for f in self.calibration.features if f in ALL_FEATURES)

    @property
    def identity(self) -> str:
        """What decides its P (features, coefficient draws, shifts, encoder); not what was measured of it, so the
        benchmark's figures can be added to a shipped fit without relabelling anything."""
        c = self.calibration
        payload = json.dumps([c.name, c.features, c.draws.round(6).tolist(), c.transfer_sd, c.topic_sd, self.encoder])
        return hashlib.sha256(payload.encode()).hexdigest()[:12]

    def to_json(self) -> dict[str, Any]:
        return {"encoder": self.encoder, "calibration": self.calibration.to_json(), "provenance": dict(self.provenance)}

    @classmethod
    def read(cls, path: Path) -> ExemplarFit:
        try:
            data = json.loads(read_utf8(path))
            fit = cls(Calibration.from_json(data["calibration"], path), str(data["encoder"]), data["provenance"])
        except (KeyError, TypeError, json.JSONDecodeError) as exc:
            raise InputError(f"not an exemplar fit ({exc})", path=path) from None
        unknown = [f for f in fit.calibration.features if f not in (*FEATURES, LLM_FEATURE, "1")]
        if unknown:
            known = [*FEATURES, LLM_FEATURE]
            raise InputError(f"an exemplar fit over unknown features {unknown}; known: {known}", path=path)
        return fit


def percentile(values: np.ndarray, among: np.ndarray) -> np.ndarray:
    """Where each of ``values`` stands among ``among`` (0-1): the share below it, ties counted half."""
    among = np.sort(np.asarray(among, dtype=float))
    if not len(among):
        return np.full(len(values), 0.5)
    below = np.searchsorted(among, values, side="left")
    upto = np.searchsorted(among, values, side="right")
    return (below + 0.5 * (upto - below)) / len(among)


def exemplar_features(
    query: np.ndarray, passages: np.ndarray, exemplars: np.ndarray, pool: np.ndarray, own: Sequence[int | None] = ()
) -> dict[str, np.ndarray]:
    """:data:`FEATURES` of ``passages`` (rows, L2-normalized) against a topic's ``query`` vector, its known relevant
    passages (``exemplars``) and its pool holes' vectors (``pool``, for the percentiles). ``own[i]``: the row of
    ``exemplars`` that is passage i itself (left out of its comparison), None for a hole."""
    sims = passages @ exemplars.T
    for i, row in enumerate(own):
        if row is not None:
            sims[i, row] = -np.inf
    exemplar = sims.max(axis=1)
    pool_exemplar = (pool @ exemplars.T).max(axis=1) if len(pool) else pool[:, 0]
    query_cos, pool_query = passages @ query, pool @ query
    return {
        "exemplar_cosine": exemplar,
        "exemplar_percentile": percentile(exemplar, pool_exemplar),
        "query_cosine": query_cos,
        "query_percentile": percentile(query_cos, pool_query),
    }


class ExemplarFeatures:
    """:data:`FEATURES` of a dataset's pairs: each topic's known relevant passages (grade at the threshold or above,
    in the corpus) and its pool holes, embedded by ``encoder``."""

    def __init__(self, dataset: Dataset, encoder: Encoder) -> None:
        self.encoder = encoder
        threshold = dataset.relevance_threshold
        self.exemplars = {
            q: tuple(sorted(d for d, g in docs.items() if g >= threshold and dataset.corpus.get(d) is not None))
            for q, docs in dataset.qrels.items()
        }
        self.pool: dict[str, list[str]] = {}

    def set_pool(self, pool: Collection[tuple[str, str]]) -> None:
        """Each topic's pool holes: what the percentiles are read against."""
        self.pool = {}
        for qid, docid in pool:
            self.pool.setdefault(qid, []).append(docid)

    def decides(self, qid: str, docid: str) -> bool:
        """Whether the pair can be compared: its topic has a known relevant passage other than itself."""
        return any(d != docid for d in self.exemplars.get(qid, ()))

    def topics(self) -> list[str]:
        return [q for q, docs in self.exemplars.items() if docs]

    def __call__(self, cases: Sequence[Case]) -> list[dict[str, float]]:
        """:data:`FEATURES` of each case (of one topic or many; each topic's pool as set, else the cases' own)."""
        out: list[dict[str, float]] = [{} for _ in cases]
        by_topic: dict[str, list[int]] = {}
        for i, case in enumerate(cases):
            by_topic.setdefault(case.qid, []).append(i)
        for qid, idx in by_topic.items():
            exemplars = self.exemplars[qid]
            pool = self.pool.get(qid) or [cases[i].docid for i in idx]
            vectors = self.encoder.passages([*exemplars, *pool, *(cases[i].docid for i in idx)])
            e, p, x = np.split(vectors, [len(exemplars), len(exemplars) + len(pool)])
            query = self.encoder.queries([cases[idx[0]].query])[0]
            own = [exemplars.index(cases[i].docid) if cases[i].docid in exemplars else None for i in idx]
            values = exemplar_features(query, x, e, p, own)
            for j, i in enumerate(idx):
                out[i] = {name: round(float(values[name][j]), 6) for name in FEATURES}
        return out

    def nearest(self, case: Case) -> str:
        """The known relevant passage of the case's topic most like it (itself left out): the one an LLM is shown."""
        exemplars = [d for d in self.exemplars[case.qid] if d != case.docid]
        vectors = self.encoder.passages([*exemplars, case.docid])
        return exemplars[int(np.argmax(vectors[:-1] @ vectors[-1]))]


class _ExemplarStage:
    """What the free exemplar stage and its LLM comparison share: a fit, the features of a dataset's pairs, the pool
    the percentiles read (prepared once, kept with the labels), and the records they write."""

    name: str
    stage: str

    def __init__(self, dataset: Dataset, fit: ExemplarFit, encoder: Encoder) -> None:
        self.fit = fit
        self.features = ExemplarFeatures(dataset, encoder)

    @property
    def model_id(self) -> str:
        raise NotImplementedError

    @property
    def calibration(self) -> Calibration:
        return self.fit.calibration

    def calibrations(self) -> list[Calibration]:
        """What the hole model draws this stage's P from."""
        return [self.fit.calibration]

    def _pool_state(self) -> dict[str, Any]:
        return {"pool": {q: docs for q, docs in sorted(self.features.pool.items())}}

    def _restore_pool(self, state: dict[str, Any]) -> None:
        self.features.pool = {str(q): list(docs) for q, docs in (state.get("pool") or {}).items()}

    def _record(
        self,
        case: Case,
        label: int | None,
        route: str,
        config_id: str,
        details: dict[str, Any],
        p: float | None,
        usage: Usage | None = None,
    ) -> LabelRecord:
        return judge_record(
            case, label, route, Decider(self.name, config_id, self.model_id, self.stage), details, p, usage
        )


class ExemplarJudge(_ExemplarStage):
    """Gives every pair of a topic with a known relevant passage its calibrated P; hands every other pair to
    ``inner`` (the chain's next judge)."""

    name = NAME
    stage = STAGE

    def __init__(self, dataset: Dataset, inner: Judge, fit: ExemplarFit, encoder: Encoder) -> None:
        super().__init__(dataset, fit, encoder)
        self.inner = inner

    @property
    def config_id(self) -> str:
        inner = getattr(self.inner, "config_id", "none")
        return f"{NAME}-{self.fit.identity}+{inner}"

    @property
    def model_id(self) -> str:
        return f"{NAME}:{self.fit.encoder}"

    def decides(self, qid: str, docid: str) -> bool:
        return self.features.decides(qid, docid)

    def topics(self) -> list[str]:
        return self.features.topics()

    # -- the Preparable protocol ------------------------------------------------------------------------------------
    def prepare(self, preparation: Preparation) -> Prepared:
        """Note each topic's pool holes (what the percentiles read), then prepare the next judge."""
        self.features.set_pool(preparation.pool)
        return self.inner.prepare(preparation) if isinstance(self.inner, Preparable) else Prepared()

    def prepared_state(self) -> dict[str, Any]:
        inner = self.inner.prepared_state() if isinstance(self.inner, Preparable) else None
        return {**self._pool_state(), "inner": inner}

    def restore(self, state: dict[str, Any]) -> None:
        self._restore_pool(state)
        if isinstance(self.inner, Preparable) and state.get("inner") is not None:
            self.inner.restore(state["inner"])

    # -- judging ----------------------------------------------------------------------------------------------------
    def probabilities(self, cases: Sequence[Case]) -> tuple[np.ndarray, list[dict[str, float]]]:
        """Each case's calibrated P (the mean over the calibration's draws) and its features."""
        features = self.features(cases)
        facts = [PairFacts(extra=f) for f in features]
        c = self.fit.calibration
        return (c.mean(c.rows(facts)) if facts else np.zeros(0)), features

    def judge(self, cases: Sequence[Case], on_record: Callable[[LabelRecord], None]) -> None:
        mine = [c for c in cases if self.decides(c.qid, c.docid)]
        rest = [c for c in cases if not self.decides(c.qid, c.docid)]
        if mine:
            config_id, name = self.config_id, self.fit.calibration.name
            p, features = self.probabilities(mine)
            for case, pi, f in zip(mine, p, features, strict=True):
                exemplars = sum(1 for d in self.features.exemplars[case.qid] if d != case.docid)
                details = {"calibration": name, "features": f, "exemplars": exemplars, "p": float(pi)}
                on_record(self._record(case, int(pi >= 0.5), NAME, config_id, details, float(pi)))
        if rest:  # the next judge's records count under this chain's configuration, as the adapters' fallback's do
            config_id = self.config_id
            self.inner.judge(rest, lambda record: on_record(replace(record, config_id=config_id)))


class ExemplarLLMJudge(_ExemplarStage):
    """The exemplar judge's costly step (``--refine exemplar-llm``): an LLM compares a hole with its topic's nearest
    known relevant passage, and a calibration of the free features and that comparison gives its P. It re-judges,
    most valuable first and within the budget, the holes the free exemplar stage gave a P."""

    name = LLM_NAME
    stage = LLM_STAGE

    def __init__(self, dataset: Dataset, comparer: Comparer, fit: ExemplarFit, encoder: Encoder) -> None:
        if LLM_FEATURE not in fit.calibration.features or fit.calibration.name != LLM_NAME:
            raise InputError(
                f"the {LLM_NAME} judge needs a fit named {LLM_NAME} over {LLM_FEATURE}; this one is "
                f"{fit.calibration.name} over {fit.features}"
            )
        super().__init__(dataset, fit, encoder)
        self.comparer = comparer
        self.corpus = dataset.corpus

    @property
    def llm(self) -> Any:
        return self.comparer.llm

    @property
    def config_id(self) -> str:
        return f"{LLM_NAME}-{self.fit.identity}-{self.comparer.comparer_id}"

    @property
    def model_id(self) -> str:
        return str(getattr(self.llm, "model_id", ""))

    def refines(self, case: Case, record: LabelRecord) -> bool:
        """The pairs it re-judges: those the free exemplar stage gave a P."""
        return record.stage == STAGE and self.features.decides(case.qid, case.docid)

    def prepare(self, preparation: Preparation) -> Prepared:
        self.features.set_pool(preparation.pool)
        return Prepared()

    def prepared_state(self) -> dict[str, Any]:
        return self._pool_state()

    def restore(self, state: dict[str, Any]) -> None:
        self._restore_pool(state)

    def feature_rows(self, cases: Sequence[Case], progress: bool = False) -> tuple[list[dict[str, Any]], list[Any]]:
        """The free features and the LLM's comparison (NaN where the call failed) of each case, with the passage shown
        (``shown``), and each case's response."""
        rows: list[dict[str, Any]] = list(self.features(cases))
        shown = [self.features.nearest(c) for c in cases]
        texts = [self.corpus.get(d).contents() for d in shown]  # type: ignore[union-attr]
        values, responses = self.comparer.compare(cases, texts, progress)
        for row, value, docid in zip(rows, values, shown, strict=True):
            row[LLM_FEATURE] = round(float(value), 6)
            row["shown"] = docid
        return rows, responses

    def judge(self, cases: Sequence[Case], on_record: Callable[[LabelRecord], None]) -> None:
        mine = [c for c in cases if self.features.decides(c.qid, c.docid)]
        rows, responses = self.feature_rows(mine)
        c, config_id = self.fit.calibration, self.config_id
        for case, row, response in zip(mine, rows, responses, strict=True):
            shown = row.pop("shown")
            usage = usage_of([response] if response is not None else [])
            if row[LLM_FEATURE] != row[LLM_FEATURE]:  # NaN: the call failed; the free stage's calibration draws P
                del row[LLM_FEATURE]
                details = {"calibration": NAME, "features": row, "failed_features": [LLM_FEATURE], "shown": shown}
                on_record(self._record(case, None, "llm-failed", config_id, details, None, usage))
                continue
            p = float(c.mean(c.rows([PairFacts(extra=row)]))[0])
            details = {"calibration": c.name, "features": row, "shown": shown, "p": p}
            on_record(self._record(case, int(p >= 0.5), LLM_NAME, config_id, details, p, usage))


@dataclass(frozen=True)
class ExemplarLLMConfig:
    """``--refine exemplar-llm``'s settings: its calibration."""

    fit: str | None = option(
        None,
        "--exemplar-llm-fit",
        "the calibration of --refine exemplar-llm (default: the shipped bridge/data/exemplar-llm-fit.json; "
        "`python -m bench sparse --fit-llm` rebuilds it)",
        metavar="FILE",
    )


@register_judge(LLM_NAME, ExemplarLLMConfig, calls_llm=True, selectable=False, refines=True, refines_exemplar=True)
def make_exemplar_llm_judge(spec: Any, context: JudgeContext) -> Judge:
    """The LLM comparison over the dataset's encodings; it re-judges what the free exemplar stage decided, so it runs
    as ``--refine exemplar-llm``, on its own."""
    fit = ExemplarFit.read(Path(spec.settings.fit) if spec.settings.fit else shipped_fit_path(SHIPPED_LLM_FIT))
    dataset, llm = context.needs(LLM_NAME, "dataset"), context.needs(LLM_NAME, "llm")
    return ExemplarLLMJudge(dataset, Comparer(llm), fit, context.encodings(LLM_NAME, fit.encoder))


# -- what the report says of the exemplar stages --------------------------------------------------------------------


def fit_sentence(calibration: Mapping[str, Any]) -> str:
    """What the exemplar judge's calibration rests on and what it did on the sparse-judgment benchmark (the figures
    `python -m bench sparse` measured, kept in the shipped fit): the report's sentence on it."""

    def fmt(value: Any) -> str:
        return "n/a" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{value:.2f}"

    head = (
        f"The exemplar judge's P (each hole's likeness to its topic's known relevant passages) rests on "
        f"{calibration.get('population', 'a fit on labelled holes')}; carried here with a common logit shift of sd "
        f"{fmt(calibration.get('transfer_sd'))} and one per topic of sd {fmt(calibration.get('topic_sd'))}."
    )
    measured = calibration.get("benchmark") or []
    if not measured:
        return head + " It was never measured on the sparse-judgment benchmark (`python -m bench sparse`)."
    groups: dict[tuple[str, str, str], list[Mapping[str, Any]]] = {}
    for m in measured:
        groups.setdefault((m["dataset"], m["fit"], m["measure"]), []).append(m)

    def span(values: list[float], digits: int) -> str:
        low, high = min(values), max(values)
        return f"{low:.{digits}f}" if low == high else f"{low:.{digits}f}-{high:.{digits}f}"

    said = "; ".join(
        f"{dataset} ({fit}; {span([m['keep'] for m in ms], 0)} relevant kept per topic), {measure}: Kendall tau "
        f"{span([m['tau'] for m in ms], 2)} (holey {span([m['tau_holey'] for m in ms], 2)}), mean |error| "
        f"{span([m['error'] for m in ms], 3)} (holey {span([m['error_holey'] for m in ms], 3)}), the 95% interval "
        f"holds the truth for {sum(m['covered'] for m in ms)}/{sum(m['systems'] for m in ms)} system-cuts"
        for (dataset, fit, measure), ms in groups.items()
    )
    return f"{head} On the sparse-judgment benchmark (deep collections cut sparse; truth: full judgments): {said}."


describe_stage(
    NAME,
    "the exemplar judge (likeness to the topic's known relevant passages; calibrated on another collection's holes)",
    fit_sentence,
)
describe_stage(
    LLM_NAME,
    "the exemplar judge's LLM comparison (the hole beside a known relevant passage; calibrated on another collection's "
    "holes)",
)
