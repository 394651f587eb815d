"""What each costly judge was measured to be worth on each named dataset, so that a label run can say it before it pays.

The figures live in ``bridge/data/judge-quality.tsv``: one row per (dataset, judge, model), measured by
``bridge judge-eval`` on the dataset's labelled pairs (the command and date in the row's ``source``; the full
tables in bench/RESULTS.md). A dataset that is not in the file (a ``beir:`` folder, an ``irds:`` id) has no
measured figure: the run's own audit is then the only measurement.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path
from statistics import median

from bridge.core.errors import InputError
from bridge.core.fsio import read_utf8

QUALITY_FILE = Path(__file__).parents[2] / "data" / "judge-quality.tsv"
COLUMNS = ("dataset", "judge", "model", "measured_as", "pairs", "bacc", "bacc_low", "bacc_high", "auc", "auc_low",
           "auc_high", "s_per_pair", "source")  # fmt: skip


@dataclass(frozen=True)
class MeasuredQuality:
    """One judge's measured quality on one dataset's labelled pairs (95% intervals)."""

    dataset: str
    judge: str
    model: str
    measured_as: str
    """What judge-eval ran (the cascade is measured by its one calibrated pass, ``calibrated``)."""
    pairs: int
    bacc: tuple[float, float, float]
    """Balanced accuracy and its interval."""
    auc: tuple[float, float, float]
    """AUC of the judge's P(relevant) and its interval."""
    s_per_pair: float
    """Wall seconds per judged pair on the project's 2-core CPU machine."""
    source: str

    @property
    def above_chance(self) -> bool:
        """Whether the lower end of the bAcc or the AUC interval lies above 0.5."""
        return self.bacc[1] > 0.5 or self.auc[1] > 0.5

    def line(self) -> str:
        verdict = "above chance" if self.above_chance else "not above chance: its labels would carry no information"
        return (
            f"measured on {self.dataset} ({self.measured_as}, {self.pairs} labelled pairs; {self.source}): "
            f"bAcc {self.bacc[0]:.2f} [{self.bacc[1]:.2f}, {self.bacc[2]:.2f}], AUC {self.auc[0]:.2f} "
            f"[{self.auc[1]:.2f}, {self.auc[2]:.2f}], {self.s_per_pair:.1f} s per pair on 2 cores: {verdict}"
        )


def read_quality_table(path: Path = QUALITY_FILE) -> list[MeasuredQuality]:
    rows = list(csv.reader(read_utf8(path).splitlines(), delimiter="\t"))
    if not rows or tuple(rows[0]) != COLUMNS:
        raise InputError(f"expected the header {' '.join(COLUMNS)}", path=path, line=1)
    out = []
    for number, row in enumerate(rows[1:], start=2):
        if len(row) != len(COLUMNS):
            raise InputError(f"expected {len(COLUMNS)} fields, found {len(row)}", path=path, line=number)
        f = dict(zip(COLUMNS, row, strict=True))
        try:
            bacc = (float(f["bacc"]), float(f["bacc_low"]), float(f["bacc_high"]))
            auc = (float(f["auc"]), float(f["auc_low"]), float(f["auc_high"]))
            out.append(MeasuredQuality(f["dataset"], f["judge"], f["model"], f["measured_as"], int(f["pairs"]), bacc,
                                       auc, float(f["s_per_pair"]), f["source"]))  # fmt: skip
        except ValueError as exc:
            raise InputError(f"not a number ({exc})", path=path, line=number) from None
    return out


def measured_quality(dataset: str, judge: str, model: str, path: Path = QUALITY_FILE) -> MeasuredQuality | None:
    """The measured quality of ``judge`` with ``model`` on the named ``dataset`` (None: never measured there)."""
    for row in read_quality_table(path):
        if (row.dataset, row.judge, row.model) == (dataset, judge, model):
            return row
    return None


def better_measured(dataset: str, judge: str, model: str, path: Path = QUALITY_FILE) -> MeasuredQuality | None:
    """Another model measured above chance as ``judge`` on ``dataset`` (the highest AUC), where ``model`` was not
    measured above chance there: what the label run's first lines suggest instead."""
    own = measured_quality(dataset, judge, model, path)
    if own is not None and own.above_chance:
        return None
    rows = read_quality_table(path)
    others = [r for r in rows if r.dataset == dataset and r.judge == judge and r.model != model and r.above_chance]
    return max(others, key=lambda r: r.auc[0], default=None)


def measured_rate(dataset: str, judge: str, model: str, path: Path = QUALITY_FILE) -> tuple[float, str] | None:
    """Seconds per pair of ``judge`` with ``model`` on the project's 2-core machine and where they were measured: on
    ``dataset`` itself, else the median over the datasets it was measured on; None where it never was."""
    rows = [r for r in read_quality_table(path) if r.judge == judge and r.model == model]
    own = [r for r in rows if r.dataset == dataset]
    if own:
        return own[0].s_per_pair, f"on {dataset}"
    if not rows:
        return None
    return median(r.s_per_pair for r in rows), f"on {', '.join(sorted(r.dataset for r in rows))} (the median)"
