"""Where each stage reads and writes (the file layout of DESIGN.md §2), as one frozen value."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

DEFAULT_DATA_DIR = Path("../shared/data")

# A label run's folder (qrels/<ds>/): every file a stage writes there, named once.
POOL_FILE = "pool.tsv"
RUN_STAMPS = ".meta"
"""runs/<ds>/.meta/: each run's stamp, with what made it (its system's family and parameters)."""
LABELS_FILE = "labels.jsonl"
AUGMENTED_QRELS = "augmented.qrels"
ORIGINAL_QRELS = "original.qrels"
AUDIT_FILE = "audit.jsonl"
CALIBRATION_FILE = "calibration.json"
REFINE_CALIBRATION_FILE = "calibration-refine.json"
"""The costly answer judge's fit (its fixed cost), beside the labels."""
FALLBACK_CALIBRATION_FILE = "calibration-fallback.json"
HOLE_CALIBRATIONS_FILE = "hole-calibrations.json"
"""The label run's calibrations of the holes; ``bridge eval`` reads them."""
BUDGET_FILE = "budget.json"
"""Seconds each judge configuration's label runs have spent (the --max-minutes ledger)."""
LOCK_FILE = "run.lock"
"""The folder's lock (bridge.core.lock): one label run, review merge or --restart at a time; names its holder."""
REVIEW_DB = "review.sqlite"
REVIEW_CSV = "review-items.csv"
REVIEW_ANSWERS_CSV = "review-answers.csv"
"""The sparse benchmark's simulated people's answers to review-items.csv, as a platform would return them."""

# A report folder (reports/<ds>/).
JUDGE_AUDIT = "judge-audit.json"
LEADERBOARD_CSV = "leaderboard.csv"
HOLES_CSV = "holes.csv"
SIGNIFICANCE_CSV = "significance.csv"
ROUTES_CSV = "routes.csv"
CURVES_CSV = "curves.csv"
COMPARISONS_CSV = "comparisons.csv"
VALUABLE_PAIRS = "valuable-pairs.tsv"
STABILITY_CSV = "stability.csv"
TOPIC_SCORES_CSV = "per-topic.csv"
REUSABILITY_JSON = "reusability.json"
RAG_CSV = "rag.csv"
RAG_ANSWERS = "rag_answers.jsonl"
REPORT_MD = "report.md"
REPORT_HTML = "report.html"
ANSWER_TEX = "answer.tex"
"""The answer table as LaTeX (booktabs): one table per measure."""
CALIBRATIONS_MD = "calibrations.md"
ADAPTER_CURVE_CSV = "adapter-curve.csv"

QRELS_DRAWS = "draws"
"""Under qrels/<ds>/: draws of the completed judgments as TREC qrels files (``bridge eval``), what any tool scores to
get the estimate's mean and interval."""

LLM_CACHE = "llm-cache.sqlite"
"""The LLM response cache, under the cache folder."""


@dataclass(frozen=True)
class Workspace:
    data_dir: Path = DEFAULT_DATA_DIR
    runs_dir: Path = Path("runs")
    qrels_dir: Path = Path("qrels")
    reports_dir: Path = Path("reports")
    cache_dir: Path = Path("cache")

    def runs(self, slug: str) -> Path:
        return self.runs_dir / slug

    def pool_file(self, slug: str) -> Path:
        return self.qrels_dir / slug / POOL_FILE

    def labels_file(self, slug: str) -> Path:
        return self.qrels_dir / slug / LABELS_FILE

    def augmented_qrels(self, slug: str) -> Path:
        return self.qrels_dir / slug / AUGMENTED_QRELS

    def audit_file(self, slug: str) -> Path:
        """Records of the known-pair audit (never part of the augmented qrels)."""
        return self.qrels_dir / slug / AUDIT_FILE

    def audit_report(self, slug: str) -> Path:
        return self.reports_dir / slug / JUDGE_AUDIT

    def calibration_file(self, slug: str) -> Path:
        return self.qrels_dir / slug / CALIBRATION_FILE

    def review_db(self, slug: str) -> Path:
        return self.qrels_dir / slug / REVIEW_DB

    def qrels_draws(self, slug: str) -> Path:
        return self.qrels_dir / slug / QRELS_DRAWS

    def original_qrels(self, slug: str) -> Path:
        return self.qrels_dir / slug / ORIGINAL_QRELS

    def reports(self, slug: str) -> Path:
        return self.reports_dir / slug

    @property
    def llm_cache(self) -> Path:
        return self.cache_dir / LLM_CACHE
