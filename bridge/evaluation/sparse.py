"""The sparse-judgment benchmark: qrels that hold K relevant passages per topic and no negatives, as BEIR, MS MARCO,
NQ and scifact do, cut from a deeply judged collection whose full judgments are the truth.

Holes decide such leaderboards, and every held-out test on deep judgments (dl19's leave-one-system-out) hides it:
there a left-out system's holes move its score by a few thousandths. Here, per cut (K relevant passages drawn at
random per topic with a seed; every other judgment removed, negatives included), the pool of every run becomes holes
with hidden labels, and the main job runs as a user's would: ``bridge label`` with the command line's defaults (and
any label arguments given), then the estimate ``bridge eval`` computes. Every system's holey score (trec_eval on the
cut qrels), estimate, 95% hole interval and bounds are set beside its score under the full judgments, and per measure:

* Kendall's tau-b of the holey score and of the estimate against the full-judgment leaderboard;
* mean |error| of each, and of the floors: the prior alone (``--judge open --exemplar off``, a config of its own) and
  a random fill at each topic's true share of relevant holes (an oracle's floor: the level known, nothing else);
* the share of systems whose full-judgment score lies inside the 95% interval (coverage) and the interval's width.

:func:`hole_sample` gives the same cut's holes with their exemplar features and hidden labels: what the exemplar
judge's shipped calibration is fitted on (``python -m bench sparse --fit``).
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from bridge.core.label_records import LabelRecord
from bridge.core.layout import Workspace
from bridge.core.measures import Measure
from bridge.core.trec import Qrels, Run
from bridge.datasets import Dataset
from bridge.estimate.calibration import shift_calibration
from bridge.estimate.hole_evidence import HoleEvidence, build_hole_model
from bridge.estimate.leaderboard import EstimateConfig, Leaderboard, ranked_lists
from bridge.estimate.measures import parse_measures
from bridge.evaluation.rankcorr import kendall_tau
from bridge.evaluation.reusability_fills import LeaveOutScorer
from bridge.judging import cases_for
from bridge.judging.learned.exemplar import ExemplarFeatures
from bridge.pool.pooling import PoolEntry, build_pool, write_pool

MEASURES = "nDCG@10,P@10,Recall@10"
ORACLE = "oracle-prevalence"


@dataclass(frozen=True)
class SparseCut:
    """K relevant passages per topic, drawn with a seed."""

    keep: int
    seed: int

    @property
    def name(self) -> str:
        return f"keep{self.keep}-seed{self.seed}"


def keep_relevant(qrels: Qrels, threshold: int, cut: SparseCut) -> Qrels:
    """Per topic with a relevant passage: ``cut.keep`` of its relevant passages (all where it has fewer), drawn at
    random with the cut's seed, with their grades; no other judgment (no negatives)."""
    rng = random.Random(f"{cut.seed}")
    out: Qrels = {}
    for qid in sorted(qrels):
        relevant = sorted(d for d, g in qrels[qid].items() if g >= threshold)
        if relevant:
            kept = rng.sample(relevant, min(cut.keep, len(relevant)))
            out[qid] = {d: qrels[qid][d] for d in sorted(kept)}
    return out


def sparse_dataset(ds: Dataset, cut: SparseCut) -> Dataset:
    """``ds`` with its qrels cut (its topics: those with a relevant passage). The corpus, its slug and its fingerprint
    are the same, so every index and encoding of ``ds`` serves the cut."""
    qrels = keep_relevant(ds.qrels, ds.relevance_threshold, cut)
    queries = tuple(q for q in ds.queries if q.qid in qrels)
    return replace(ds, qrels=qrels, queries=queries, known_negatives={}, extra_qrels={}, unlimited=None)


def pool_of(ds: Dataset, runs: Mapping[str, Run], depth: int) -> list[PoolEntry]:
    return build_pool(runs, ds.qrels, ds.qids, depth)


def hole_sample(
    full: Dataset, cut: SparseCut, runs: Mapping[str, Run], features: Callable[[Dataset], ExemplarFeatures], depth: int
) -> list[dict[str, Any]]:
    """Every pool hole of the cut with its exemplar features and its hidden label (grade at the full qrels' threshold
    or above): one labelled sample of holes like those a user's pool holds."""
    sparse = sparse_dataset(full, cut)
    entries = pool_of(sparse, runs, depth)
    judge = features(sparse)
    judge.set_pool([(e.qid, e.docid) for e in entries])
    mine = [e for e in entries if judge.decides(e.qid, e.docid)]
    rows = judge(cases_for(sparse, mine))
    return [
        {"qid": e.qid, "docid": e.docid, "cut": cut.name, **f, "relevant": hidden_label(full, (e.qid, e.docid))}
        for e, f in zip(mine, rows, strict=True)
    ]  # fmt: skip


@dataclass(frozen=True)
class SparseSettings:
    depth: int = 10
    measures: tuple[Measure, ...] = field(default_factory=lambda: tuple(parse_measures(MEASURES)))
    draws: int = 400
    seed: int = 0


@dataclass(frozen=True)
class SystemScore:
    measure: str
    system: str
    full: float
    holey: float
    estimate: float
    low: float
    high: float
    lowest: float
    highest: float
    oracle: float
    """The random fill at each topic's true share of relevant holes."""

    @property
    def covered(self) -> bool:
        return self.low - 1e-12 <= self.full <= self.high + 1e-12


@dataclass(frozen=True)
class CaseResult:
    """One cut under one label configuration."""

    dataset: str
    config: str
    cut: SparseCut
    scores: list[SystemScore]
    holes: int
    relevant_holes: int
    expected_relevant: float
    stages: dict[str, list[float]]
    """Stage -> [open pairs, expected relevant]."""
    label_seconds: float
    llm_calls: int

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> CaseResult:
        return cls(
            **{**data, "cut": SparseCut(**data["cut"]), "scores": [SystemScore(**s) for s in data["scores"]]}  # type: ignore[arg-type]
        )


def answer_random_holes(ws: Workspace, full: Dataset, sparse: Dataset, entries: Sequence[PoolEntry], n: int) -> int:
    """Simulated people: ``n`` pool holes drawn at random (seeded by the cut's qrels) answered from their hidden
    labels, as ``bridge review``'s random share writes them (each with the judge's record it replaces): fixed in the
    estimate, and a sample of holes that recalibrates the judge's level (a pair already answered is left as it is).
    Returns how many were drawn."""
    from bridge.core.fsio import JsonlAppender
    from bridge.core.label_records import HUMAN_JUDGE
    from bridge.estimate.calibration import RANDOM_SAMPLING
    from bridge.label.hole_reading import counted_records, people_answer

    path = ws.labels_file(sparse.slug)
    records = counted_records(path, ws.audit_report(sparse.slug))
    drawn = random.Random(json.dumps(sorted(sparse.qrels.items()), sort_keys=True)).sample(
        [(e.qid, e.docid) for e in entries], min(n, len(entries))
    )
    with JsonlAppender(path) as log:
        for pair in drawn:
            if pair in records and records[pair].judge == HUMAN_JUDGE:
                continue  # answered by an earlier run of the case
            grade = full.qrels.get(pair[0], {}).get(pair[1], 0)
            answer = people_answer(records.get(pair), pair, hidden_label(full, pair), grade, "simulated-people",
                                   sampling=RANDOM_SAMPLING)  # fmt: skip
            log.append(answer.to_json())
    return len(drawn)


def hidden_label(full: Dataset, pair: tuple[str, str]) -> int:
    """A pair's label under the full judgments (grade at the threshold or above)."""
    return int(full.qrels.get(pair[0], {}).get(pair[1], 0) >= full.relevance_threshold)


def run_case(
    ws: Workspace,
    full: Dataset,
    cut: SparseCut,
    config: str,
    label: Callable[[Workspace, Dataset], Any],
    settings: SparseSettings = SparseSettings(),
    people: int = 0,
) -> CaseResult:
    """Cut ``full``'s qrels, pool ``ws``'s runs over the cut, label the pool with ``label(ws, sparse)`` (a user's
    ``bridge label``), let simulated people answer ``people`` random holes, estimate as ``bridge eval`` does, and score
    every system against the full judgments."""
    from bridge.evaluation.estimated import hole_model
    from bridge.evaluation.inputs import load_inputs

    sparse = sparse_dataset(full, cut)
    runs = _runs(ws, sparse)
    entries = pool_of(sparse, runs, settings.depth)
    write_pool(entries, ws.pool_file(sparse.slug))
    start = time.perf_counter()
    summary = label(ws, sparse)
    seconds = time.perf_counter() - start
    if people:
        answer_random_holes(ws, full, sparse, entries, people)
    inputs = load_inputs(ws, sparse)
    model = hole_model(inputs, sparse.qrels, settings.depth)
    topics = list(inputs.topics)
    estimate = EstimateConfig(draws=settings.draws, seed=settings.seed)
    board = Leaderboard(runs, model, topics, settings.measures, estimate)
    oracle = _oracle_board(full, sparse, runs, entries, topics, settings, estimate)
    truth = LeaveOutScorer(runs, full.qrels, topics, full.relevance_threshold)
    holey = LeaveOutScorer(runs, sparse.qrels, topics, full.relevance_threshold)
    scores = []
    for m in settings.measures:
        lowest, highest = board.bounds.system(m.label)
        low, high = np.percentile(board.means[m.label], [2.5, 97.5], axis=0)
        means = board.means[m.label].mean(axis=0)
        for i, s in enumerate(board.systems):
            scores.append(SystemScore(
                m.label, s, float(truth.full(s, m).mean()), float(holey.full(s, m).mean()), float(means[i]),
                float(low[i]), float(high[i]), float(lowest[i]), float(highest[i]),
                float(oracle.means[m.label][:, i].mean()),
            ))  # fmt: skip
    relevant = sum(hidden_label(full, (e.qid, e.docid)) for e in entries)
    stages = {k: [float(n), float(e)] for k, (n, e) in model.by_stage().items()}
    return CaseResult(
        full.name, config, cut, scores, len(entries), relevant, float(model.p.sum()), stages, seconds,
        int(getattr(summary, "llm_calls", 0) or 0),
    )  # fmt: skip


def _runs(ws: Workspace, ds: Dataset) -> dict[str, Run]:
    from bridge.core.trec import read_runs

    return read_runs(ws.runs(ds.slug))


def _oracle_board(
    full: Dataset,
    sparse: Dataset,
    runs: Mapping[str, Run],
    entries: Sequence[PoolEntry],
    topics: Sequence[str],
    settings: SparseSettings,
    estimate: EstimateConfig,
) -> Leaderboard:
    """Every hole relevant at random with its topic's true share of relevant holes (an oracle's level, no ranking)."""
    threshold = full.relevance_threshold
    by_topic: dict[str, list[int]] = {}
    for e in entries:
        by_topic.setdefault(e.qid, []).append(hidden_label(full, (e.qid, e.docid)))
    share = {q: (sum(v) + 0.5) / (len(v) + 1) for q, v in by_topic.items()}
    records = [
        LabelRecord(
            e.qid, e.docid, None, ORACLE, ORACLE, ORACLE, "", details={"calibration": ORACLE}, p_yes=share[e.qid]
        )
        for e in entries
    ]
    calibration = replace(shift_calibration(ORACLE, 0.0, 1, 0, "each topic's true share of relevant holes"),
                          hole_like=True)  # fmt: skip
    seen = ranked_lists(runs, topics, max(m.k for m in settings.measures))
    evidence = HoleEvidence(sparse.qrels, records, [(e.qid, e.docid) for e in entries], topics,
                            threshold, {ORACLE: calibration}, None, seen)  # fmt: skip
    return Leaderboard(runs, build_hole_model(evidence), topics, settings.measures, estimate)


# -- figures over cases ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Figures:
    """One configuration and measure over its cases: the mean and the spread over cases of each figure."""

    config: str
    measure: str
    cases: int
    tau_holey: list[float]
    tau_estimate: list[float]
    error_holey: list[float]
    error_estimate: list[float]
    error_oracle: list[float]
    covered: int
    systems: int
    width: float
    label_minutes: float
    """Mean wall-clock minutes of the label stage per case (2 cores: its CPU budget)."""
    llm_calls: float

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def case_figures(result: CaseResult, measure: str) -> dict[str, float]:
    """Kendall's tau (holey, estimate), mean |error| (holey, estimate, oracle floor), coverage and mean width of one
    case on one measure."""
    rows = [s for s in result.scores if s.measure == measure]
    full = [s.full for s in rows]
    return {
        "tau_holey": kendall_tau(full, [s.holey for s in rows]),
        "tau_estimate": kendall_tau(full, [s.estimate for s in rows]),
        "error_holey": float(np.mean([abs(s.holey - s.full) for s in rows])),
        "error_estimate": float(np.mean([abs(s.estimate - s.full) for s in rows])),
        "error_oracle": float(np.mean([abs(s.oracle - s.full) for s in rows])),
        "covered": sum(s.covered for s in rows),
        "systems": len(rows),
        "width": float(np.mean([s.high - s.low for s in rows])),
    }


def summarize(results: Sequence[CaseResult]) -> list[Figures]:
    """Per configuration and measure: each figure per case (the spread over seeds and cuts is what is reported)."""
    out = []
    keys = dict.fromkeys((r.config, s.measure) for r in results for s in r.scores)
    for config, measure in keys:
        cases = [r for r in results if r.config == config]
        figures = [case_figures(r, measure) for r in cases]
        out.append(Figures(
            config, measure, len(figures),
            *([f[k] for f in figures] for k in ("tau_holey", "tau_estimate", "error_holey", "error_estimate",
                                                 "error_oracle")),
            sum(int(f["covered"]) for f in figures), sum(int(f["systems"]) for f in figures),
            float(np.mean([f["width"] for f in figures])),
            float(np.mean([r.label_seconds for r in cases])) / 60, float(np.mean([r.llm_calls for r in cases])),
        ))  # fmt: skip
    return out


def spread(values: Sequence[float]) -> str:
    """``0.873 [0.85, 0.90]``: the mean and the range over cases."""
    v = [x for x in values if x == x]
    if not v:
        return "n/a"
    return f"{np.mean(v):.3f} [{min(v):.3f}, {max(v):.3f}]" if len(v) > 1 else f"{v[0]:.3f}"


def table(figures: Sequence[Figures]) -> str:
    """The benchmark's table (markdown)."""
    head = (
        "| config | measure | cases | tau holey | tau estimate | error holey | error estimate | error oracle "
        "floor | covered (95%) | width | label min | LLM calls |\n|---|---|---|---|---|---|---|---|---|---|---|---|"
    )
    lines = [head]
    for f in figures:
        lines.append(
            f"| {f.config} | {f.measure} | {f.cases} | {spread(f.tau_holey)} | {spread(f.tau_estimate)} | "
            f"{spread(f.error_holey)} | {spread(f.error_estimate)} | {spread(f.error_oracle)} | "
            f"{f.covered}/{f.systems} ({f.covered / max(f.systems, 1):.2f}) | {f.width:.3f} | "
            f"{f.label_minutes:.1f} | {f.llm_calls:.0f} |"
        )
    return "\n".join(lines)


def write_results(path: Path, results: Sequence[CaseResult]) -> None:
    from bridge.core.fsio import write_json_atomic

    write_json_atomic(path, [r.to_json() for r in results])


def read_results(path: Path) -> list[CaseResult]:
    return [CaseResult.from_json(r) for r in json.loads(path.read_text(encoding="utf-8"))]
