"""Bias-reduction curves (DREAM paper, Appendix H): hole growth rate and marginal contribution.

Both are computed from labels already decided; no new judgments are made. The universe is the
depth-k pool of the given systems over the topics:

* ``D_P``, the qrels of a sub-pool built from a system set P: the original qrels plus the
  augmented label of every pair that lies in the top-k of some system in P and that the original
  qrels did not judge. Pairs outside the sub-pool count as unjudged (non-relevant for the measures).
* A *hole* is a pair the original qrels did not judge and the augmented qrels call relevant
  (grade >= the relevance threshold). ``H(C_m)`` is the set of holes inside the sub-pool of
  ``C_m``, the first m systems of a random order.
* Growth rate: ``GR(m) = (|H(C_m)| - |H(C_{m-1})|) / |H(C_{m-1})|`` for m = 2..n (undefined, and
  left out of the average, where ``H(C_{m-1})`` is empty).
* Marginal contribution of system r: for m = 1..n-1, ``S_m`` is the first m systems of the order
  with r removed; ``MC_m(r) = |Perf_{D_r}(r) - Perf_{D_{S_m}}(r)|`` where ``D_r = D_{S_m + {r}}``.
  Perf is Hit@k, nDCG@k, Recall@k or MRR@k (trec_eval semantics, mean over topics), each computed by its
  registered object as :mod:`bridge.evaluation.scoring.providers` computes the measures ir_measures does not know.
* Both are averaged over systems and over ``orders`` seeded random system orders (default 10).

Speed: the label matrix holds, per system, query and rank, the original grade of the document
or the index of its new relevant pair, and per pair the systems that retrieved it. For one order
and one system r, the sub-pool size at which each pair becomes visible is one array; r's top k
under every sub-pool is then one array of gains (n-1 x topics x k), and each sub-pool's judged
grades per topic a cumulative histogram over m of the pairs per grade, so all n-1 sub-pools are
measured at once in numpy (a measure's normaliser once per distinct histogram). The
straightforward computation (:func:`marginal_contribution_reference`: build each sub-pool's
qrels, run ir_measures) gives the same numbers and serves as the test oracle and benchmark baseline.
"""

from __future__ import annotations

import csv
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bridge.core.fsio import atomic_write
from bridge.core.measure_sets import Measure, at
from bridge.core.trec import Qrels, Run, top_k
from bridge.estimate.measures import parse_measures
from bridge.evaluation.scoring.providers import CountedGrades, object_values

CURVE_MEASURES = ("Hit", "nDCG", "Recall", "MRR")
DEFAULT_ORDERS = 10


@dataclass(frozen=True)
class LabelMatrix:
    """Runs, original qrels and decided labels as arrays (S systems, Q topics, P new positive pairs)."""

    systems: tuple[str, ...]
    topics: tuple[str, ...]
    depth: int
    threshold: int
    levels: np.ndarray
    """(L,) the distinct positive grades, descending (gains of nDCG)."""
    orig_level_counts: np.ndarray
    """(L, Q) originally judged documents per grade (always in every sub-pool's qrels)."""
    pair_query: np.ndarray
    """(P,) topic index of each new positive pair (unjudged originally, grade > 0 now, inside the pool)."""
    pair_level: np.ndarray
    """(P,) grade level index of each new positive pair."""
    member_start: np.ndarray
    """(P + 1,) pair p was retrieved by the systems ``member_system[member_start[p]:member_start[p + 1]]``."""
    member_system: np.ndarray
    elem_orig_gain: np.ndarray
    """(S, Q, depth) original grade of each retrieved document (0 if unjudged, non-relevant or absent)."""
    elem_pair: np.ndarray
    """(S, Q, depth) index of the new positive pair at that rank, -1 if none."""

    @property
    def relevant_pairs(self) -> np.ndarray:
        """(P,) bool: new pairs relevant at the threshold (the holes)."""
        return self.levels[self.pair_level] >= self.threshold

    def first_two(self, position: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Per pair, the earliest and second-earliest position (in a system order) of a system that
        retrieved it; the second is S when only one system did."""
        n_s = len(self.systems)
        if len(self.pair_query) == 0:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
        starts = self.member_start[:-1]
        pos = position[self.member_system]
        first = np.minimum.reduceat(pos, starts)
        others = np.where(pos == np.repeat(first, np.diff(self.member_start)), n_s, pos)
        return first, np.minimum.reduceat(others, starts)


def build_label_matrix(
    runs: Mapping[str, Run],
    original: Qrels,
    augmented: Qrels,
    topics: Sequence[str],
    depth: int = 10,
    threshold: int = 1,
) -> LabelMatrix:
    systems = tuple(sorted(runs))
    n_s, n_q = len(systems), len(topics)
    elem_orig_gain = np.zeros((n_s, n_q, depth))
    elem_pair = np.full((n_s, n_q, depth), -1, dtype=np.int64)
    pair_ids: dict[tuple[int, str], int] = {}
    pair_query: list[int] = []
    pair_grade: list[int] = []
    for s, system in enumerate(systems):
        run = runs[system]
        for q, qid in enumerate(topics):
            judged = original.get(qid, {})
            labels = augmented.get(qid, {})
            for rank, docid in enumerate(top_k(run.get(qid, {}), depth)):
                if docid in judged:
                    elem_orig_gain[s, q, rank] = max(judged[docid], 0)
                    continue
                grade = labels.get(docid, 0)
                if grade <= 0:
                    continue
                p = pair_ids.setdefault((q, docid), len(pair_ids))
                if p == len(pair_query):
                    pair_query.append(q)
                    pair_grade.append(grade)
                elem_pair[s, q, rank] = p
    orig_grades = [g for qid in topics for g in original.get(qid, {}).values() if g > 0]
    levels = np.array(sorted(set(orig_grades) | set(pair_grade), reverse=True) or [1], dtype=float)
    level_of = {g: i for i, g in enumerate(levels)}
    orig_level_counts = np.zeros((len(levels), n_q), dtype=np.int64)
    for q, qid in enumerate(topics):
        for g in original.get(qid, {}).values():
            if g > 0:
                orig_level_counts[level_of[g], q] += 1
    member_system, _, _ = np.nonzero(elem_pair >= 0)
    pairs = elem_pair[elem_pair >= 0]
    by_pair = np.argsort(pairs, kind="stable")
    member_start = np.concatenate([[0], np.cumsum(np.bincount(pairs, minlength=len(pair_query)))])
    return LabelMatrix(
        systems,
        tuple(topics),
        depth,
        threshold,
        levels,
        orig_level_counts,
        np.array(pair_query, dtype=np.int64),
        np.array([level_of[g] for g in pair_grade], dtype=np.int64),
        member_start.astype(np.int64),
        member_system[by_pair].astype(np.int64),
        elem_orig_gain,
        elem_pair,
    )


def random_orders(n_systems: int, n_orders: int = DEFAULT_ORDERS, seed: int = 0) -> np.ndarray:
    """(n_orders, n_systems) seeded random permutations of system indices."""
    rng = np.random.default_rng(seed)
    return np.array([rng.permutation(n_systems) for _ in range(n_orders)], dtype=np.int64).reshape(n_orders, n_systems)


@dataclass(frozen=True)
class Curves:
    systems: tuple[str, ...]
    orders: np.ndarray
    """(O, S) system indices in pooling order."""
    holes_found: np.ndarray
    """(O, S+1) |H(C_m)| for m = 0..S."""
    growth: np.ndarray
    """(O, S-1) GR(m) for m = 2..S (NaN where |H(C_{m-1})| = 0)."""
    marginal: dict[str, np.ndarray]
    """measure label -> (O, S, S-1) MC_m(r) for system r (index into systems) and m = 1..S-1."""

    def growth_summary(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """m, mean GR over the orders where it is defined, std."""
        return _summary(self.growth, start=2)

    def marginal_summary(self, label: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """m, mean MC over systems and orders, std."""
        values = self.marginal[label]
        return _summary(values.reshape(-1, values.shape[-1]), start=1)


def _summary(values: np.ndarray, start: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    m = np.arange(start, start + values.shape[-1])
    defined = ~np.isnan(values)
    count = defined.sum(axis=0)
    filled = np.where(defined, values, 0.0)
    mean = np.divide(filled.sum(axis=0), count, out=np.full(len(m), np.nan), where=count > 0)
    spread = np.where(defined, (values - mean) ** 2, 0.0)
    std = np.sqrt(np.divide(spread.sum(axis=0), count, out=np.full(len(m), np.nan), where=count > 0))
    return m, mean, std


def _positions(order: np.ndarray) -> np.ndarray:
    position = np.empty(len(order), dtype=np.int64)
    position[order] = np.arange(len(order))
    return position


def growth_counts(matrix: LabelMatrix, orders: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """|H(C_m)| for m = 0..S per order, and GR(m) for m = 2..S."""
    n_s = len(matrix.systems)
    relevant = matrix.relevant_pairs
    found = np.zeros((len(orders), n_s + 1))
    for o, order in enumerate(orders):
        first, _ = matrix.first_two(_positions(order))
        found[o, 1:] = np.cumsum(np.bincount(first[relevant], minlength=n_s)[:n_s])
    previous, current = found[:, 1:-1], found[:, 2:]
    with np.errstate(divide="ignore", invalid="ignore"):
        growth = np.where(previous > 0, (current - previous) / previous, np.nan)
    return found, growth


class _Fast:
    """The vectorised marginal contribution: per-system arrays built once, per-order histograms; each measure is its
    registered object's, as the object provider computes it (:mod:`bridge.evaluation.scoring.providers`): its values
    on system r's top k under a sub-pool over its normaliser of the sub-pool's grades (counted per grade level)."""

    def __init__(self, matrix: LabelMatrix, measures: Sequence[Measure]) -> None:
        self.m, self.measures = matrix, list(measures)
        n_s, n_q, _ = matrix.elem_pair.shape
        self.n_s, self.n_q, self.n_l = n_s, n_q, len(matrix.levels)
        self.own = []
        for s in range(n_s):
            q, rank = np.nonzero(matrix.elem_pair[s] >= 0)
            pair = matrix.elem_pair[s, q, rank]
            level = matrix.pair_level[pair]
            total = np.zeros((self.n_l, n_q))
            np.add.at(total, (level, q), 1.0)
            found = matrix.elem_orig_gain[s].copy()  # r's top k with every pair it retrieved judged
            found[q, rank] = matrix.levels[level]
            touched, row = np.unique(q, return_inverse=True)  # the topics where r retrieved a pair
            self.own.append((q, rank, pair, level, total, found, touched, row))

    def order_histograms(self, first: np.ndarray, second: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """For one order: ``by_first[l, j, q]`` = pairs of grade l and topic q whose first position is < j
        (j = 0..S), and ``by_second[l, f, j, q]`` = those whose first position is f and second < j."""
        m, n_s, n_q, n_l = self.m, self.n_s, self.n_q, self.n_l
        counts = np.bincount((m.pair_level * n_s + first) * n_q + m.pair_query, minlength=n_l * n_s * n_q)
        by_first = np.zeros((n_l, n_s + 1, n_q), dtype=np.int64)
        by_first[:, 1:, :] = np.cumsum(counts.reshape(n_l, n_s, n_q), axis=1)
        index = ((m.pair_level * n_s + first) * (n_s + 1) + second) * n_q + m.pair_query
        counts = np.bincount(index, minlength=n_l * n_s * (n_s + 1) * n_q).reshape(n_l, n_s, n_s + 1, n_q)
        by_second = np.zeros((n_l, n_s, n_s + 2, n_q), dtype=np.int64)
        by_second[:, :, 1:, :] = np.cumsum(counts, axis=2)
        return by_first, by_second

    def _own_cumulative(self, t: np.ndarray, q: np.ndarray, n_m: int, keys: np.ndarray) -> np.ndarray:
        """(L, n_m, Q): per grade level, r's own pairs visible (t <= m) for m = 1..n_m."""
        index = (keys * (n_m + 2) + np.minimum(t, n_m + 1)) * self.n_q + q
        counts = np.bincount(index, minlength=self.n_l * (n_m + 2) * self.n_q)
        return np.cumsum(counts.reshape(self.n_l, n_m + 2, self.n_q), axis=1)[:, 1 : n_m + 1, :]

    def system_curves(
        self, r: int, p: int, first: np.ndarray, second: np.ndarray, by_first: np.ndarray, by_second: np.ndarray
    ) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
        """Perf of system r (at position p of the order) under D_{S_m} and D_{S_m + {r}}, m = 1..S-1.

        In the order without r, a pair first retrieved at position f < p enters the sub-pool at
        m = f + 1, one first retrieved at f > p at m = f, and one r retrieved first at m = its second
        position (never when r alone retrieved it).
        """
        n_m = self.n_s - 1
        ms = np.arange(1, n_m + 1)
        pool = (
            by_first[:, np.minimum(ms, p), :]
            + by_first[:, np.maximum(ms + 1, p + 1), :]
            - by_first[:, p + 1, :][:, None, :]
            + by_second[:, p, ms + 1, :]
            + self.m.orig_level_counts[:, None, :]
        )
        q, rank, pair, level, own_total, found, touched, row = self.own[r]
        f = first[pair]
        t = np.where(f == p, second[pair], f - (f > p) + 1)
        with_r = pool + (own_total[:, None, :] - self._own_cumulative(t, q, n_m, level))
        varying = np.repeat(self.m.elem_orig_gain[r][touched][None], n_m, axis=0)  # r's top k under D_{S_m} there
        varying[:, row, rank] = np.where(t[None, :] <= ms[:, None], self.m.levels[level], 0.0)
        return self._means(self.m.elem_orig_gain[r], pool, (touched, varying)), self._means(found, with_r)

    def _means(
        self, gains: np.ndarray, counts: np.ndarray, varying: tuple[np.ndarray, np.ndarray] | None = None
    ) -> dict[str, np.ndarray]:
        """Each measure's mean over topics per m, from r's top-k gains (Q x k; ``varying``: the topics where they
        change with m, and their gains there, n_m x topics x k) and the sub-pools' judged grades as counts per grade
        level (L x n_m x Q)."""
        m, out = self.m, {}
        judged = CountedGrades(m.levels, counts)
        for measure in self.measures:
            norm = judged.normaliser(measure, m.threshold)
            top = gains[..., : measure.k]
            values = np.array(np.broadcast_to(object_values(measure, top, norm, m.threshold), counts.shape[1:]))
            if varying is not None:
                topics, there = varying
                part = None if norm is None else norm[:, topics]
                values[:, topics] = object_values(measure, there[..., : measure.k], part, m.threshold)
            out[measure.label] = values.mean(axis=-1)  # contiguous rows: equal values, equal means
        return out


def marginal_contribution(
    matrix: LabelMatrix, orders: np.ndarray, measures: Sequence[Measure] | None = None
) -> dict[str, np.ndarray]:
    """MC_m(r) for every order, system r and m = 1..S-1, keyed ``Hit@k``, ``nDCG@k``, ``Recall@k``, ``MRR@k``
    (``measures``: any registered measures at cutoffs up to the matrix's depth instead)."""
    n_s = len(matrix.systems)
    measures = list(measures) if measures is not None else parse_measures(at(CURVE_MEASURES, matrix.depth))
    deeper = [m.label for m in measures if m.k > matrix.depth]
    if deeper:
        raise ValueError(f"the curves' pools are {matrix.depth} deep: {', '.join(deeper)} would read deeper")
    out = {m.label: np.zeros((len(orders), n_s, max(n_s - 1, 0))) for m in measures}
    if n_s >= 2:
        fast = _Fast(matrix, measures)
        for o, order in enumerate(orders):
            position = _positions(order)
            first, second = matrix.first_two(position)
            by_first, by_second = fast.order_histograms(first, second)
            for r in range(n_s):
                without_r, with_r = fast.system_curves(r, int(position[r]), first, second, by_first, by_second)
                for label in out:
                    out[label][o, r] = np.abs(with_r[label] - without_r[label])
    return out


def compute_curves(
    matrix: LabelMatrix, n_orders: int = DEFAULT_ORDERS, seed: int = 0, measures: Sequence[Measure] | None = None
) -> Curves:
    """Growth and marginal contribution over ``n_orders`` seeded orders (``measures``: as
    :func:`marginal_contribution`)."""
    orders = random_orders(len(matrix.systems), n_orders, seed)
    found, growth = growth_counts(matrix, orders)
    return Curves(matrix.systems, orders, found, growth, marginal_contribution(matrix, orders, measures))


# -- the straightforward computation (test oracle, benchmark baseline) ---------------------------


def subpool_qrels(
    runs: Mapping[str, Run],
    original: Qrels,
    augmented: Qrels,
    topics: Sequence[str],
    systems: Sequence[str],
    depth: int,
) -> Qrels:
    """D_P: original qrels plus the augmented label of every unjudged pair in the top-depth of ``systems``."""
    qrels: Qrels = {qid: dict(original.get(qid, {})) for qid in topics}
    for system in systems:
        for qid in topics:
            labels = augmented.get(qid, {})
            for docid in top_k(runs[system].get(qid, {}), depth):
                if docid not in original.get(qid, {}) and docid in labels:
                    qrels[qid][docid] = labels[docid]
    return qrels


def growth_counts_reference(
    runs: Mapping[str, Run],
    original: Qrels,
    augmented: Qrels,
    topics: Sequence[str],
    orders: np.ndarray,
    depth: int = 10,
    threshold: int = 1,
) -> np.ndarray:
    """|H(C_m)| for m = 0..S per order, with Python sets."""
    systems = sorted(runs)
    found = np.zeros((len(orders), len(systems) + 1))
    for o, order in enumerate(orders):
        holes: set[tuple[str, str]] = set()
        for m, s in enumerate(order, start=1):
            for qid in topics:
                for docid in top_k(runs[systems[s]].get(qid, {}), depth):
                    if docid not in original.get(qid, {}) and augmented.get(qid, {}).get(docid, 0) >= threshold:
                        holes.add((qid, docid))
            found[o, m] = len(holes)
    return found


def marginal_contribution_reference(
    runs: Mapping[str, Run],
    original: Qrels,
    augmented: Qrels,
    topics: Sequence[str],
    orders: np.ndarray,
    depth: int = 10,
    threshold: int = 1,
    only_systems: Sequence[int] | None = None,
) -> dict[str, np.ndarray]:
    """MC_m(r) by building each sub-pool's qrels and scoring r with ir_measures (NaN for skipped systems)."""
    from bridge.evaluation.scoring.providers import resolve_measures
    from bridge.evaluation.scoring.trec_measures import per_query_scores

    systems = sorted(runs)
    n_s = len(systems)
    specs = resolve_measures([f"{name}@{depth}" for name in CURVE_MEASURES], threshold)
    out = {s.label: np.full((len(orders), n_s, n_s - 1), np.nan) for s in specs}
    for o, order in enumerate(orders):
        for r in only_systems if only_systems is not None else range(n_s):
            others = [systems[s] for s in order if s != r]
            for m in range(1, n_s):
                pool = subpool_qrels(runs, original, augmented, topics, others[:m], depth)
                with_r = subpool_qrels(runs, original, augmented, topics, [*others[:m], systems[r]], depth)
                before = per_query_scores(runs[systems[r]], pool, topics, specs, threshold)
                after = per_query_scores(runs[systems[r]], with_r, topics, specs, threshold)
                for spec in specs:
                    out[spec.label][o, r, m - 1] = abs(after[spec.label].mean() - before[spec.label].mean())
    return out


def write_curves(curves: Curves, path: str | Path) -> None:
    """curves.csv: ``curve, measure, m, mean, std, orders`` (holes_found, growth_rate, marginal_contribution)."""
    n_orders = len(curves.orders)
    with atomic_write(path) as handle:
        writer = csv.writer(handle)
        writer.writerow(["curve", "measure", "m", "mean", "std", "orders"])
        m, mean, std = _summary(curves.holes_found[:, 1:], start=1)
        for row in zip(m, mean, std, strict=True):
            writer.writerow(["holes_found", "holes", int(row[0]), f"{row[1]:.4f}", f"{row[2]:.4f}", n_orders])
        m, mean, std = curves.growth_summary()
        for row in zip(m, mean, std, strict=True):
            writer.writerow(["growth_rate", "holes", int(row[0]), f"{row[1]:.6f}", f"{row[2]:.6f}", n_orders])
        for label in curves.marginal:
            m, mean, std = curves.marginal_summary(label)
            for row in zip(m, mean, std, strict=True):
                cells = [int(row[0]), f"{row[1]:.6f}", f"{row[2]:.6f}", n_orders]
                writer.writerow(["marginal_contribution", label, *cells])
