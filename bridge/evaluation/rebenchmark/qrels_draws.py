"""Draws of the completed judgments as plain TREC qrels files (``qrels/<ds>/draws/``, written by ``bridge eval``).

The estimate is a distribution over the labels nobody gave. Tools that read qrels (trec_eval, ir_measures, ranx,
PyTerrier) cannot read a distribution, and augmented.qrels, one thresholded label per hole, is a single and biased
completion. N files, each the fixed judgments with every open pair's grade drawn from the hole model (the
calibration's draws and shifts with it), carry the estimate to any of them: a run's score averaged over the files is
its estimate, and the 2.5-97.5% range of its scores is its 95% interval on these topics, up to the draws' noise.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np

from bridge.core.trec import write_qrels
from bridge.estimate.holes import HoleModel

README = """Draws of the completed judgments (bridge eval): each file holds the original qrels, people's labels
and every open pair drawn relevant (or graded above 0) by the hole model; an open pair drawn not relevant is left
out, as trec_eval reads a missing pair (measures of judged pairs, such as bpref, count it unjudged). Score a run on
every file with any tool; the mean of its scores is the estimate, their 2.5-97.5% range its 95% interval on these
topics. augmented.qrels, beside this folder, thresholds each hole's P once instead: its scores sit above or below
the estimate wherever the judge's labels lean one way.
"""


def write_qrels_draws(model: HoleModel, folder: Path, n: int, seed: int) -> list[Path]:
    """``n`` draws of ``model``'s completed judgments as ``folder/draw-000.qrels`` ... (with a README); written into a
    folder of their own and swapped in whole, so that a kill leaves the old draws or the new ones, never a mix.
    Returns the files written."""
    staging = folder.with_name(f".{folder.name}.tmp")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    width = max(3, len(str(n - 1)))
    for i, qrels in enumerate(model.completed_qrels(np.random.default_rng([seed, 3]), n)):
        write_qrels(qrels, staging / f"draw-{i:0{width}d}.qrels")
    (staging / "README.txt").write_text(README, encoding="utf-8")
    retired = folder.with_name(f".{folder.name}.old")
    shutil.rmtree(retired, ignore_errors=True)
    if folder.exists():
        folder.rename(retired)
    staging.rename(folder)
    shutil.rmtree(retired, ignore_errors=True)
    return sorted(folder.iterdir())
