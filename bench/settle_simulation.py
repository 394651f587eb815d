"""Which order of judgments settles a leaderboard soonest: value, random, or uncertainty (issue 25).

Simulated people judge the open pairs ("holes") of a leaderboard one at a time in a given order; after each
judgment the bounds of every system's score shrink (bridge.settle) and we count the judgments until every
comparison of adjacent systems is settled (or nothing is left to judge). Orders:

* value:       greedily the pair whose label can change the most unsettled comparisons, values recomputed as
               comparisons settle (what ``bridge label`` and ``bridge review`` do);
* random:      a seeded shuffle (median over ``--random-seeds`` shuffles);
* uncertainty: the pairs whose P(relevant) is nearest 0.5 first (active-learning style).

dl19: a seeded share (``--hole-share``) of the human-judged pairs in the systems' top-k are hidden; topic
adapters trained without them give each hole its P (the default judge of deep-judged data); the simulated
people answer with the hidden human label. nq: the reference pairs (bench/data/nq-answer-reference: the
maintainers' reading, not a crowd's) are the holes and their reading answers; the answer-context judge without
the LLM (answer-lexical), cross-fitted over two halves of the reference's questions, gives P; every other pool
pair of the whole nq pool is decided (answer-free pairs by the gate, other answer-bearing pairs by the judge's
label).

    python bench/settle_simulation.py dl19 --runs ../after-ws/runs/dl19 --out bench/results/settle-dl19.json
    python bench/settle_simulation.py nq --runs ../nq-full/runs --pool ../nq-full/qrels/pool.tsv \\
        --out bench/results/settle-nq.json
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bridge.datasets import load_dataset  # noqa: E402
from bridge.fsio import write_json_atomic  # noqa: E402
from bridge.settle import LabelState, Leaderboard, Pair, SettleConfig, parse_measures, settling_judgments  # noqa: E402
from bridge.trec import Qrels, read_runs, top_k  # noqa: E402

REFERENCE = ROOT / "bench/data/nq-answer-reference/labels-first.tsv"


SHARES = (0.5, 0.75, 0.9, 1.0)
"""Milestones: the judgments after which this share of the initially unsettled comparisons is settled."""


def settle_curve(board: Leaderboard, order: Sequence[Pair], truth: Mapping[Pair, int]) -> list[int]:
    """Unsettled adjacent comparisons before any judgment and after each judgment of ``order`` (stops once none is
    left)."""
    curve = [len(board.unsettled())]
    for pair in order:
        if not curve[-1]:
            break
        board.decide(pair, truth[pair])
        curve.append(len(board.unsettled()))
    return curve


def milestones(curve: Sequence[int]) -> dict[str, int | None]:
    """Share of the initially unsettled comparisons -> judgments until that share is settled (None: never)."""
    start = curve[0]
    out: dict[str, int | None] = {}
    for share in SHARES:
        target = start - share * start
        out[f"{share:.0%}"] = next((n for n, left in enumerate(curve) if left <= target + 1e-9), None)
    return out


def run_orders(
    board: Leaderboard, truth: Mapping[Pair, int], random_seeds: int, seed: int
) -> dict[str, dict[str, object]]:
    state = board.bounds.state
    pairs = sorted(state.open)
    out: dict[str, dict[str, object]] = {}
    start = time.perf_counter()
    chosen, _ = settling_judgments(board.fork(), answer=lambda p: truth[p])
    seconds = time.perf_counter() - start
    curve = settle_curve(board.fork(), [p for p, _ in chosen], truth)
    out["value"] = {"milestones": milestones(curve), "greedy_seconds": seconds, "curve": curve}
    runs = []
    for s in range(random_seeds):
        order = list(pairs)
        random.Random(seed + s).shuffle(order)
        runs.append(milestones(settle_curve(board.fork(), order, truth)))
    median = {}
    for share in runs[0]:
        values = [r[share] for r in runs]
        median[share] = statistics.median(values) if None not in values else None
    out["random"] = {"milestones": median, "per_seed": runs}
    nearest = sorted(pairs, key=lambda p: (abs(state.open[p] - 0.5), p))
    out["uncertainty"] = {"milestones": milestones(settle_curve(board.fork(), nearest, truth))}
    return out


def summary(board: Leaderboard, holes: int) -> dict[str, object]:
    return {
        "holes": holes,
        "comparisons": len(board.comparisons),
        "unsettled_before": len(board.unsettled()),
        "value_above_0": sum(1 for v in board.values().values() if v > 0),
    }


# -- dl19 ----------------------------------------------------------------------------------------------------


def dl19_setting(args: argparse.Namespace) -> tuple[Leaderboard, dict[Pair, int], dict[str, object]]:
    from bridge.judging.adapter import TopicAdapterJudge
    from bridge.judging.base import cases_for
    from bridge.judging.reference import QrelsJudge
    from bridge.pool import PoolEntry

    ds = load_dataset("dl19", args.data_dir)
    runs = read_runs(args.runs)
    measures = parse_measures(args.measures)
    depth = max(m.k for m in measures)
    threshold = ds.relevance_threshold
    in_top = sorted(
        {
            (q, d)
            for run in runs.values()
            for q in ds.qids
            for d in top_k(run.get(q, {}), depth)
            if d in ds.qrels.get(q, {})
        }
    )
    rng = random.Random(args.seed)
    holes = sorted(rng.sample(in_top, round(args.hole_share * len(in_top))))
    truth = {(q, d): int(ds.qrels[q][d] >= threshold) for q, d in holes}
    adapter = TopicAdapterJudge(ds, QrelsJudge({}), cache_dir=args.cache_dir, progress=not args.quiet)
    adapter.hold_out(holes)  # the adapters never learn from the hidden labels
    p: dict[Pair, float] = {}
    adapter.judge(
        cases_for(ds, [PoolEntry(q, d, (), 0) for q, d in holes]), lambda r: p.update({(r.qid, r.docid): r.p_yes})
    )
    known = [x for x in p.values() if x is not None]
    prior = sum(known) / len(known) if known else 0.5
    fixed: Qrels = {q: {d: g for d, g in docs.items() if (q, d) not in truth} for q, docs in ds.qrels.items()}
    state = LabelState(fixed, {pair: (p.get(pair) if p.get(pair) is not None else prior) for pair in holes}, threshold)
    topics = [q for q in ds.qids if q in ds.qrels]
    board = Leaderboard(runs, state, topics, measures, SettleConfig(args.resamples, args.simulations, seed=args.seed))
    facts = {
        "topics": len(topics),
        "systems": len(runs),
        "judged_pairs_in_top": len(in_top),
        "hole_share": args.hole_share,
        "holes_relevant": sum(truth.values()),
        "adapter_p": len(known),
    }
    return board, truth, facts


# -- nq ------------------------------------------------------------------------------------------------------


def nq_setting(args: argparse.Namespace) -> tuple[Leaderboard, dict[Pair, int], dict[str, object]]:
    from bridge.judging.answer_context import AnswerContextJudge
    from bridge.judging.base import cases_for
    from bridge.judging.evidence import matched_answers
    from bridge.judging.reference_labels import question_folds, read_reference
    from bridge.pool import PoolEntry, read_pool

    ds = load_dataset("nq", args.data_dir)
    runs = read_runs(args.runs)
    measures = parse_measures(args.measures)
    threshold = ds.relevance_threshold
    topics = [q for q in ds.qids if q in ds.qrels]
    topic_set = set(topics)
    entries = [e for e in read_pool(args.pool) if e.docid not in ds.qrels.get(e.qid, {})]
    cases = cases_for(ds, entries)
    bearing = [replace(c, evidence=m) for c in cases if (m := matched_answers(c.answers, c.chunk))]
    # the holes: reference pairs of judged topics that the qrels do not judge and the corpus holds
    read = read_reference(Path(args.reference))
    usable = {
        (c.qid, c.docid): c
        for c in cases_for(ds, [PoolEntry(p.qid, p.docid, (), 0) for p in read])
        if c.qid in topic_set and c.docid not in ds.qrels.get(c.qid, {})
    }
    reference = [p for p in read if (p.qid, p.docid) in usable]
    truth = {(p.qid, p.docid): int(p.relevant) for p in reference}
    folds = question_folds(reference, 2, args.seed)
    ref_views = [
        replace(c, evidence=matched_answers(c.answers, c.chunk)) for c in (usable[(p.qid, p.docid)] for p in reference)
    ]
    p: dict[Pair, float] = {}
    label: dict[Pair, int] = {}
    for k in (0, 1):  # cross-fitted: a reference pair's P comes from the half that does not hold its question
        judge = AnswerContextJudge(None)
        fit = [i for i, f in enumerate(folds) if f != k]
        judge.fit([ref_views[i] for i in fit], [truth[(reference[i].qid, reference[i].docid)] for i in fit], "ref")
        scored = [ref_views[i] for i, f in enumerate(folds) if f == k]
        probabilities, _ = judge.probabilities(scored)
        p.update({(c.qid, c.docid): float(x) for c, x in zip(scored, probabilities, strict=True)})
    full = AnswerContextJudge(None)
    full.fit(ref_views, [truth[(c.qid, c.docid)] for c in ref_views], "ref")
    others = [c for c in bearing if (c.qid, c.docid) not in truth]
    if others:
        probabilities, _ = full.probabilities(others)
        cut = full.model.threshold if full.model is not None else 0.5
        label = {(c.qid, c.docid): int(x >= cut) for c, x in zip(others, probabilities, strict=True)}
    fixed: Qrels = {q: dict(docs) for q, docs in ds.qrels.items()}
    for e in entries:
        pair = (e.qid, e.docid)
        if pair not in truth:
            fixed.setdefault(e.qid, {})[e.docid] = threshold if label.get(pair, 0) else 0
    state = LabelState(fixed, {pair: p[pair] for pair in truth}, threshold)
    board = Leaderboard(runs, state, topics, measures, SettleConfig(args.resamples, args.simulations, seed=args.seed))
    facts = {
        "topics": len(topics),
        "systems": len(runs),
        "pool_pairs": len(entries),
        "answer_bearing": len(bearing),
        "holes_relevant": sum(truth.values()),
        "decided_by_judge_label": len(label),
    }
    return board, truth, facts


SETTINGS: dict[str, Callable[[argparse.Namespace], tuple[Leaderboard, dict[Pair, int], dict[str, object]]]] = {
    "dl19": dl19_setting,
    "nq": nq_setting,
}


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("dataset", choices=sorted(SETTINGS))
    p.add_argument("--runs", type=Path, required=True, help="folder of the systems' .run files")
    p.add_argument("--pool", type=Path, help="nq: the pool.tsv of those runs")
    p.add_argument("--reference", type=Path, default=REFERENCE, help="nq: the reference labels")
    p.add_argument("--data-dir", type=Path, default=ROOT.parent / "shared" / "data")
    p.add_argument("--cache-dir", type=Path, default=ROOT / "cache")
    p.add_argument("--measures", default="Hit@10,nDCG@10,Recall@10")
    p.add_argument("--hole-share", type=float, default=0.3, help="dl19: share of the judged top-k pairs hidden")
    p.add_argument("--random-seeds", type=int, default=5)
    p.add_argument("--resamples", type=int, default=1000)
    p.add_argument("--simulations", type=int, default=200)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--quiet", "-q", action="store_true")
    args = p.parse_args(argv)
    if args.dataset == "nq" and args.pool is None:
        p.error("nq needs --pool")
    start = time.perf_counter()
    board, truth, facts = SETTINGS[args.dataset](args)
    result = {
        "dataset": args.dataset,
        "command": " ".join(["python bench/settle_simulation.py", *(argv if argv is not None else sys.argv[1:])]),
        "measures": args.measures,
        **facts,
        **summary(board, len(truth)),
        "orders": run_orders(board, truth, args.random_seeds, args.seed),
        "seconds": time.perf_counter() - start,
    }
    write_json_atomic(args.out, result)
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
