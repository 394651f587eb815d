"""Placing new runs in a filled leaderboard from Python, as ``bridge score`` does."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bridge.api.frames import as_runs
from bridge.api.leaderboards import Evaluation
from bridge.core.layout import Workspace
from bridge.datasets import Dataset

if TYPE_CHECKING:
    import pandas as pd

    from bridge.evaluation.score.placement import ScoreResult
    from bridge.label.chain import ChainSpec


@dataclass(frozen=True)
class Scored(Evaluation):
    """:func:`score`'s result: the leaderboard with the new runs, and where each landed."""

    scored: ScoreResult

    @property
    def placements(self) -> pd.DataFrame:
        """Per new run and measure: ``system, measure, rank`` (of ``systems``, under the estimate; ties share),
        ``estimate, estimate_low, estimate_high`` (95% interval), ``lower, upper`` (bounds), and the neighbours'
        ``above, above_status, p_above`` (P the one above beats it), ``below, below_status, p_below`` (P it beats
        the one below)."""
        import pandas as pd

        rows = []
        for p in self.scored.placements:
            s, none = p.score, ("", "", float("nan"))
            above = (p.above.upper, p.above.status, p.above.p_upper) if p.above else none
            below = (p.below.lower, p.below.status, p.below.p_upper) if p.below else none
            rows.append(
                (s.system, s.measure, p.rank, p.systems, s.estimate, *s.interval, s.low, s.high, *above, *below)
            )
        columns = [
            "system",
            "measure",
            "rank",
            "systems",
            "estimate",
            "estimate_low",
            "estimate_high",
            "lower",
            "upper",
        ]
        columns += ["above", "above_status", "p_above", "below", "below_status", "p_below"]
        return pd.DataFrame(rows, columns=columns)


@dataclass(frozen=True)
class ScoreOptions:
    """:func:`score`'s rarer settings (``bridge score``'s defaults)."""

    depth: int = 10
    """Pool depth of the new runs (as ``bridge pool``)."""
    measures: Sequence[str] = ()
    """ir_measures names (default: ``bridge eval``'s at ``k``)."""
    k: int = 10
    """Cut-off of the default measures."""
    draws: int = 400
    """Draws of the open labels behind the estimate."""
    seed: int = 0
    families: Mapping[str, str] | None = None
    """System -> retrieval family (``bridge score`` reads them from the pool file; default here: each system its
    own)."""


def score(
    runs: Mapping[str, Any],
    dataset: Dataset,
    *,
    workspace: Workspace | None = None,
    judge: ChainSpec | None = None,
    max_minutes: float | None = 0.0,
    folder: str | Path | None = None,
    progress: bool = False,
    options: ScoreOptions = ScoreOptions(),
) -> Scored:
    """Place runs that were never pooled in ``dataset``'s filled leaderboard, as ``bridge score`` does, and write
    what it writes to ``folder`` (default: ``reports/<ds>/score``): ``labels/`` (the new pairs and their
    records), ``leaderboard.csv``, ``comparisons.csv``, ``judge-audit.json``.

    ``workspace``: where pool, label and eval left their files (default: the current folder's). A run named like
    a saved system takes its place. The new pairs are decided by the free stages of ``judge`` (a chain spec, e.g.
    the label run's; None: they stay open with the hole model's P) and its costly judge within ``max_minutes``;
    every run is estimated together. ``options``: pool depth, measures, draws, seed, families
    (:class:`ScoreOptions`). Bad runs (empty, truncated, another dataset's) raise :class:`InputError`."""
    from bridge.evaluation.score.placement import ScoreSettings, score_workspace

    settings = ScoreSettings(
        depth=options.depth,
        k=options.k,
        measures=tuple(options.measures),
        draws=options.draws,
        seed=options.seed,
        families=options.families,
        max_minutes=max_minutes,
        progress=progress,
    )
    out = Path(folder) if folder is not None else None
    result, _ = score_workspace(workspace or Workspace(), dataset, as_runs(runs), settings, judge, out)
    return Scored(result.evaluation, result)
