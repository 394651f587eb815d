"""``bridge eval`` as a library function: a workspace's runs scored under every qrels set, the report written to
reports/<ds>/, and the stage's up-to-date stamp kept, so a warm re-run does nothing."""

from __future__ import annotations

import dataclasses
import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bridge.core.errors import BridgeError
from bridge.core.layout import Workspace
from bridge.core.stamp import stage_stamp
from bridge.datasets import Dataset
from bridge.evaluation.rebenchmark.eval_summary import summary_text
from bridge.evaluation.rebenchmark.harness import EvalConfig, EvalResult, run_evaluation
from bridge.evaluation.rebenchmark.inputs import InputFiles, load_inputs
from bridge.evaluation.rebenchmark.qrels_draws import write_qrels_draws
from bridge.evaluation.report.writer import write_report

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class EvalSettings:
    """What ``bridge eval`` computes, reads and writes (its command line as values)."""

    config: EvalConfig = field(default_factory=EvalConfig)
    files: InputFiles = field(default_factory=InputFiles)
    figures: bool = True
    """Draw the PNG figures."""
    strict_qids: bool = False
    """Stop when the query ids of topics, runs and qrels differ (else: warn)."""
    force: bool = False
    """Run even when the stamp says nothing changed since the last run."""
    progress: bool = False
    qrels_draws: int = 100
    """Draws of the completed judgments written to qrels/<ds>/draws/ (:mod:`bridge.evaluation.rebenchmark.qrels_draws`;
    0: none)."""


@dataclass(frozen=True)
class EvalOutcome:
    """What an evaluation printed and wrote; ``result`` None: it was up to date and skipped."""

    text: str
    result: EvalResult | None = None
    written: tuple[Path, ...] = ()


def evaluate_workspace(
    ws: Workspace, ds: Dataset, settings: EvalSettings = EvalSettings(), stamped: Mapping[str, Any] | None = None
) -> EvalOutcome:
    """Evaluate ``ds``'s runs in ``ws`` and write reports/<ds>/ (leaderboard.csv, report.html, ...), unless the
    stamp says the same settings, code and files gave them already. ``stamped``: the settings the stamp records
    (the command line's; default: ``settings``)."""
    out = ws.reports(ds.slug)
    read = [ws.runs(ds.slug), ws.labels_file(ds.slug).parent, ws.audit_report(ds.slug), *settings.files.paths]
    recorded = stamped if stamped is not None else json.loads(json.dumps(dataclasses.asdict(settings), default=str))
    draws = ws.qrels_draws(ds.slug)
    stamp = stage_stamp(out, "eval", recorded, read, ignore=(draws,), dataset=ds.fingerprint)
    if (skipped := stamp.skip_message(settings.force)) is not None:
        return EvalOutcome(skipped)
    inputs = load_inputs(ws, ds, settings.files)
    issues = inputs.qid_issues()
    for issue in issues:
        log.warning("query ids: %s", issue.message())
    if issues and settings.strict_qids:
        raise BridgeError("query ids differ (--strict-qids): " + "; ".join(i.message() for i in issues))
    result = run_evaluation(inputs, settings.config, progress=settings.progress)
    written = write_report(result, out, figures=settings.figures)
    estimated, drawn = result.estimated, []
    if settings.qrels_draws and estimated is not None and estimated.model is not None:
        seed = settings.config.estimate.seed if settings.config.estimate is not None else 0
        drawn = write_qrels_draws(estimated.model, draws, settings.qrels_draws, seed)
    lines = [f"-> {path}" for path in written]
    lines += [f"-> {draws}/ ({settings.qrels_draws} draws of the completed judgments as TREC qrels)"] if drawn else []
    text = summary_text(result) + "\n" + "\n".join(lines)
    stamp.write(text, outputs=[*written, *drawn])
    return EvalOutcome(text, result, (*written, *drawn))
