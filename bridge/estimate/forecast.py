"""How many answers decide what: the interval width and the comparisons decided after N more random answers from
people, forecast from the hole model itself (a preposterior by simulation).

A world is drawn from the model as it stands (one draw of the level, every topic's shift and every open label);
N open pairs are drawn at random, as ``bridge review``'s random share would be, and answered as that world says;
the model is rebuilt with those answers and the leaderboard estimated again. Its mean interval width and the
adjacent comparisons it decides (settled or likely), averaged over a few worlds, are the forecast. The sparse
benchmark checks it against what N answers actually did (bench/RESULTS.md, "Deciding the sparse leaderboard").
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np

from bridge.core.measure_sets import Measure
from bridge.core.trec import Run
from bridge.estimate.calibration import UNCALIBRATED
from bridge.estimate.hole_evidence import HoleEvidence, HoleModelConfig, build_hole_model
from bridge.estimate.holes import HoleModel
from bridge.estimate.leaderboard import OPEN, EstimateConfig, Leaderboard

MORE_ANSWERS = (20, 40, 80)
DRAWS = 100
"""Draws of each forecast leaderboard (its width and verdicts, not its point, are what is read)."""


@dataclass(frozen=True)
class Forecast:
    """What ``answers`` more random answers are expected to give (the mean over ``worlds`` simulated worlds)."""

    answers: int
    width: float
    """Mean width of the systems' 95% intervals (these topics), over every estimated measure."""
    decided: float
    """Adjacent comparisons settled or likely."""
    comparisons: int
    worlds: int


def wants_forecast(model: HoleModel) -> bool:
    """Whether random answers would measure a level the model draws: some open pairs carry a calibration with each
    topic's own shift (a judge fitted on another collection's holes, :mod:`bridge.estimate.level`)."""
    return any(model.calibrations[name].topic_sd > 0 for name in model.groups if name in model.calibrations)


def forecast(
    evidence: HoleEvidence,
    model: HoleModel,
    runs: Mapping[str, Run],
    measures: Sequence[Measure],
    estimate: EstimateConfig,
    holes: HoleModelConfig | None = None,
    more: Sequence[int] = MORE_ANSWERS,
    worlds: int = 3,
) -> list[Forecast]:
    """The :class:`Forecast` of each number of ``more`` answers (module docstring), from ``model``, the hole model
    ``evidence`` gives under ``holes``."""
    holes = holes or HoleModelConfig()
    records = list(evidence.records)
    evidence = replace(evidence, records=records, pool=list(evidence.pool), seen=list(evidence.seen))
    latest = {(r.qid, r.docid): r for r in records}  # an open pair's latest record is a model's
    askable = [i for i, (pair, stage) in enumerate(zip(model.pairs, model.stage, strict=True))
               if stage not in UNCALIBRATED and pair in latest]  # fmt: skip
    rng = np.random.default_rng([estimate.seed, 7])
    config = replace(estimate, draws=DRAWS)
    # the same worlds for every N, each asking its holes in one random order (a larger N asks a smaller one's too):
    # the forecasts of different N differ by the answers, not by the worlds drawn
    drawn = []
    for _ in range(worlds):
        labels = rng.random(len(model.pairs)) < model.draw_p(rng, 1)[0]
        drawn.append((labels, rng.permutation(askable) if askable else np.zeros(0, dtype=int)))
    out = []
    for n in more:
        widths, decided, total = [], [], 0
        for labels, order in drawn:
            answers = [(latest[model.pairs[i]], int(labels[i])) for i in order[:n]]
            answered = replace(evidence, people_answers=[*evidence.people_answers, *answers])
            board = Leaderboard(runs, build_hole_model(answered, holes), list(evidence.topics), measures, config)
            widths.append(float(np.mean([e.interval[1] - e.interval[0] for e in board.scores()])))
            decided.append(sum(c.status != OPEN for c in board.comparisons))
            total = len(board.comparisons)
        out.append(Forecast(n, float(np.mean(widths)), float(np.mean(decided)), total, worlds))
    return out
