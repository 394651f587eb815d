"""Print the README's retrieval-quality table: nDCG@10 and Recall@100 of every run of a folder.

    python scripts/quality_table.py --dataset scifact [--runs-dir runs] [--data-dir ../shared/data]

Scores with ir_measures over every query of the dataset that has original judgments (a query a
run did not answer counts 0), and checks each run's completeness: queries answered and documents
per query (the smallest count), so an incomplete run is visible in the table.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from bridge.core.layout import DEFAULT_DATA_DIR
from bridge.core.trec import read_run
from bridge.datasets import load_dataset
from bridge.evaluation.scoring.trec_measures import evaluate


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", default="scifact")
    parser.add_argument("--data-dir", default=str(DEFAULT_DATA_DIR))
    parser.add_argument("--runs-dir", default="runs", help="root holding <slug>/<system>.run")
    args = parser.parse_args()
    ds = load_dataset(args.dataset, args.data_dir)
    topics = [q for q in ds.qids if q in ds.qrels]
    print(f"{ds.name}: {len(topics)} judged queries\n")
    print("| system | nDCG@10 | Recall@100 | queries | docs/query (min) |")
    print("|---|---|---|---|---|")
    for path in sorted(Path(args.runs_dir, ds.slug).glob("*.run")):
        run = read_run(path)
        means = evaluate(run, ds.qrels, topics, ["nDCG@10", "R@100"]).means
        depth = min((len(docs) for docs in run.values()), default=0)
        print(f"| `{path.stem}` | {means['nDCG@10']:.3f} | {means['R@100']:.3f} | {len(run)} | {depth} |")


if __name__ == "__main__":
    main()
