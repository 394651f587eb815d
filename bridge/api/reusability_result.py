"""The leave-one-system-out test ``bridge reusability`` wrote, read as DataFrames."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from bridge.core.errors import BridgeError
from bridge.core.layout import REUSABILITY_JSON, Workspace
from bridge.datasets import Dataset

if TYPE_CHECKING:
    import pandas as pd


@dataclass(frozen=True)
class Reusability:
    """``bridge reusability``'s result (reports/<ds>/reusability.json) as DataFrames; ``raw``: the JSON."""

    raw: Mapping[str, Any]

    @property
    def fills(self) -> pd.DataFrame:
        """One row per fill and measure: ``fill, kind, measure, mean_abs_error, error_low, error_high,
        rank_displacement, kendall_tau, tau_ap`` (the leave-one-out leaderboard against the full qrels')."""
        import pandas as pd

        rows = []
        for r in self.raw.get("judges", []):
            low, high = r.get("mean_abs_error_interval") or (float("nan"), float("nan"))
            rows.append((r["judge"], r["kind"], r["measure"], r["mean_abs_error"], low, high,
                         r["rank_displacement"], r["kendall_tau"], r["tau_ap"]))  # fmt: skip
        columns = ["fill", "kind", "measure", "mean_abs_error", "error_low", "error_high", "rank_displacement"]
        return pd.DataFrame(rows, columns=[*columns, "kendall_tau", "tau_ap"])

    @property
    def systems(self) -> pd.DataFrame:
        """Long format, one row per left-out system, measure and qrels (``full``, ``holey``, ``filled``, each
        floor): ``system, measure, qrels, value, rank``."""
        import pandas as pd

        rows = [
            (s["system"], measure, qrels, value, s["ranks"].get(measure, {}).get(qrels))
            for s in self.raw.get("systems", [])
            for measure, values in s["scores"].items()
            for qrels, value in values.items()
        ]
        return pd.DataFrame(rows, columns=["system", "measure", "qrels", "value", "rank"])


def reusability(dataset: Dataset | str, workspace: Workspace | None = None) -> Reusability:
    """The leave-one-system-out test that ``bridge reusability`` wrote for ``dataset`` (it labels every left-out
    pair with a judge run, so it is run from the command line: ``make reusability DATASET=dl19``)."""
    from bridge.datasets import dataset_slug
    from bridge.evaluation.reusability.results import read_reusability

    workspace = workspace or Workspace()
    slug = dataset.slug if isinstance(dataset, Dataset) else dataset_slug(dataset)
    path = workspace.reports(slug) / REUSABILITY_JSON
    raw = read_reusability(path)
    if raw is None:
        raise BridgeError(f"{path} not found: run `bridge reusability --dataset {slug}` first")
    return Reusability(raw)
