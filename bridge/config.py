"""Where each stage reads and writes (the file layout of DESIGN.md §2), as one frozen value."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

DEFAULT_DATA_DIR = Path("../shared/data")


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
        return self.qrels_dir / slug / "pool.tsv"

    def labels_file(self, slug: str) -> Path:
        return self.qrels_dir / slug / "labels.jsonl"

    def augmented_qrels(self, slug: str) -> Path:
        return self.qrels_dir / slug / "augmented.qrels"

    def audit_file(self, slug: str) -> Path:
        """Records of the known-pair audit (never part of the augmented qrels)."""
        return self.qrels_dir / slug / "audit.jsonl"

    def audit_report(self, slug: str) -> Path:
        return self.reports_dir / slug / "judge-audit.json"

    def calibration_file(self, slug: str) -> Path:
        return self.qrels_dir / slug / "calibration.json"

    def review_db(self, slug: str) -> Path:
        return self.qrels_dir / slug / "review.sqlite"

    def original_qrels(self, slug: str) -> Path:
        return self.qrels_dir / slug / "original.qrels"

    def reports(self, slug: str) -> Path:
        return self.reports_dir / slug

    @property
    def llm_cache(self) -> Path:
        return self.cache_dir / "llm-cache.sqlite"
