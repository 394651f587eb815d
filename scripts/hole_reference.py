"""A maintainers' reference for a collection whose qrels hold no judged negative (scifact): read holes, measure judges.

judge-eval measures a judge on a balanced sample of judged pairs, and scifact's qrels (test and train) judge only
relevant pairs. This script draws a seeded random sample of a pool's holes (unjudged pool pairs), writes reading
sheets (a first reading of every pair, a second one of a subset made without the first's labels), reports Cohen's
kappa between the readings, and assembles a BEIR folder whose qrels are the original judgments of the sampled
topics plus the read holes, so that ``bridge judge-eval --dataset beir:FOLDER`` measures a judge on the dataset's
own relevant pairs against holes read as not relevant (the hard negatives a judge meets in a pool). The labels are
a maintainers' reading under the criterion in the reference folder's README, not a crowd's.

    python scripts/hole_reference.py sample --dataset scifact --pool qrels/scifact/pool.tsv --size 80 --seed 0
    python scripts/hole_reference.py sheet --dataset scifact                 # the first reader's sheet (no labels)
    python scripts/hole_reference.py sheet --dataset scifact --second 40     # the second reader's sheet
    python scripts/hole_reference.py agreement --dataset scifact             # kappa between the readings
    python scripts/hole_reference.py assemble --dataset scifact --out /tmp/scifact-reference   # for judge-eval
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from answer_reference import agreement_of_readings, read_labels, read_pairs, write_pairs  # noqa: E402

from bridge.core.fsio import atomic_write, write_json_atomic  # noqa: E402
from bridge.datasets import load_dataset  # noqa: E402
from bridge.pool.pooling import read_pool  # noqa: E402


def folder(dataset: str) -> Path:
    return ROOT / "bench" / "data" / f"{dataset}-hole-reference"


def cmd_sample(args: argparse.Namespace) -> int:
    entries = read_pool(args.pool)
    rng = random.Random(args.seed)
    chosen = sorted(rng.sample(range(len(entries)), min(args.size, len(entries))))
    out = folder(args.dataset) / "pairs.tsv"
    out.parent.mkdir(parents=True, exist_ok=True)
    write_pairs(out, [entries[i] for i in chosen])
    topics = len({e.qid for e in entries})
    print(f"{len(entries)} holes over {topics} topics in {args.pool}; sampled {len(chosen)} (seed {args.seed})")
    print(f"-> {out}")
    return 0


def cmd_sheet(args: argparse.Namespace) -> int:
    """A reading sheet without labels: every sampled pair (first reading), or a seeded subset (second reading)."""
    ds = load_dataset(args.dataset, args.data_dir)
    pairs = read_pairs(folder(args.dataset) / "pairs.tsv")
    if args.second:
        pairs = [pairs[i] for i in sorted(random.Random(args.seed + 1).sample(range(len(pairs)), args.second))]
    name = "sheet-second.md" if args.second else "sheet-first.md"
    out = Path(args.out) if args.out else folder(args.dataset) / name
    with atomic_write(out) as handle:
        for n, (qid, docid) in enumerate(pairs, 1):
            doc = ds.corpus.get(docid)
            handle.write(f"## {n}. qid {qid} / {docid}\n\nClaim: {ds.query(qid).text}\n")
            handle.write(f"Abstract ({doc.title}): {doc.text}\n\n")
    print(f"{len(pairs)} pairs -> {out}")
    return 0


def cmd_agreement(args: argparse.Namespace) -> int:
    here = folder(args.dataset)
    first, second = read_labels(here / "labels-first.tsv"), read_labels(here / "labels-second.tsv")
    result = agreement_of_readings(first, second, list(first))
    result["first_relevant_share"] = sum(first.values()) / len(first) if first else None
    write_json_atomic(here / "agreement.json", result)
    print(json.dumps(result, indent=2))
    return 0


def cmd_assemble(args: argparse.Namespace) -> int:
    """A BEIR folder: the dataset's corpus and queries (linked), qrels = the sampled topics' original judgments
    plus the first reading of the holes. judge-eval then samples both classes from it."""
    ds = load_dataset(args.dataset, args.data_dir)
    read = read_labels(folder(args.dataset) / "labels-first.tsv")
    topics = {qid for qid, _ in read}
    out = Path(args.out)
    (out / "qrels").mkdir(parents=True, exist_ok=True)
    source = Path(args.data_dir) / args.source
    for name in ("corpus.jsonl", "queries.jsonl"):
        link = out / name
        if not link.exists():
            link.symlink_to((source / name).resolve())
    rows = [(q, d, g) for q, docs in ds.qrels.items() if q in topics for d, g in docs.items()]
    rows += [(q, d, label) for (q, d), label in read.items()]
    with atomic_write(out / "qrels" / "test.tsv") as handle:
        handle.write("query-id\tcorpus-id\tscore\n" + "".join(f"{q}\t{d}\t{g}\n" for q, d, g in rows))
    relevant = sum(1 for *_, g in rows if g > 0)
    print(f"{len(rows)} judged pairs over {len(topics)} topics ({relevant} relevant) -> {out}")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", default=str(ROOT.parent / "shared" / "data"))
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("sample", help="a seeded random sample of a pool's holes -> pairs.tsv")
    p.add_argument("--dataset", required=True)
    p.add_argument("--pool", type=Path, required=True)
    p.add_argument("--size", type=int, default=80)
    p.add_argument("--seed", type=int, default=0)
    p.set_defaults(run=cmd_sample)
    p = sub.add_parser("sheet", help="a reading sheet (claim and abstract) without labels")
    p.add_argument("--dataset", required=True)
    p.add_argument("--second", type=int, default=0, help="a seeded subset of this size (the second reading)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out")
    p.set_defaults(run=cmd_sheet)
    p = sub.add_parser("agreement", help="Cohen's kappa between the first and the second reading")
    p.add_argument("--dataset", required=True)
    p.set_defaults(run=cmd_agreement)
    p = sub.add_parser("assemble", help="a BEIR folder with the read holes in its qrels, for judge-eval")
    p.add_argument("--dataset", required=True)
    p.add_argument("--source", default="beir_scifact", help="the dataset's folder under the data directory")
    p.add_argument("--out", required=True)
    p.set_defaults(run=cmd_assemble)
    args = parser.parse_args()
    return args.run(args)


if __name__ == "__main__":
    raise SystemExit(main())
