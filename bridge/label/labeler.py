"""The label run: judge every unjudged pool pair with a :class:`~bridge.label.chain.JudgeChain`, audit the
judge, write augmented qrels.

Resuming is the normal mode: pairs that already have a record from the same judge
configuration are not judged again, and every record is fsynced as soon as its pair is
decided, so ``kill -9`` loses at most the pairs still in flight (whose paid LLM calls are
in the response cache anyway).

Every run also judges the known pairs of the audit (``bridge.judging.quality.audit``) with the same judge, on the same
path as pool pairs (the same stages, prompt and hint), after the pool; their records go to ``audit.jsonl``,
never to labels.jsonl, and the verdict to ``judge-audit.json``. The run writes the hole model's calibrations
(``hole-calibrations.json``) beside the labels.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from functools import partial

from bridge.core.interrupts import sigterm_interrupts
from bridge.core.lock import folder_lock
from bridge.datasets import Dataset
from bridge.label.audit_run import finish_label_run, judge_audit
from bridge.label.chain import JudgeChain
from bridge.label.files import LabelPaths
from bridge.label.plan import LabelOptions, plan_label_run
from bridge.label.pool_judging import chain_calibrations, counted_config_ids, judge_pool
from bridge.label.summary import LabelSummary

logger = logging.getLogger(__name__)


def label_pool(dataset: Dataset, chain: JudgeChain, paths: LabelPaths, options: LabelOptions) -> LabelSummary:
    """Judge the pool's pairs and the audit's known pairs, resuming from earlier records; write augmented qrels,
    the hole model's calibrations and ``judge-audit.json``.

    Order: each judge prepares (a fit, a calibration: a fixed cost), the free stages decide every pair they can,
    then the budget's clock runs for the pairs of the chain's costly judge and, with ``options.refine``, those a
    costly judge re-judges, most valuable first; last the audit's known pairs (a fixed cost too, judged
    after the pool so that a judge whose pool pairs set its state is audited as it judged them)."""
    with folder_lock(paths.labels.parent, "bridge label"), sigterm_interrupts():
        plan = plan_label_run(dataset, chain, paths, options)
        order_ids = counted_config_ids(chain, options.refine)
        calibrations = chain_calibrations(chain, options.refine)
        finish = partial(finish_label_run, dataset, chain, paths, options, plan, order_ids, calibrations)
        try:
            runner = judge_pool(dataset, chain, paths, options, plan, calibrations)
            judge_audit(chain, paths, options, plan, runner)
        except BaseException:  # Ctrl+C, SIGTERM, a model server's error: keep what was paid for, then stop
            _finish_interrupted(finish)
            raise
        return finish()


def _finish_interrupted(finish: Callable[[], LabelSummary]) -> None:
    """An interrupted run's state from the records it kept (augmented qrels, calibrations, the audit; the ledger is
    already written): a failure here is reported, never raised over the interrupt that the caller must see."""
    try:
        finish()
    except Exception as exc:
        logger.warning("the interrupted run's qrels, calibrations and audit were not written: %s", exc)
