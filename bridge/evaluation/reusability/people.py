"""Which removed pairs do simulated people answer? The orders of the reusability test's people curve.

Simulated people answer a share K of the removed pairs from their hidden human labels; the estimate takes their
answers as fixed and, for those drawn at random, as a sample of the holes its calibrations learn from. Two
orders, as ``bridge review`` could ask:

* ``random``: every pair drawn at random (the calibration on holes: K% of the holes answered by people);
* ``value``: the review queue's order (:func:`bridge.label.value.ask_order`): most valuable first (value: the
  expected number of open comparisons of the leaderboard of every system, with all removed pairs open, that the
  pair's label would decide), a quarter of the slots drawn at random.

The orders are kept in a JSON file beside the labels, keyed by everything they depend on, so a warm re-run reads
them.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Mapping, Sequence
from pathlib import Path

from bridge.core.fsio import write_json_atomic
from bridge.core.label_records import LabelRecord
from bridge.core.measure_sets import Measure
from bridge.core.trec import Qrels, Run
from bridge.estimate.calibration import RANDOM_SAMPLING
from bridge.estimate.hole_evidence import HoleEvidence, build_hole_model
from bridge.estimate.leaderboard import EstimateConfig, Leaderboard
from bridge.evaluation.reusability.estimated_fill import RemovedLabels
from bridge.evaluation.reusability.leave_out import LeaveOutTest, Pair, holey_qrels, removed_union
from bridge.label.value import ask_order

ORDERS = ("random", "value")
DEFAULT_SHARES = (0.0, 0.02, 0.05, 0.10, 0.20)
ORDERS_VERSION = 2
"""Part of the orders' key: bumped when how an order is chosen changes, so a kept order is not reused across it."""
Order = list[tuple[Pair, str]]


def people_orders(
    test: LeaveOutTest, labels: RemovedLabels, seed: int = 0, config: EstimateConfig | None = None
) -> dict[str, Order]:
    """order name -> every removed pair with how it was chosen (``random`` or ``value``), first asked first; the
    value order from the leaderboard of every system with all removed pairs open."""
    pairs = sorted(removed_union(test.experiments))
    shuffled = list(pairs)
    random.Random(seed).shuffle(shuffled)
    records = labels.records
    known = [records[p] for p in pairs if p in records]
    evidence = HoleEvidence(
        holey_qrels(test.qrels, frozenset(pairs)),
        known,
        pairs,
        test.topics,
        test.threshold,
        labels.calibrations,
        labels.gate,
    )
    model = build_hole_model(evidence)
    board = Leaderboard(test.runs, model, test.topics, test.measures, config or EstimateConfig(seed=seed))
    return {"random": [(p, RANDOM_SAMPLING) for p in shuffled], "value": ask_order(board.values(pairs), seed=seed)}


def answered(order: Order, share: float, qrels: Qrels, threshold: int) -> dict[Pair, tuple[int, str]]:
    """The first ``share`` of ``order`` answered from the hidden labels: pair -> (answer, how it was chosen)."""
    asked = order[: round(share * len(order))]
    return {(q, d): (int(qrels[q][d] >= threshold), how) for (q, d), how in asked}


def orders_key(
    runs: Mapping[str, Run], holey: Qrels, records: Mapping[Pair, LabelRecord], measures: Sequence[Measure], seed: int
) -> str:
    """A digest of everything the orders depend on."""
    h = hashlib.sha256()
    for name in sorted(runs):
        h.update(name.encode())
        for qid in sorted(runs[name]):
            h.update(json.dumps(sorted(runs[name][qid].items())).encode())
    h.update(json.dumps({q: sorted(d.items()) for q, d in sorted(holey.items())}).encode())
    h.update(json.dumps(sorted([list(k), r.label, r.p_yes] for k, r in records.items())).encode())
    h.update(json.dumps([m.label for m in measures] + [seed, ORDERS_VERSION]).encode())
    return h.hexdigest()[:16]


def cached_orders(path: Path, key: str, compute) -> dict[str, Order]:
    """The orders from ``path`` when it holds ``key``'s, else computed and written there."""
    if path.exists():
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            if data.get("key") == key:
                return {name: [((q, d), how) for q, d, how in order] for name, order in data["orders"].items()}
        except (json.JSONDecodeError, KeyError, TypeError, ValueError):
            pass  # a damaged cache is recomputed
    orders = compute()
    write_json_atomic(
        path, {"key": key, "orders": {name: [[q, d, how] for (q, d), how in order] for name, order in orders.items()}}
    )
    return orders
