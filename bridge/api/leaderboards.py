"""Evaluating from Python as ``bridge eval`` does: the leaderboard under the original and the augmented qrels, with
the estimate, as DataFrames (:class:`Evaluation`), and the P each open pair is drawn with.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bridge.api.frames import as_qrels, as_runs
from bridge.api.labels import Labels
from bridge.core.label_records import lift_new_labels
from bridge.core.stamp import family_of_each
from bridge.core.trec import Qrels
from bridge.datasets import Dataset

if TYPE_CHECKING:
    import pandas as pd

    from bridge.evaluation.rebenchmark.harness import EvalResult
    from bridge.evaluation.rebenchmark.inputs import EvalInputs


@dataclass(frozen=True)
class Evaluation:
    """``bridge eval``'s result as DataFrames (``result``: the harness's objects, for everything else)."""

    result: EvalResult

    @property
    def leaderboard(self) -> pd.DataFrame:
        """Long format: ``system, measure, qrels, value, rank``, and for the augmented qrels the estimate's columns
        (``lower, estimate, estimate_low, estimate_high, estimate_q05, estimate_q95, topics_low, topics_high,
        upper``; NaN elsewhere). Systems best first under the first compared qrels set, as leaderboard.csv."""
        import pandas as pd

        from bridge.evaluation.rebenchmark.inputs import AUGMENTED

        est = self.result.estimated
        rows = []
        for r in self.result.rows:
            for q in self.result.scores.qrels_names:
                row: dict[str, Any] = {"system": r.system, "measure": r.measure, "qrels": q}
                row |= {"value": r.values[q], "rank": r.ranks[q]}
                score = est.score(r.system, r.measure) if est is not None and q == AUGMENTED else None
                if score is not None:
                    row |= {"lower": score.low, "estimate": score.estimate}
                    row |= dict(zip(("estimate_low", "estimate_high"), score.interval, strict=True))
                    row |= dict(zip(("estimate_q05", "estimate_q95"), score.quantiles, strict=True))
                    row |= dict(zip(("topics_low", "topics_high"), score.topic_interval, strict=True))
                    row["upper"] = score.high
                rows.append(row)
        columns = ["system", "measure", "qrels", "value", "rank", "lower", "estimate", "estimate_low"]
        columns += ["estimate_high", "estimate_q05", "estimate_q95", "topics_low", "topics_high", "upper"]
        return pd.DataFrame(rows, columns=columns)

    @property
    def comparisons(self) -> pd.DataFrame:
        """Adjacent systems under the estimate, then (with a baseline) every other system against it, as
        comparisons.csv holds them: ``measure, upper, lower, status`` (settled, likely, open), ``verdict, p_upper`` (P
        that ``upper`` beats ``lower`` under the hole model), ``delta`` (the estimates' difference), ``delta_low,
        delta_high`` (its interval on these topics at the verdict's level, 90%), ``delta_topic_low,
        delta_topic_high`` (on topics like these) and ``against`` (``next`` or ``baseline``)."""
        import pandas as pd

        est = self.result.estimated
        listed = est.all_comparisons() if est else []
        rows = [(c.measure, c.upper, c.lower, c.status, c.verdict, c.p_upper, c.delta, *c.delta_interval,
                 *c.delta_topic_interval, against) for c, against in listed]  # fmt: skip
        columns = ["measure", "upper", "lower", "status", "verdict", "p_upper", "delta", "delta_low", "delta_high",
                   "delta_topic_low", "delta_topic_high", "against"]  # fmt: skip
        return pd.DataFrame(rows, columns=columns)

    @property
    def holes(self) -> pd.DataFrame:
        """Hole@k per system and compared qrels set: ``system, qrels, k, hole_rate, holes, pooled``."""
        import pandas as pd

        rows = [(h.system, h.qrels, h.k, h.hole_rate, h.holes, h.pooled) for h in self.result.holes]
        return pd.DataFrame(rows, columns=["system", "qrels", "k", "hole_rate", "holes", "pooled"])

    def per_topic(self) -> pd.DataFrame:
        """ir_measures' per-query long format with the system and qrels set: ``system, qrels, measure, query_id,
        value``.

        >>> board = evaluate({"a": {"q1": {"d1": 1.0}, "q2": {"d9": 1.0}}}, {"q1": {"d1": 1}, "q2": {"d2": 1}},
        ...                  measures=["P@1"])
        >>> board.per_topic()
          system     qrels measure query_id  value
        0      a  original     P@1       q1    1.0
        1      a  original     P@1       q2    0.0
        """
        import pandas as pd

        s = self.result.scores
        rows = [
            (system, q, spec.label, topic, float(s.values[(q, spec.label)][i, j]))
            for q in s.qrels_names
            for spec in s.specs
            for i, system in enumerate(s.systems)
            for j, topic in enumerate(s.topics)
        ]
        return pd.DataFrame(rows, columns=["system", "qrels", "measure", "query_id", "value"])

    def summary(self) -> str:
        """The terminal summary ``bridge eval`` prints."""
        from bridge.evaluation.rebenchmark.eval_summary import summary_text

        return summary_text(self.result)


@dataclass(frozen=True)
class EvaluateOptions:
    """:func:`evaluate`'s rarer settings. Two defaults differ from ``bridge eval``'s, for speed in a notebook:
    ``significance="randomization"`` and ``orders=10`` give the command's."""

    significance: str = "none"
    """The Holm-corrected test that marks the leaderboard: ``randomization``, ``t`` or ``none``."""
    orders: int = 0
    """Random system orders of the growth and marginal-contribution curves (0: none)."""
    families: Mapping[str, str] | None = None
    """System -> retrieval family, the strata of the estimate's transfer shift (default: each system its own)."""
    threshold: int | None = None
    """The relevance grade (default: the dataset's, else 1)."""
    topics: Sequence[str] | None = None
    """The topics scored (default: the dataset's judged topics, else every query the qrels judge)."""
    seed: int = 0
    """Seed of the estimate's draws, the randomization test and the curves' orders."""
    baseline: str | None = None
    """A system every other is compared with (``bridge eval --baseline``): the estimates' difference, its intervals
    and a verdict by the adjacent comparisons' rule, in :attr:`Evaluation.comparisons` (``against`` = baseline)."""


def evaluate(
    runs: Mapping[str, Any],
    qrels: Qrels | Dataset | pd.DataFrame | str | Path,
    labels: Labels | None = None,
    *,
    measures: Sequence[str] = (),
    k: int = 10,
    draws: int = 400,
    progress: bool = False,
    options: EvaluateOptions = EvaluateOptions(),
) -> Evaluation:
    """Score ``runs`` under the original ``qrels`` and, with ``labels``, under the augmented qrels with the
    estimate (expected scores, 95% intervals, bounds, verdicts), as ``bridge eval`` does.

    ``qrels``: a dataset (its judged topics and relevance threshold) or qrels. ``measures``: ir_measures names
    (default: Hit, nDCG, Recall, MRR, Judged at ``k``). ``draws``: draws of the open labels behind the estimate.
    ``options``: significance tests, curves, families, threshold, topics and seed (:class:`EvaluateOptions`).

    >>> board = evaluate({"a": {"q1": {"d1": 1.0}}, "b": {"q1": {"d2": 1.0}}}, {"q1": {"d1": 1}}, measures=["P@1"],
    ...                  options=EvaluateOptions(significance="randomization"))
    >>> board.result.significance is not None
    True
    """
    from bridge.estimate.leaderboard import EstimateConfig
    from bridge.evaluation.rebenchmark.harness import EvalConfig, run_evaluation

    inputs = _eval_inputs(runs, qrels, labels, options)
    config = EvalConfig(
        k=k,
        measures=tuple(measures),
        significance_test=options.significance,
        orders=options.orders,
        seed=options.seed,
        estimate=EstimateConfig(draws=draws, seed=options.seed),
        baseline=options.baseline,
    )
    return Evaluation(run_evaluation(inputs, config, progress=progress))


def _eval_inputs(
    runs: Mapping[str, Any], qrels: Qrels | Dataset | pd.DataFrame | str | Path, labels: Labels | None,
    options: EvaluateOptions,
) -> EvalInputs:  # fmt: skip
    """What :func:`evaluate` scores: the runs, the original qrels and, with labels, the augmented ones."""
    from bridge.evaluation.rebenchmark.inputs import AUGMENTED, ORIGINAL, EvalInputs

    ds = qrels if isinstance(qrels, Dataset) else None
    original = as_qrels(qrels)
    runs = as_runs(runs)
    level = options.threshold if options.threshold is not None else (ds.relevance_threshold if ds else 1)
    topics = options.topics
    judged = list(topics) if topics is not None else list(ds.judged_topics() if ds else sorted(original))
    sets = {ORIGINAL: original}
    if labels is not None:
        sets[AUGMENTED] = lift_new_labels(original, labels.qrels(original), level)
    return EvalInputs(
        dataset=ds.name if ds else "",
        topics=tuple(judged),
        runs=runs,
        qrels_sets=sets,
        threshold=level,
        labels=labels.records if labels else (),
        dataset_qids=tuple(ds.qids) if ds else (),
        audit=labels.audit if labels else None,
        pool=labels.pool if labels else (),
        calibrations=labels.calibrations if labels else {},
        families=family_of_each(runs, options.families),
    )


def hole_probabilities(
    runs: Mapping[str, Any],
    qrels: Qrels | Dataset | pd.DataFrame | str | Path,
    labels: Labels,
    *,
    depth: int = 10,
    options: EvaluateOptions = EvaluateOptions(),
) -> pd.DataFrame:
    """The pairs whose labels the estimate draws, in the runs' top ``depth`` (one run is enough), each with the P
    it is drawn with: ``query_id, doc_id, stage`` (what the P rests on: a calibration, the prior, the gate),
    ``p_relevant``, ``label`` (the stage's own label, the augmented qrels' floor; None: undecided). Pairs people
    judged are not among them: their grade is fixed. ``options``: threshold and topics as :func:`evaluate` reads
    them.

    >>> from bridge.core.label_records import LabelRecord
    >>> gate = LabelRecord("q1", "d2", 0, "answer-absent", "gate", "c", "m", stage="evidence")
    >>> hole_probabilities({"a": {"q1": {"d1": 2.0, "d2": 1.0}}}, {"q1": {"d1": 1}},
    ...                    Labels((gate,), (("q1", "d2"),)), depth=2)[["query_id", "doc_id", "label"]]
      query_id doc_id  label
    0       q1     d2      0
    """
    import pandas as pd

    from bridge.evaluation.rebenchmark.estimated import hole_model
    from bridge.evaluation.rebenchmark.inputs import ORIGINAL

    inputs = _eval_inputs(runs, qrels, labels, options)
    model = hole_model(inputs, inputs.qrels_sets[ORIGINAL], depth)
    rows = [
        (q, d, stage, float(p), model.labels.get((q, d)))
        for (q, d), stage, p in zip(model.pairs, model.stage, model.p, strict=True)
    ]
    return pd.DataFrame(rows, columns=["query_id", "doc_id", "stage", "p_relevant", "label"])
