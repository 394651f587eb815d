"""Settle the leaderboard, not every label: what the labels nobody decided can and cannot change.

A pool pair's label is **decided** when the stage that made it is trusted by its own measurement:
the evidence gate (its zeros) when at most ``gate_max_miss`` of known relevant passages lack an
answer string (95% Jeffreys upper bound), a topic adapter when its topic's cross-validated bAcc
interval lies above the audit's chance line, the LLM judge when its audit passed, people always.
Every other pool pair is **open**: labelled by an untrusted stage, escalated, or never judged.

* **Bounds.** For every system, topic and measure, the lowest and the highest score any assignment
  of the open labels can give (new relevant labels count at the dataset's relevance grade). Hit, P
  and RR only grow with relevant labels; nDCG and Recall do not (a relevant document outside the
  top k raises the ideal DCG and the recall denominator), so their extremes take every count of
  relevant open pairs inside the top k (at the largest or the smallest discounts) with the open pairs
  outside all relevant (lower bound) or none (upper bound). Exact, not residual.
* **Point estimate.** Each open pair is relevant with its P(relevant) (the judge's calibrated P;
  for a label without one, what its stage's measured error says about it; for an unjudged pair, the
  mean P of the others); draws of all open labels give each system's expected score and its 95%
  interval.
* **Comparisons.** Systems adjacent under the point estimate: **settled** when the bounds decide the
  paired test over topics whatever the open labels are (the upper system is better with every open
  pair against it, bootstrap interval of the mean difference above 0; or no assignment makes either
  significantly better: "n.s."); **judge** when only the judge's P separates them (label draws and
  topic bootstrap together); **open** otherwise.
* **Value of a judgment.** The number of unsettled comparisons (measure, pair of systems) whose
  bounds a pair's label changes; a pair that can change none has value 0 and is not worth asking a
  costly judge about. Greedily deciding the most valuable pairs (each as the judge's P predicts)
  gives the pairs that would settle the leaderboard.
"""

from __future__ import annotations

import copy
import itertools
import math
import zlib
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from bridge.judging.metrics import CHANCE_LINE, jeffreys_interval
from bridge.judging.stage_error import ADAPTER, GATE, LLM, ErrorModel, relevance_given_label, stage_of
from bridge.label_records import HUMAN_JUDGE, LabelRecord
from bridge.scoring import FlatQrels, RunMatrix, per_topic
from bridge.trec import Qrels, Run, top_k

Pair = tuple[str, str]
SETTLED, JUDGE, OPEN = "settled", "judge", "open"
RANKED_ONLY = frozenset({"Hit", "P", "RR"})
"""Measures a document outside a system's top k cannot change (nDCG and Recall: it can, through their
normalisers)."""
IR_MEASURES = {"Success": "Hit", "nDCG": "nDCG", "P": "P", "R": "Recall", "RR": "RR"}
"""ir_measures' names of the measures settled here, and the vectorized names (:mod:`bridge.scoring`)."""


@dataclass(frozen=True)
class Measure:
    label: str
    """As the leaderboard shows it: ``Hit@10``."""
    name: str
    """Vectorized name: Hit, nDCG, P, Recall, RR."""
    k: int


def settle_measure(label: str, ir_measure: str, threshold: int = 1) -> Measure | None:
    """The measure a leaderboard column computes (its ir_measures string), or None where bounds are not
    computed here (AP, Judged, cutoff-free measures, a ``rel=`` other than the bounds' ``threshold``)."""
    import ir_measures

    try:
        parsed = ir_measures.parse_measure(ir_measure)
    except (ValueError, NameError, SyntaxError, TypeError, AttributeError):
        return None
    name = IR_MEASURES.get(parsed.NAME)
    if parsed.params.get("rel", threshold) != threshold:
        return None
    cutoff = parsed.params.get("cutoff")
    return Measure(label, name, int(cutoff)) if name and cutoff else None


NAMES = {
    "hit": "Hit", "success": "Hit", "ndcg": "nDCG", "p": "P", "recall": "Recall", "r": "Recall", "rr": "RR", "mrr": "RR"
}  # fmt: skip


def parse_measures(text: str) -> list[Measure]:
    """``Hit@10,nDCG@10,Recall@10`` (also ir_measures' Success, R, MRR) -> measures with a cutoff."""
    out = []
    for item in (x.strip() for x in text.split(",") if x.strip()):
        name, _, cutoff = item.partition("@")
        if name.lower() not in NAMES or not cutoff.isdigit() or int(cutoff) <= 0:
            raise ValueError(f"measure {item!r}: expected NAME@K with NAME one of Hit, nDCG, P, Recall, RR")
        out.append(Measure(item, NAMES[name.lower()], int(cutoff)))
    return out


DEFAULT_MEASURES = "Hit@10,nDCG@10,Recall@10"
"""The leaderboard's measures (bridge eval's defaults)."""


@dataclass(frozen=True)
class SettleConfig:
    resamples: int = 1000
    """Topic bootstrap resamples of the paired comparisons."""
    simulations: int = 500
    """Draws of the open labels (point estimates, the judge's comparisons)."""
    alpha: float = 0.05
    seed: int = 0
    gate_max_miss: float = 0.05
    """The gate's zeros are decided when the 95% upper bound of its miss rate on known relevant passages
    (relevant passages without an answer string) is at most this."""


@dataclass
class LabelState:
    """The judgments a leaderboard rests on: fixed grades and open pool pairs with their P(relevant)."""

    fixed: Qrels
    """Original qrels plus every decided new label (a new relevant label at the threshold grade)."""
    open: dict[Pair, float]
    """Open pool pair -> P(relevant)."""
    threshold: int
    reasons: Counter[str] = field(default_factory=Counter)
    """Why pairs are open: untrusted llm / adapter / gate, undecided (escalated), unjudged."""
    decided: Counter[str] = field(default_factory=Counter)
    """Decided new labels by stage."""

    def decide(self, pair: Pair, label: int) -> None:
        """A judgment arrived: the open pair becomes a fixed label."""
        self.open.pop(pair, None)
        self.fixed.setdefault(pair[0], {})[pair[1]] = self.threshold if label else 0


def trusted_stages(audit: Mapping[str, Any] | None, gate_max_miss: float) -> dict[str, Any]:
    """What the label run's own measurements trust: the LLM (its audit passed), each adapter topic (its
    cross-validated bAcc interval above the chance line), the gate (its miss rate on known relevant
    passages at most ``gate_max_miss``)."""
    audit = audit or {}
    chance = float(audit.get("chance_line", CHANCE_LINE))
    topics = (audit.get("adapter") or {}).get("topics", {})
    adapter = {
        qid: bool(t.get("judge") == "adapter" and t.get("cv_interval") and t["cv_interval"][0] > chance)
        for qid, t in topics.items()
    }
    errors = ErrorModel.from_audit(audit)
    interval = jeffreys_interval(errors.gate_missed, errors.gate_checked)
    gate = interval is not None and interval[1] <= gate_max_miss
    return {LLM: bool(audit.get("trusted")), ADAPTER: adapter, GATE: gate}


def label_state(
    original: Qrels,
    records: Iterable[LabelRecord],
    pool: Iterable[Pair],
    audit: Mapping[str, Any] | None,
    topics: Sequence[str],
    threshold: int = 1,
    gate_max_miss: float = SettleConfig.gate_max_miss,
    prior: float | None = None,
) -> LabelState:
    """Which pool pairs (and labelled pairs outside the pool) are decided (and how) and which are open (with P),
    from a label run's records (those of the audit's configuration and people's) and its judge-audit.json. An
    open pair without a P gets ``prior`` (default: the audit's ``value.prior``, else the mean P of the open pairs
    that have one, else 0.5)."""
    if prior is None:
        prior = ((audit or {}).get("value") or {}).get("prior")
    keep = set(topics)
    trust = trusted_stages(audit, gate_max_miss)
    config_id = (audit or {}).get("config_id")
    errors = ErrorModel.from_audit(audit)
    fixed: Qrels = {q: dict(docs) for q, docs in original.items() if q in keep}
    latest: dict[Pair, LabelRecord] = {}
    for r in records:
        if r.qid in keep and (config_id is None or r.config_id == config_id or r.judge == HUMAN_JUDGE):
            latest[(r.qid, r.docid)] = r
    state = LabelState(fixed, {}, threshold)
    given: dict[str, list[int]] = {}
    for r in latest.values():
        if r.label is not None and (stage := stage_of(r)) is not None:
            given.setdefault(stage, []).append(r.label)
    pending: list[Pair] = []
    # Every pool pair, and every labelled pair outside the pool (a pool rebuilt since, people's labels): the
    # augmented qrels count them, so the bounds must too.
    for pair in dict.fromkeys([*pool, *latest]):
        qid, docid = pair
        if qid not in keep or docid in original.get(qid, {}):
            continue
        r = latest.get(pair)
        stage = stage_of(r) if r is not None else None
        trusted = (
            r is not None
            and r.label is not None
            and (
                r.judge == HUMAN_JUDGE
                or (stage == GATE and trust[GATE])
                or (stage == ADAPTER and trust[ADAPTER].get(qid, False))
                or (stage == LLM and trust[LLM])
            )
        )
        if trusted:
            fixed.setdefault(qid, {})[docid] = threshold if r.label else 0  # type: ignore[union-attr]
            state.decided[stage or "human"] += 1
        elif r is None:
            pending.append(pair)
            state.reasons["unjudged"] += 1
        elif r.label is None:
            state.open[pair] = r.p_yes if r.p_yes is not None else math.nan
            state.reasons["undecided"] += 1
        else:
            state.open[pair] = r.p_yes if r.p_yes is not None else _given(errors, stage, r.label, given)
            state.reasons[f"untrusted {stage}"] += 1
    known = [p for p in state.open.values() if not math.isnan(p)]
    default = prior if prior is not None else float(np.mean(known)) if known else 0.5
    for pair, p in state.open.items():
        if math.isnan(p):
            state.open[pair] = default
    state.open.update(dict.fromkeys(pending, default))
    return state


def _given(errors: ErrorModel, stage: str | None, label: int, given: Mapping[str, Sequence[int]]) -> float:
    """P(relevant | a stage's label) from its measured confusion (posterior mean over 200 draws)."""
    confusion = {LLM: errors.llm, ADAPTER: errors.adapter}.get(stage or LLM)
    labels = given.get(stage or LLM) or [label]
    given_1, given_0 = relevance_given_label(np.random.default_rng(0), confusion, float(np.mean(labels)), 200)
    return float(np.mean(given_1 if label else given_0))


# -- bounds --------------------------------------------------------------------------------------------


class TopicView:
    """One topic's judgments as the bounds need them: fixed grades, open pairs, the ideal DCG for every count
    of relevant open pairs."""

    def __init__(self, grades: Mapping[str, int], open_docs: Iterable[str], threshold: int, k: int) -> None:
        self.grades = grades
        self.open = set(open_docs)
        self.threshold = threshold
        self.k = k
        positive = sorted((g for g in grades.values() if g > 0), reverse=True)
        self.relevant = sum(1 for g in positive if g >= threshold)
        self._positive = positive
        self._idcg: dict[int, float] = {}

    def idcg(self, extra: int) -> float:
        """Ideal DCG@k with ``extra`` more documents of the threshold grade."""
        if extra not in self._idcg:
            gains = sorted(self._positive + [self.threshold] * extra, reverse=True)[: self.k]
            self._idcg[extra] = float(sum(g / math.log2(i + 2) for i, g in enumerate(gains)))
        return self._idcg[extra]


def system_bounds(measure: str, ranked: Sequence[str], topic: TopicView) -> tuple[float, float]:
    """(lowest, highest) value of ``measure`` at ``topic`` for a system's top-k ``ranked`` over every
    assignment of the topic's open labels."""
    thr, k = topic.threshold, topic.k
    fixed_rel = [r for r, d in enumerate(ranked) if d not in topic.open and topic.grades.get(d, 0) >= thr]
    open_ranks = [r for r, d in enumerate(ranked) if d in topic.open]
    m_in = len(open_ranks)
    n_out = len(topic.open) - m_in
    if measure == "Hit":
        return float(bool(fixed_rel)), float(bool(fixed_rel or open_ranks))
    if measure == "P":
        return len(fixed_rel) / k, (len(fixed_rel) + m_in) / k
    if measure == "RR":
        low = 1.0 / (fixed_rel[0] + 1) if fixed_rel else 0.0
        first = min(fixed_rel[:1] + open_ranks[:1]) if fixed_rel or open_ranks else None
        return low, (1.0 / (first + 1) if first is not None else 0.0)
    if measure == "Recall":
        found = len(fixed_rel)

        def recall(s: int, outside: int) -> float:
            total = topic.relevant + s + outside
            return (found + s) / total if total else 0.0

        return min(recall(s, n_out) for s in range(m_in + 1)), max(recall(s, 0) for s in range(m_in + 1))
    if measure == "nDCG":
        dcg = sum(topic.grades.get(d, 0) / math.log2(r + 2) for r, d in enumerate(ranked) if d not in topic.open)
        discounts = sorted(thr / math.log2(r + 2) for r in open_ranks)

        def ndcg(gain: float, extra: int) -> float:
            ideal = topic.idcg(extra)
            return (dcg + gain) / ideal if ideal > 0 else 0.0

        low = min(ndcg(sum(discounts[:s]), s + n_out) for s in range(m_in + 1))
        high = max(ndcg(sum(discounts[m_in - s :]), s) for s in range(m_in + 1))
        return low, high
    raise ValueError(f"bounds are computed for Hit, P, RR, Recall, nDCG, not {measure!r}")


def difference_bounds(
    measure: str, ranked_a: Sequence[str], ranked_b: Sequence[str], topic: TopicView
) -> tuple[float, float]:
    """(lowest, highest) of ``measure(a) - measure(b)`` at ``topic`` over every assignment of its open labels, the
    two systems' top-k taken together: an open document both rank alike moves both scores alike. Exact for Hit, P,
    Recall and nDCG (for each count of relevant open documents the difference is linear in the labels, so the
    extremes take the documents with the smallest or largest coefficients); RR takes the two systems' own bounds
    (valid, not tight)."""
    thr, k = topic.threshold, topic.k
    opened = topic.open
    fixed_a = [r for r, d in enumerate(ranked_a) if d not in opened and topic.grades.get(d, 0) >= thr]
    fixed_b = [r for r, d in enumerate(ranked_b) if d not in opened and topic.grades.get(d, 0) >= thr]
    open_a = {d for d in ranked_a if d in opened}
    open_b = {d for d in ranked_b if d in opened}
    if measure == "Hit":
        low = _lowest_hit_difference(bool(fixed_a), bool(fixed_b), open_a, open_b)
        return low, -_lowest_hit_difference(bool(fixed_b), bool(fixed_a), open_b, open_a)
    if measure == "RR":
        low_a, high_a = system_bounds("RR", ranked_a, topic)
        low_b, high_b = system_bounds("RR", ranked_b, topic)
        return low_a - high_b, high_a - low_b
    if measure == "P":
        coefs = [float(d in open_a) - float(d in open_b) for d in open_a | open_b]
        base = len(fixed_a) - len(fixed_b)
        return (base + sum(c for c in coefs if c < 0)) / k, (base + sum(c for c in coefs if c > 0)) / k
    if measure not in ("Recall", "nDCG"):
        raise ValueError(f"bounds are computed for Hit, P, RR, Recall, nDCG, not {measure!r}")
    n_open = len(opened)
    if measure == "Recall":
        base = float(len(fixed_a) - len(fixed_b))
        inside = [float(d in open_a) - float(d in open_b) for d in open_a | open_b]
        denominators = [float(topic.relevant + m) for m in range(n_open + 1)]
    else:
        rank_a = {d: r for r, d in enumerate(ranked_a)}
        rank_b = {d: r for r, d in enumerate(ranked_b)}
        dcg_a = sum(topic.grades.get(d, 0) / math.log2(r + 2) for r, d in enumerate(ranked_a) if d not in opened)
        dcg_b = sum(topic.grades.get(d, 0) / math.log2(r + 2) for r, d in enumerate(ranked_b) if d not in opened)
        base = dcg_a - dcg_b

        def discount(rank: int | None) -> float:
            return 0.0 if rank is None else thr / math.log2(rank + 2)

        inside = [discount(rank_a.get(d)) - discount(rank_b.get(d)) for d in open_a | open_b]
        denominators = [topic.idcg(m) for m in range(n_open + 1)]
    coefs = sorted(inside + [0.0] * (n_open - len(inside)))  # open documents neither ranks: coefficient 0
    smallest = np.concatenate([[0.0], np.cumsum(coefs)])
    largest = np.concatenate([[0.0], np.cumsum(coefs[::-1])])
    values_low, values_high = [], []
    for m, denominator in enumerate(denominators):
        if denominator <= 0:  # nothing relevant: both scores 0
            values_low.append(0.0)
            values_high.append(0.0)
        else:
            values_low.append((base + smallest[m]) / denominator)
            values_high.append((base + largest[m]) / denominator)
    return min(values_low), max(values_high)


def _lowest_hit_difference(hit_a: bool, hit_b: bool, open_a: set[str], open_b: set[str]) -> float:
    """min Hit(a) - Hit(b): with a fixed hit, a scores 1 and b can score 1 if it has a hit or any open document; without
    one, a scores 0 when its open documents are not relevant, and b then scores 1 if it has a hit or an open document
    a does not rank (one a ranks too would give a its hit)."""
    if hit_a:
        return 0.0 if hit_b or open_b else 1.0
    return -1.0 if hit_b or open_b - open_a else 0.0


class Bounds:
    """Per system and topic, the lowest and highest value of each measure (arrays of shape systems x topics)."""

    def __init__(
        self, runs: Mapping[str, Run], state: LabelState, topics: Sequence[str], measures: Sequence[Measure]
    ) -> None:
        self.systems = sorted(runs)
        self.topics = list(topics)
        self.measures = list(measures)
        self.state = state
        self.column = {qid: t for t, qid in enumerate(self.topics)}
        depth = max((m.k for m in measures), default=10)
        self.ranked = {s: {q: top_k(runs[s].get(q, {}), depth) for q in self.topics} for s in self.systems}
        self.open_by_topic: dict[str, set[str]] = {}
        for qid, docid in state.open:
            self.open_by_topic.setdefault(qid, set()).add(docid)
        shape = (len(self.systems), len(self.topics))
        self.low = {m.label: np.zeros(shape) for m in measures}
        self.high = {m.label: np.zeros(shape) for m in measures}
        for qid in self.topics:
            self.update(qid)

    def fork(self) -> Bounds:
        """A copy that later judgments change apart from this one (the rankings are shared, read-only)."""
        other = copy.copy(self)
        s = self.state
        other.state = LabelState(
            {q: dict(d) for q, d in s.fixed.items()}, dict(s.open), s.threshold, s.reasons, s.decided
        )
        other.open_by_topic = {q: set(docs) for q, docs in self.open_by_topic.items()}
        other.low = {m: v.copy() for m, v in self.low.items()}
        other.high = {m: v.copy() for m, v in self.high.items()}
        return other

    def view(self, qid: str, k: int, open_docs: Iterable[str] | None = None) -> TopicView:
        grades = self.state.fixed.get(qid, {})
        docs = self.open_by_topic.get(qid, set()) if open_docs is None else open_docs
        return TopicView(grades, docs, self.state.threshold, k)

    def update(self, qid: str) -> None:
        """Recompute one topic's bounds (after a judgment there)."""
        t = self.column[qid]
        for m in self.measures:
            view = self.view(qid, m.k)
            for i, s in enumerate(self.systems):
                low, high = system_bounds(m.name, self.ranked[s][qid][: m.k], view)
                self.low[m.label][i, t], self.high[m.label][i, t] = low, high

    def decide(self, pair: Pair, label: int) -> None:
        self.state.decide(pair, label)
        self.open_by_topic.get(pair[0], set()).discard(pair[1])
        self.update(pair[0])

    def difference(
        self, measure: Measure, a: int, b: int, qid: str, view: TopicView | None = None
    ) -> tuple[float, float]:
        """Bounds of ``measure(a) - measure(b)`` at one topic (``view``: its judgments, default the current ones)."""
        view = view or self.view(qid, measure.k)
        ranked = self.ranked
        return difference_bounds(
            measure.name, ranked[self.systems[a]][qid][: measure.k], ranked[self.systems[b]][qid][: measure.k], view
        )

    def with_label(self, pair: Pair, label: int, k: int) -> TopicView:
        """The pair's topic as it would be with ``label`` decided."""
        qid, docid = pair
        grades = {**self.state.fixed.get(qid, {}), docid: self.state.threshold if label else 0}
        return TopicView(grades, self.open_by_topic.get(qid, set()) - {docid}, self.state.threshold, k)


# -- point estimates and comparisons -----------------------------------------------------------------


@dataclass(frozen=True)
class SystemScore:
    system: str
    measure: str
    low: float
    point: float
    point_interval: tuple[float, float]
    high: float


@dataclass(frozen=True)
class Comparison:
    """Two systems adjacent under the point estimate (``upper`` ranked above ``lower``)."""

    measure: str
    upper: str
    lower: str
    status: str
    """settled, judge or open."""
    verdict: str
    """settled: ``>`` (upper better whatever the open labels), ``<`` (lower better: judgments made since the
    point estimates reversed them) or ``n.s.`` (no assignment separates them); judge: ``>`` (under the judge's
    P); open: ``?``."""
    worst: tuple[float, float]
    """95% bootstrap interval of the mean difference with every open pair against ``upper``."""
    best: tuple[float, float]
    """... with every open pair for ``upper``."""
    judged: tuple[float, float]
    """95% interval under the judge's P (label draws and topic bootstrap together)."""


TIE = 1e-9
"""Mean differences within this of 0 are ties: the bootstrap means are updated incrementally as judgments arrive,
so an exact 0 can come back as +-1e-16."""


class Leaderboard:
    """Bounds, point estimates, comparisons and the value of each open pair for one set of runs and labels."""

    def __init__(
        self,
        runs: Mapping[str, Run],
        state: LabelState,
        topics: Sequence[str],
        measures: Sequence[Measure],
        config: SettleConfig | None = None,
    ) -> None:
        self.config = config or SettleConfig()
        self.runs = runs
        self.measures = list(measures)
        self.bounds = Bounds(runs, state, topics, measures)
        self.systems = self.bounds.systems
        rng = np.random.default_rng(self.config.seed)
        n = len(self.bounds.topics)
        self.weights = (
            rng.multinomial(n, np.full(n, 1 / n), size=self.config.resamples).astype(float) / n
            if n
            else np.zeros((self.config.resamples, 0))
        )
        """Topic bootstrap weights (resamples x topics), shared by every comparison."""
        # each measure draws from its own stream, so adding or reordering measures changes no verdict
        self.points = {
            m.label: self._simulate(m, np.random.default_rng([self.config.seed, zlib.crc32(m.label.encode())]))
            for m in self.measures
        }
        self.by_label = {m.label: m for m in self.measures}
        self._diff: dict[tuple[str, int, int], tuple[np.ndarray, np.ndarray]] = {}
        """(measure, a, b) -> per topic, the lowest and highest a - b (kept up to date as judgments arrive)."""
        self._boot: dict[tuple[str, int, int], tuple[np.ndarray, np.ndarray]] = {}
        """(measure, a, b) -> the topic-bootstrap means of the lowest and the highest difference."""
        self.comparisons = self._compare()

    # point estimates: draws of the open labels (and one topic resample per draw, for the comparisons)
    def _simulate(self, measure: Measure, rng: np.random.Generator) -> dict[str, np.ndarray]:
        state, b = self.bounds.state, self.bounds
        flat = FlatQrels(state.fixed, state.fixed, b.topics, state.threshold, extra=state.open)
        matrices = [RunMatrix(self.runs[s], flat, measure.k) for s in self.systems]
        open_rows = np.array([flat.index[p] for p in state.open], dtype=int)
        p = np.array(list(state.open.values()), dtype=float)
        sims = max(self.config.simulations, 1)  # with no open pair, draws of the topic resample alone
        means = np.zeros((sims, len(self.systems)))
        resampled = np.zeros((sims, len(self.systems)))
        n = len(b.topics)
        values = np.zeros((len(self.systems), n))
        for i in range(sims):
            if i == 0 or len(open_rows):  # without open pairs the scores are the same in every draw
                grades = flat.grades.copy()
                if len(open_rows):
                    grades[open_rows] = np.where(rng.random(len(open_rows)) < p, float(state.threshold), 0.0)
                values = np.array([per_topic(measure.name, mat, flat, grades, measure.k) for mat in matrices])
            means[i] = values.mean(axis=1) if n else 0.0
            w = rng.multinomial(n, np.full(n, 1 / n)) / n if n else np.zeros(0)
            resampled[i] = values @ w
        return {"means": means, "resampled": resampled}

    def scores(self) -> list[SystemScore]:
        out = []
        for m in self.measures:
            means = self.points[m.label]["means"]
            for i, s in enumerate(self.systems):
                low, high = self.bounds.low[m.label][i].mean(), self.bounds.high[m.label][i].mean()
                point = float(means[:, i].mean())
                out.append(SystemScore(s, m.label, float(low), point, self._percentiles(means[:, i]), float(high)))
        return out

    def order(self, measure: str) -> list[int]:
        """System indices best first under the point estimate (ties by name)."""
        means = self.points[measure]["means"].mean(axis=0)
        return sorted(range(len(self.systems)), key=lambda i: (-means[i], self.systems[i]))

    def _percentiles(self, draws: np.ndarray) -> tuple[float, float]:
        tail = 100 * self.config.alpha / 2
        lo, hi = np.percentile(draws, [tail, 100 - tail]) if len(draws) else (0.0, 0.0)
        return float(lo), float(hi)

    def compare(self, measure: str, a: int, b: int) -> Comparison:
        key = (measure, a, b)
        if key not in self._boot:
            m = self.by_label[measure]
            pairs = [self.bounds.difference(m, a, b, qid) for qid in self.bounds.topics]
            low = np.array([x for x, _ in pairs], dtype=float)
            high = np.array([x for _, x in pairs], dtype=float)
            self._diff[key] = (low, high)
            self._boot[key] = (self.weights @ low, self.weights @ high)
        worst_draws, best_draws = self._boot[key]
        worst, best = self._percentiles(worst_draws), self._percentiles(best_draws)
        draws = self.points[measure]["resampled"]
        judged = self._percentiles(draws[:, a] - draws[:, b])
        if worst[0] > TIE:
            status, verdict = SETTLED, ">"
        elif best[1] < -TIE:  # judgments since the point estimates reversed them, whatever the open labels are
            status, verdict = SETTLED, "<"
        elif best[0] <= TIE and worst[1] >= -TIE:
            status, verdict = SETTLED, "n.s."
        elif judged[0] > TIE:
            status, verdict = JUDGE, ">"
        else:
            status, verdict = OPEN, "?"
        return Comparison(measure, self.systems[a], self.systems[b], status, verdict, worst, best, judged)

    def _compare(self) -> list[Comparison]:
        out = []
        for m in self.measures:
            order = self.order(m.label)
            out += [self.compare(m.label, a, b) for a, b in itertools.pairwise(order)]
        return out

    def unsettled(self) -> list[Comparison]:
        return [c for c in self.comparisons if c.status != SETTLED]

    def fork(self) -> Leaderboard:
        """A copy to judge in (:func:`settling_judgments`) without touching this one; runs and point estimates are
        shared."""
        other = copy.copy(self)
        other.bounds = self.bounds.fork()
        other._diff = {key: (low.copy(), high.copy()) for key, (low, high) in self._diff.items()}
        other._boot = {key: (worst.copy(), best.copy()) for key, (worst, best) in self._boot.items()}
        other.comparisons = list(self.comparisons)
        return other

    # the value of a judgment
    def values(self, pairs: Iterable[Pair] | None = None) -> dict[Pair, int]:
        """Open pair -> how many unsettled comparisons its label can change the bounds of."""
        index = {s: i for i, s in enumerate(self.systems)}
        wanted = [(self.by_label[c.measure], index[c.upper], index[c.lower]) for c in self.unsettled()]
        column = self.bounds.column
        out = {}
        for pair in self.bounds.state.open if pairs is None else pairs:
            qid, docid = pair
            t = column[qid]
            views: dict[tuple[int, int], TopicView] = {}
            value = 0
            for m, a, b in wanted:
                ranked_a, ranked_b = self.bounds.ranked[self.systems[a]][qid], self.bounds.ranked[self.systems[b]][qid]
                if m.name in RANKED_ONLY and docid not in ranked_a[: m.k] and docid not in ranked_b[: m.k]:
                    continue  # Hit, P, RR: a document neither system ranks cannot move either score
                low, high = self._diff[(m.label, a, b)]
                current = (low[t], high[t])
                for label in (0, 1):
                    if (label, m.k) not in views:
                        views[(label, m.k)] = self.bounds.with_label(pair, label, m.k)
                    if self.bounds.difference(m, a, b, qid, views[(label, m.k)]) != current:
                        value += 1
                        break
            out[pair] = value
        return out

    def decide(self, pair: Pair, label: int) -> None:
        """A judgment arrived: update the bounds and re-settle the comparisons (point estimates are kept)."""
        qid = pair[0]
        t = self.bounds.column[qid]
        self.bounds.decide(pair, label)
        for key, (low, high) in self._diff.items():
            measure, a, b = key
            new_low, new_high = self.bounds.difference(self.by_label[measure], a, b, qid)
            worst, best = self._boot[key]
            if new_low != low[t]:
                worst += self.weights[:, t] * (new_low - low[t])
                low[t] = new_low
            if new_high != high[t]:
                best += self.weights[:, t] * (new_high - high[t])
                high[t] = new_high
        index = {s: i for i, s in enumerate(self.systems)}
        self.comparisons = [self.compare(c.measure, index[c.upper], index[c.lower]) for c in self.comparisons]


def settling_judgments(
    board: Leaderboard, answer: Callable[[Pair], int] | None = None, limit: int | None = None
) -> tuple[list[tuple[Pair, int]], bool]:
    """Greedily the most valuable open pair, decided (``answer``; default: as its P predicts, P >= 0.5), until
    every comparison is settled or no open pair can change one. Returns (pair, value) in order and whether
    everything settled. ``board`` is updated in place (judge in :meth:`Leaderboard.fork` to keep it)."""
    state = board.bounds.state
    answer = answer or (lambda pair: int(state.open.get(pair, 0.0) >= 0.5))
    chosen: list[tuple[Pair, int]] = []
    values = board.values()
    while board.unsettled() and (limit is None or len(chosen) < limit):
        candidates = [(v, -abs(state.open[p] - 0.5), p) for p, v in values.items() if v > 0 and p in state.open]
        if not candidates:
            break
        value, _, pair = max(candidates)
        unsettled = {(c.measure, c.upper, c.lower) for c in board.unsettled()}
        board.decide(pair, answer(pair))
        chosen.append((pair, value))
        values.pop(pair, None)
        if {(c.measure, c.upper, c.lower) for c in board.unsettled()} != unsettled:
            values = board.values(list(values))  # another comparison settled: every value may change
        else:
            values.update(board.values([p for p in values if p[0] == pair[0]]))
    return chosen, not board.unsettled()
