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
judge's shipped calibration is fitted on (``python -m bench sparse --fit``). The figures over cases and the printed
tables are :mod:`bridge.evaluation.reusability.sparse_tables`.
"""

from __future__ import annotations

import itertools
import json
import random
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from bridge.core.label_records import LabelRecord
from bridge.core.layout import Workspace
from bridge.core.measure_sets import Measure
from bridge.core.trec import Qrels, Run
from bridge.datasets import Dataset
from bridge.estimate.calibration import shift_calibration
from bridge.estimate.hole_evidence import HoleEvidence, build_hole_model
from bridge.estimate.leaderboard import EstimateConfig, Leaderboard, ranked_lists
from bridge.estimate.measures import parse_measures
from bridge.evaluation.reusability.fills import LeaveOutScorer
from bridge.judging import cases_for
from bridge.judging.learned.exemplar import ExemplarFeatures
from bridge.pool.pooling import PoolEntry, build_pool, write_pool

if TYPE_CHECKING:
    from bridge.review.store import ReviewDB

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
    full: Dataset,
    cut: SparseCut,
    runs: Mapping[str, Run],
    features: Callable[[Dataset], ExemplarFeatures],
    depth: int,
    families: Mapping[str, str] | None = None,
) -> list[dict[str, Any]]:
    """Every pool hole of the cut with its exemplar features, its hidden label (grade at the full qrels' threshold
    or above) and the set of retrieval families that pooled it (``families``: system -> family): one labelled sample
    of holes like those a user's pool holds."""
    from bridge.estimate.calibration import PairFacts
    from bridge.estimate.hole_evidence import family_key

    sparse = sparse_dataset(full, cut)
    entries = pool_of(sparse, runs, depth)
    judge = features(sparse)
    judge.set_pool([(e.qid, e.docid) for e in entries])
    mine = [e for e in entries if judge.decides(e.qid, e.docid)]
    rows = judge(cases_for(sparse, mine))
    return [
        {"qid": e.qid, "docid": e.docid, "cut": cut.name, **f, "relevant": hidden_label(full, (e.qid, e.docid)),
         "families": "+".join(family_key(PairFacts(systems=tuple(e.systems)), families or {}))}
        for e, f in zip(mine, rows, strict=True)
    ]  # fmt: skip


@dataclass(frozen=True)
class SparseSettings:
    depth: int = 10
    measures: tuple[Measure, ...] = field(default_factory=lambda: tuple(parse_measures(MEASURES)))
    draws: int = 400
    seed: int = 0
    forecast: tuple[int, ...] = ()
    """Forecast what these numbers of more random answers would give (:mod:`bridge.estimate.forecast`)."""


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
class PairVerdict:
    """Two systems whose full-judgment scores differ by at least :data:`DECIDED_GAP`, as the estimate decides them
    (the rule of ``bridge eval``'s comparisons, :func:`bridge.estimate.leaderboard.verdict_of`)."""

    measure: str
    better: str
    """The system better under the full judgments."""
    worse: str
    gap: float
    """Full-judgment score of ``better`` minus ``worse``."""
    status: str
    """settled, likely or open."""
    right: bool | None
    """Whether a settled or likely verdict says ``better`` is better (None: open, or settled not separable)."""


DECIDED_GAP = 0.05
"""System pairs truly this far apart or more are the comparisons a decision is counted on."""


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
    people: int = 0
    """Random holes people answered (through the review's CSV round trip)."""
    pairs: list[PairVerdict] = field(default_factory=list)
    adjacent: list[int] = field(default_factory=list)
    """[adjacent comparisons decided (settled or likely), adjacent comparisons] over every measure."""
    forecast: list[dict[str, float]] = field(default_factory=list)
    """:class:`bridge.estimate.forecast.Forecast` of more random answers, as dicts."""

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> CaseResult:
        return cls(**{  # type: ignore[arg-type]
            **data, "cut": SparseCut(**data["cut"]), "scores": [SystemScore(**s) for s in data["scores"]],
            "pairs": [PairVerdict(**v) for v in data.get("pairs", [])],
        })  # fmt: skip


PEOPLE_WORKERS = ("w1", "w2", "w3")
"""The simulated people: each answers every exported item (the review's default three judgments per case)."""


def people_through_review(ws: Workspace, full: Dataset, sparse: Dataset, n: int) -> int:
    """Simulated people through the CSV round trip a team with annotators runs, in the case's workspace: ``bridge
    review export --random N --csv``, every exported item answered truthfully by three workers (a case from the full
    judgments with its grade there, an attention check from its gold), ``bridge review import --csv``
    and ``bridge review merge``. A review that holds judgments already is not answered again (it is merged: merging
    is idempotent), so a re-run of the case adds nothing. Returns the judgments imported now."""
    from bridge.core.layout import REVIEW_ANSWERS_CSV, REVIEW_CSV
    from bridge.review.config import ReviewOverrides
    from bridge.review.workflow import export_review, import_review, merge_review, open_review_db, sync_review

    def quiet(text: str) -> None:
        return None

    path = ws.review_db(sparse.slug)
    db = open_review_db(path)
    added = 0
    if not db.judgments():
        db.close()
        db = sync_review(ws, sparse, path, ReviewOverrides(random_holes=n), say=quiet)
        items, answers = path.with_name(REVIEW_CSV), path.with_name(REVIEW_ANSWERS_CSV)
        export_review(db, items, False, say=quiet)
        write_truthful_answers(db, full, items, answers)
        added = import_review(db, answers, say=quiet).added
    merge_review(ws, sparse, db, say=quiet)
    return added


def write_truthful_answers(db: ReviewDB, full: Dataset, items: Path, answers: Path) -> None:
    """Answer every item of an exported CSV as :data:`PEOPLE_WORKERS` would, knowing the full judgments: one row
    per (item, worker) in the columns ``bridge review import --csv`` reads. A case's grade is the pair's under the
    full judgments (0 where they do not judge it), so the estimate learns the grade mix of non-relevant holes as
    it would from people who grade; an attention check's is left empty (its gold is a label, not a grade)."""
    import csv

    from bridge.core.fsio import atomic_write

    known = {item.public_id: item for item in db.items()}
    with open(items, encoding="utf-8", newline="") as handle:
        exported = [known[row["item_id"]] for row in csv.DictReader(handle)]
    with atomic_write(answers) as handle:
        writer = csv.writer(handle)
        writer.writerow(("item_id", "worker", "label", "grade"))
        for item in exported:
            case = item.kind == "case"
            label = hidden_label(full, (item.qid, item.docid)) if case else item.gold
            grade = full.qrels.get(item.qid, {}).get(item.docid, 0) if case else ""
            writer.writerows((item.public_id, worker, label, grade) for worker in PEOPLE_WORKERS)


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
    ``bridge label``), let simulated people answer the review's ``people`` random holes (:func:`people_through_review`),
    estimate as ``bridge eval`` does, and score every system against the full judgments."""
    from bridge.estimate.forecast import forecast
    from bridge.estimate.leaderboard import OPEN
    from bridge.evaluation.rebenchmark.estimated import hole_evidence
    from bridge.evaluation.rebenchmark.inputs import load_inputs

    sparse = sparse_dataset(full, cut)
    runs = _runs(ws, sparse)
    entries = pool_of(sparse, runs, settings.depth)
    write_pool(entries, ws.pool_file(sparse.slug))
    start = time.perf_counter()
    summary = label(ws, sparse)
    seconds = time.perf_counter() - start
    if people:
        people_through_review(ws, full, sparse, people)
    inputs = load_inputs(ws, sparse)
    evidence = hole_evidence(inputs, sparse.qrels, settings.depth)
    model = build_hole_model(evidence)
    topics = list(inputs.topics)
    estimate = EstimateConfig(draws=settings.draws, seed=settings.seed)
    board = Leaderboard(runs, model, topics, settings.measures, estimate)
    ahead = []
    if settings.forecast:
        ahead = forecast(evidence, model, runs, settings.measures, estimate, more=settings.forecast)
    oracle = _oracle_board(full, sparse, runs, entries, topics, settings, estimate)
    truth = LeaveOutScorer(runs, full.qrels, topics, full.relevance_threshold)
    holey = LeaveOutScorer(runs, sparse.qrels, topics, full.relevance_threshold)
    scores = []
    for m in settings.measures:
        lowest, highest = board.bounds.system(m.label)
        low, high = np.percentile(board.means[m.label], [2.5, 97.5], axis=0)
        means = board.point(m.label)
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
        int(getattr(summary, "llm_calls", 0) or 0), people, pair_verdicts(board, scores),
        [sum(c.status != OPEN for c in board.comparisons), len(board.comparisons)], [asdict(f) for f in ahead],
    )  # fmt: skip


def pair_verdicts(board: Leaderboard, scores: Sequence[SystemScore]) -> list[PairVerdict]:
    """Every pair of systems at least :data:`DECIDED_GAP` apart under the full judgments, with the estimate's
    verdict."""
    from bridge.estimate.leaderboard import OPEN

    out = []
    for m in board.measures:
        full = {s.system: s.full for s in scores if s.measure == m.label}
        for a, b in itertools.combinations(range(len(board.systems)), 2):
            sa, sb = board.systems[a], board.systems[b]
            if abs(full[sa] - full[sb]) < DECIDED_GAP:
                continue
            c = board.compare(m.label, a, b)
            better, worse = (sa, sb) if full[sa] > full[sb] else (sb, sa)
            says = {">": sa, "<": sb}.get(c.verdict)
            right = None if c.status == OPEN or says is None else says == better
            out.append(PairVerdict(m.label, better, worse, abs(full[sa] - full[sb]), c.status, right))
    return out


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


def write_results(path: Path, results: Sequence[CaseResult]) -> None:
    from bridge.core.fsio import write_json_atomic

    write_json_atomic(path, [r.to_json() for r in results])


def read_results(path: Path) -> list[CaseResult]:
    return [CaseResult.from_json(r) for r in json.loads(path.read_text(encoding="utf-8"))]
