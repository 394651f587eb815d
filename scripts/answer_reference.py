"""The maintainers' reference for nq's answer-bearing pool pairs: sample, reading sheets, agreement.

On nq the evidence gate decides every pool pair that holds none of the question's answers; the pairs
that hold one (3.4% of the default pool) carry every possible new relevant label, and nobody judged
them. This script draws a seeded random sample of them over all questions, writes reading sheets (a
first reading of every pair, a second one of a subset made without the first's labels), and reports
Cohen's kappa between the two readings. The labels are a maintainers' reading under the written
criterion (bench/data/nq-answer-reference/README.md), not a crowd's.

    python scripts/answer_reference.py sample --size 300 --seed 0      # needs qrels/nq/pool.tsv (full nq)
    python scripts/answer_reference.py extend --kind "listed topic" --size 160 --seed 1   # more of one kind
    python scripts/answer_reference.py design                           # kinds and inclusion probabilities
    python scripts/answer_reference.py sheet                            # the first reader's sheet (no labels)
    python scripts/answer_reference.py sheet --second 80                # the second reader's sheet
    python scripts/answer_reference.py agreement                        # kappa between the readings
    python scripts/answer_reference.py swaps --size 40                  # answer-swap negatives to read
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bridge.core.fsio import atomic_write, write_json_atomic  # noqa: E402
from bridge.datasets import load_dataset  # noqa: E402
from bridge.datasets.kinds import pair_kind  # noqa: E402
from bridge.judging.fitting.metrics import cohen_kappa  # noqa: E402
from bridge.judging.free.evidence import matched_answers  # noqa: E402
from bridge.judging.reference_labels import DESIGN_FILE, read_reference_design  # noqa: E402
from bridge.pool.pooling import PoolEntry, read_pool  # noqa: E402

FOLDER = ROOT / "bench" / "data" / "nq-answer-reference"


def answer_bearing(ds, pool: Path) -> list[PoolEntry]:
    """The pool's pairs whose passage holds one of the question's answers (what the reference samples)."""
    queries = {q.qid: q for q in ds.queries}
    bearing = []
    for entry in read_pool(pool):
        doc = ds.corpus.get(entry.docid)
        if doc is not None and matched_answers(queries[entry.qid].answers, doc.contents()):
            bearing.append(entry)
    return bearing


def write_pairs(path: Path, entries: list[PoolEntry]) -> None:
    with atomic_write(path) as handle:  # ids only: the texts stay in the data folder (sheet rebuilds them)
        handle.write("qid\tdocid\tsystems\tmin_rank\n")
        for e in entries:
            handle.write(f"{e.qid}\t{e.docid}\t{','.join(e.systems)}\t{e.min_rank}\n")


def write_design(ds, bearing: list[PoolEntry], sampled: list[PoolEntry]) -> dict[str, tuple[int, int]]:
    """design.tsv: each reference pair's kind and inclusion probability (its kind's sampled pairs over the pool's
    answer-bearing pairs of that kind: within a kind the reference is a simple random sample)."""
    in_pool: dict[str, int] = {}
    for e in bearing:
        kind = pair_kind(ds, e.qid)
        in_pool[kind] = in_pool.get(kind, 0) + 1
    drawn: dict[str, int] = {}
    for e in sampled:
        kind = pair_kind(ds, e.qid)
        drawn[kind] = drawn.get(kind, 0) + 1
    pool_pairs = {(e.qid, e.docid) for e in bearing}
    missing = [(e.qid, e.docid) for e in sampled if (e.qid, e.docid) not in pool_pairs]
    if missing:
        raise SystemExit(f"{len(missing)} reference pairs are not answer-bearing pairs of this pool, e.g. {missing[0]}")
    with atomic_write(FOLDER / DESIGN_FILE) as handle:
        handle.write("qid\tdocid\tkind\tinclusion\n")
        for e in sampled:
            kind = pair_kind(ds, e.qid)
            handle.write(f"{e.qid}\t{e.docid}\t{kind}\t{drawn[kind] / in_pool[kind]:.6g}\n")
    return {kind: (drawn.get(kind, 0), n) for kind, n in in_pool.items()}


def cmd_design(args: argparse.Namespace) -> int:
    ds = load_dataset("nq", args.data_dir)
    counts = write_design(ds, answer_bearing(ds, args.pool), read_pool(FOLDER / "pairs.tsv"))
    for kind, (drawn, total) in sorted(counts.items()):
        print(f"{kind}: {drawn} of {total} answer-bearing pool pairs (inclusion {drawn / total:.4f})")
    return 0


def cmd_extend(args: argparse.Namespace) -> int:
    """Draw ``--size`` more pairs of one kind at random among that kind's answer-bearing pool pairs the reference
    does not hold yet, append them to pairs.tsv, and rewrite design.tsv (within the kind the reference stays a
    simple random sample)."""
    ds = load_dataset("nq", args.data_dir)
    bearing = answer_bearing(ds, args.pool)
    sampled = read_pool(FOLDER / "pairs.tsv")
    have = {(e.qid, e.docid) for e in sampled}
    left = [e for e in bearing if pair_kind(ds, e.qid) == args.kind and (e.qid, e.docid) not in have]
    if len(left) < args.size:
        raise SystemExit(f"only {len(left)} pairs of kind {args.kind!r} are left to draw")
    rng = random.Random(args.seed)
    chosen = [left[i] for i in sorted(rng.sample(range(len(left)), args.size))]
    write_pairs(FOLDER / "pairs.tsv", [*sampled, *chosen])
    counts = write_design(ds, bearing, [*sampled, *chosen])
    total = len(sampled) + len(chosen)
    print(f"drew {len(chosen)} pairs of kind {args.kind!r} (seed {args.seed}); pairs.tsv now holds {total}")
    for kind, (drawn, total) in sorted(counts.items()):
        print(f"  {kind}: {drawn} of {total} answer-bearing pool pairs")
    return 0


def cmd_sample(args: argparse.Namespace) -> int:
    ds = load_dataset("nq", args.data_dir)
    bearing = answer_bearing(ds, args.pool)
    rng = random.Random(args.seed)
    chosen = sorted(rng.sample(range(len(bearing)), min(args.size, len(bearing))))
    out = FOLDER / "pairs.tsv"
    write_pairs(out, [bearing[i] for i in chosen])
    print(
        f"{len(bearing)} answer-bearing pairs over {len({e.qid for e in bearing})} questions in {args.pool}; "
        f"sampled {len(chosen)} (seed {args.seed}) -> {out}"
    )
    return 0


def read_pairs(path: Path) -> list[tuple[str, str]]:
    lines = path.read_text(encoding="utf-8").splitlines()
    return [tuple(line.split("\t")[:2]) for line in lines[1:] if line.strip()]  # type: ignore[misc]


def cmd_sheet(args: argparse.Namespace) -> int:
    """A reading sheet without labels, texts from the data folder: every pair of ``--pairs`` (first reading),
    or a seeded subset (second reading)."""
    ds = load_dataset("nq", args.data_dir)
    pairs = read_pairs(Path(args.pairs))[args.start :]
    if args.second:
        pairs = [pairs[i] for i in sorted(random.Random(args.seed + 1).sample(range(len(pairs)), args.second))]
    out = Path(args.out) if args.out else FOLDER / ("sheet-second.md" if args.second else "sheet-first.md")
    with atomic_write(out) as handle:
        for n, (qid, docid) in enumerate(pairs, 1):
            q, doc = ds.query(qid), ds.corpus.get(docid)
            matched = matched_answers(q.answers, doc.contents())
            handle.write(
                f"## {n}. qid {qid} / {docid}\n\nQuestion: {q.text}\n"
                f"Answers: {' | '.join(q.answers)}\nMatched in the passage: {' | '.join(matched)}\n"
                f"Passage ({doc.title}): {doc.text}\n\n"
            )
    print(f"{len(pairs)} pairs -> {out}")
    return 0


def cmd_swaps(args: argparse.Namespace) -> int:
    """The answer-swap negatives the audit would draw on the whole dataset (pool pairs avoided), as a sheet."""
    from bridge.judging.free.known_pairs import draw_audit_pairs

    ds = load_dataset("nq", args.data_dir)
    pool = {(e.qid, e.docid) for e in read_pool(args.pool)}
    drawn = draw_audit_pairs(ds, pool, 3 * args.size, seed=args.seed, swap_share=1.0)
    pairs = [(p.qid, p.docid) for p in drawn if p.source == "answer-swap"][: args.size]
    out = FOLDER / "swap-pairs.tsv"
    with atomic_write(out) as handle:
        handle.write("qid\tdocid\n" + "".join(f"{q}\t{d}\n" for q, d in pairs))
    print(f"{len(pairs)} answer-swap pairs -> {out}; read them with: sheet --pairs {out} --out {FOLDER}/sheet-swaps.md")
    return 0


def read_labels(path: Path) -> dict[tuple[str, str], int]:
    """``qid<TAB>docid<TAB>label<TAB>note`` lines (label 1 or 0); '#' lines are comments."""
    out: dict[tuple[str, str], int] = {}
    for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        fields = line.split("\t")
        if len(fields) < 3 or fields[2] not in ("0", "1"):
            raise SystemExit(f"{path}:{lineno}: expected qid<TAB>docid<TAB>0|1[<TAB>note], got {line!r}")
        out[(fields[0], fields[1])] = int(fields[2])
    return out


def agreement_of_readings(first: dict, second: dict, keys: list) -> dict:
    both = sorted(set(keys) & set(first) & set(second))
    tp = sum(1 for k in both if first[k] and second[k])
    tn = sum(1 for k in both if not first[k] and not second[k])
    fp = sum(1 for k in both if not first[k] and second[k])
    fn = sum(1 for k in both if first[k] and not second[k])
    return {
        "pairs": len(both),
        "agree": tp + tn,
        "both_relevant": tp,
        "both_not": tn,
        "first_only": fn,
        "second_only": fp,
        "cohen_kappa": cohen_kappa(tp, fn, fp, tn),
    }


def cmd_agreement(args: argparse.Namespace) -> int:
    """Cohen's kappa between the readings: on every pair both read, and on each kind of hole (design.tsv)."""
    first, second = read_labels(FOLDER / "labels-first.tsv"), read_labels(FOLDER / "labels-second.tsv")
    result = agreement_of_readings(first, second, list(first))
    result["first_relevant_share"] = sum(first.values()) / len(first) if first else None
    design = read_reference_design(FOLDER / "labels-first.tsv")
    if design:
        kinds: dict[str, list] = {}
        for pair, inclusion in design.items():
            kinds.setdefault(inclusion.kind, []).append(pair)
        result["by_kind"] = {kind: agreement_of_readings(first, second, keys) for kind, keys in sorted(kinds.items())}
    write_json_atomic(FOLDER / "agreement.json", result)
    print(json.dumps(result, indent=2))
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("sample", help="draw the seeded sample of answer-bearing unjudged pool pairs")
    p.add_argument("--data-dir", default="../shared/data")
    p.add_argument("--pool", type=Path, default=ROOT / "qrels" / "nq" / "pool.tsv")
    p.add_argument("--size", type=int, default=300)
    p.add_argument("--seed", type=int, default=0)
    p.set_defaults(func=cmd_sample)
    p = sub.add_parser("extend", help="draw more pairs of one kind (appended to pairs.tsv; design.tsv rewritten)")
    p.add_argument("--data-dir", default="../shared/data")
    p.add_argument("--pool", type=Path, default=ROOT / "qrels" / "nq" / "pool.tsv")
    p.add_argument("--kind", required=True, help="a kind of bridge.datasets.kinds, e.g. 'listed topic'")
    p.add_argument("--size", type=int, required=True)
    p.add_argument("--seed", type=int, default=1)
    p.set_defaults(func=cmd_extend)
    p = sub.add_parser("design", help="rewrite design.tsv (each pair's kind and inclusion probability)")
    p.add_argument("--data-dir", default="../shared/data")
    p.add_argument("--pool", type=Path, default=ROOT / "qrels" / "nq" / "pool.tsv")
    p.set_defaults(func=cmd_design)
    p = sub.add_parser("sheet", help="a reading sheet without labels (texts from the data folder)")
    p.add_argument("--data-dir", default="../shared/data")
    p.add_argument("--pairs", default=str(FOLDER / "pairs.tsv"), help="qid<TAB>docid lines (first line a header)")
    p.add_argument("--second", type=int, default=0, help="a seeded subset of this size (the second reading)")
    p.add_argument("--start", type=int, default=0, help="skip the first START pairs (read an extension alone)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default=None)
    p.set_defaults(func=cmd_sheet)
    p = sub.add_parser("swaps", help="the answer-swap negatives the audit draws on the whole dataset")
    p.add_argument("--data-dir", default="../shared/data")
    p.add_argument("--pool", type=Path, default=ROOT / "qrels" / "nq" / "pool.tsv")
    p.add_argument("--size", type=int, default=40)
    p.add_argument("--seed", type=int, default=0)
    p.set_defaults(func=cmd_swaps)
    p = sub.add_parser("agreement", help="Cohen's kappa between the first and the second reading")
    p.set_defaults(func=cmd_agreement)
    args = parser.parse_args()
    return args.func(args)


if __name__ == "__main__":
    raise SystemExit(main())
