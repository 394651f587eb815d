"""Which removed pairs should people judge? The orders of the reusability test's people curve.

Simulated people answer a share K of the removed pairs from their hidden human labels; the judge fills
the rest. The share is chosen in one of three orders:

* ``value``: the leaderboard-settling order of :mod:`bridge.settle` (what ``bridge label`` and ``bridge
  review`` ask first): greedily the pair whose label can change the most unsettled comparisons of
  adjacent systems on the leaderboard of every system with all removed pairs open (their P from the
  judge), the people's answers coming in as they go; once nothing is unsettled, the rest by uncertainty;
* ``uncertainty``: P(relevant) nearest 0.5 first (active-learning style);
* ``random``: a seeded shuffle.

The value order asks the settle machinery once per run (seconds to a minute on 40 systems); the orders
are kept in a JSON file beside the labels, keyed by everything they depend on, so a warm re-run reads them.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Mapping, Sequence
from pathlib import Path

from bridge.fsio import write_json_atomic
from bridge.settle import LabelState, Leaderboard, Measure, SettleConfig, settling_judgments
from bridge.trec import Qrels, Run
from eval.reusability import Fill, Pair

ORDERS = ("value", "uncertainty", "random")
DEFAULT_SHARES = (0.0, 0.02, 0.05, 0.10, 0.20)


def judge_p(judge: Fill, pairs: Sequence[Pair]) -> dict[Pair, float]:
    """Each pair's P(relevant) under the judge: its P, else its label, else the mean of the others."""
    known = {p: judge.p.get(p, judge.labels.get(p)) for p in pairs}
    given = [float(v) for v in known.values() if v is not None]
    prior = sum(given) / len(given) if given else 0.5
    return {p: float(v) if v is not None else prior for p, v in known.items()}


def people_orders(
    runs: Mapping[str, Run],
    holey: Qrels,
    topics: Sequence[str],
    pairs: Sequence[Pair],
    judge: Fill,
    qrels: Qrels,
    measures: Sequence[Measure],
    threshold: int,
    seed: int = 0,
    config: SettleConfig | None = None,
) -> dict[str, list[Pair]]:
    """order name -> every removed pair (``pairs``: judged in ``qrels``, missing from ``holey``), first asked first."""
    pairs = sorted(pairs)
    p = judge_p(judge, pairs)
    truth = {(q, d): int(qrels[q][d] >= threshold) for q, d in pairs}
    uncertainty = sorted(pairs, key=lambda x: (abs(p[x] - 0.5), x))
    state = LabelState({q: dict(docs) for q, docs in holey.items()}, dict(p), threshold)
    board = Leaderboard(
        runs, state, topics, measures, config or SettleConfig(resamples=500, simulations=100, seed=seed)
    )
    chosen, _ = settling_judgments(board, answer=lambda x: truth[x])
    value = [x for x, _ in chosen]
    asked = set(value)
    shuffled = list(pairs)
    random.Random(seed).shuffle(shuffled)
    return {"value": value + [x for x in uncertainty if x not in asked], "uncertainty": uncertainty, "random": shuffled}


def orders_key(runs: Mapping[str, Run], holey: Qrels, judge: Fill, measures: Sequence[Measure], seed: int) -> str:
    """A digest of everything the orders depend on."""
    h = hashlib.sha256()
    for name in sorted(runs):
        h.update(name.encode())
        for qid in sorted(runs[name]):
            h.update(json.dumps(sorted(runs[name][qid].items())).encode())
    h.update(json.dumps({q: sorted(d.items()) for q, d in sorted(holey.items())}).encode())
    h.update(json.dumps(sorted([list(k), v] for k, v in judge.labels.items())).encode())
    h.update(json.dumps(sorted([list(k), v] for k, v in judge.p.items())).encode())
    h.update(json.dumps([m.label for m in measures] + [seed]).encode())
    return h.hexdigest()[:16]


def cached_orders(path: Path, key: str, compute) -> dict[str, list[Pair]]:
    """The orders from ``path`` when it holds ``key``'s, else computed and written there."""
    if path.exists():
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            if data.get("key") == key:
                return {name: [tuple(p) for p in order] for name, order in data["orders"].items()}
        except (json.JSONDecodeError, KeyError, TypeError):
            pass  # a damaged cache is recomputed
    orders = compute()
    write_json_atomic(path, {"key": key, "orders": {name: [list(p) for p in order] for name, order in orders.items()}})
    return orders
