"""Print the README's LARF table: judged relevance feedback on a dataset, with the judge's accuracy beside it.

    python scripts/larf_table.py --dataset scifact [--data-dir ../shared/data] [--model smollm2-135m]

Runs (through `bridge retrieve`, so every run, index and LLM response is cached) BM25, query-by-document
pseudo-feedback (`bm25-qbd`), LARF with oracle feedback (the qrels judge the first stage's top documents)
and LARF with the embedded LLM judge, then prints nDCG@10 and Recall@100 over the judged queries and, for
the two judged settings, how well their feedback judgments agree with the qrels on the top documents
(unjudged documents count as not relevant, so a judge can only lose points there). LARF's point: the
quality of the feedback decides the gain.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from bridge.cli import main as bridge_main
from bridge.core.layout import DEFAULT_DATA_DIR
from bridge.core.trec import read_run, top_k
from bridge.datasets import load_dataset
from bridge.evaluation.scoring.trec_measures import evaluate
from bridge.judging.fitting.metrics import agreement_of

DEPTH = 5
POOL = f"""
[systems.bm25]
family = "bm25"

[systems.bm25-qbd]
family = "qbd"
first_stage = "bm25"
feedback_docs = 3

[systems.larf-oracle]
family = "larf"
first_stage = "bm25"
feedback = "qrels"
judged_depth = {DEPTH}
max_feedback_docs = 3

[systems.larf-judge]
family = "larf"
first_stage = "bm25"
feedback = "judge"
judged_depth = {DEPTH}
max_feedback_docs = 3
"""


def judge_accuracy(ds, runs_dir: Path, cache_dir: Path, model: str) -> str:
    """bAcc / kappa of the LLM judge on BM25's top documents against the qrels (the feedback candidates)."""
    from bridge.llm import LLMConfig, open_llm
    from bridge.retrievers.base import RetrievalContext, SystemSpec, make_retriever

    llm = open_llm(LLMConfig(model=model, cache_dir=cache_dir), cache_dir / "llm-cache.sqlite")
    context = RetrievalContext(
        cache_dir, runs={"bm25": read_run(runs_dir / "bm25.run")}, options={"llm": llm, "qrels": ds.qrels},
        dataset_slug=ds.slug, dataset_fingerprint=ds.fingerprint,
    )  # fmt: skip
    spec = SystemSpec("larf-judge", "larf", {"first_stage": "bm25", "feedback": "judge", "judged_depth": DEPTH})
    larf = make_retriever(spec, context)
    larf._corpus = ds.corpus  # the judgments need the texts only, not the Lucene index
    queries = [q for q in ds.queries if q.qid in ds.qrels]
    larf.feedback_docs(queries, context.runs["bm25"])  # every call answered from the response cache
    truth, labels = [], []
    for q in queries:
        for docid in top_k(context.runs["bm25"].get(q.qid, {}), DEPTH):
            record = larf.judgments.get((q.qid, docid))
            truth.append(int(ds.qrels[q.qid].get(docid, 0) >= ds.relevance_threshold))
            labels.append(record.label if record else None)
    a = agreement_of(truth, labels)
    return f"bAcc {a.describe('balanced_accuracy')}, kappa {a.describe('kappa')} on {a.decided} top-{DEPTH} documents"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", default="scifact")
    parser.add_argument("--data-dir", default=str(DEFAULT_DATA_DIR))
    parser.add_argument("--runs-dir", default="runs")
    parser.add_argument("--cache-dir", default="cache")
    parser.add_argument("--model", default="smollm2-135m")
    args = parser.parse_args()
    with tempfile.NamedTemporaryFile("w", suffix=".toml", delete=False) as handle:
        handle.write(POOL)
    common = ["--dataset", args.dataset, "--data-dir", args.data_dir, "--runs-dir", args.runs_dir]
    common += ["--cache-dir", args.cache_dir, "--model", args.model, "--quiet"]
    if bridge_main(["retrieve", *common, "--pool-config", handle.name]) != 0:
        raise SystemExit("retrieval failed")
    Path(handle.name).unlink()
    ds = load_dataset(args.dataset, args.data_dir)
    runs_dir = Path(args.runs_dir) / ds.slug
    topics = [q for q in ds.qids if q in ds.qrels]
    judge = judge_accuracy(ds, runs_dir, Path(args.cache_dir), args.model)
    feedback = {
        "bm25": "none",
        "bm25-qbd": "pseudo: top 3 taken as relevant",
        "larf-oracle": f"qrels on the top {DEPTH} (oracle)",
        "larf-judge": f"{args.model} on the top {DEPTH}: {judge}",
    }
    print(f"{ds.name}: {len(topics)} judged queries\n")
    print("| system | nDCG@10 | Recall@100 | feedback |")
    print("|---|---|---|---|")
    for system, note in feedback.items():
        means = evaluate(read_run(runs_dir / f"{system}.run"), ds.qrels, topics, ["nDCG@10", "R@100"]).means
        print(f"| `{system}` | {means['nDCG@10']:.3f} | {means['R@100']:.3f} | {note} |")


if __name__ == "__main__":
    main()
