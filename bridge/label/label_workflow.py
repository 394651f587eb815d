"""``bridge label`` as a library function (:func:`label_stage`): the up-to-date stamp, the judge chain, the run's
options (value order, executor, refine), the label run of :mod:`bridge.label.labeler` and what it says."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bridge.core.errors import BridgeError
from bridge.core.layout import Workspace
from bridge.core.stamp import StageStamp, run_families, stage_stamp
from bridge.core.trec import read_runs
from bridge.datasets import Dataset
from bridge.judging import JudgeSpec, judge_traits
from bridge.judging.quality.measured import better_measured, measured_quality, measured_rate
from bridge.label.budget import Pricing
from bridge.label.chain import (
    ChainSpec,
    build_chain,
    build_refine_chain,
    costly_answer_judges,
    exemplar_wanted,
    judge_reference,
)
from bridge.label.files import LabelPaths
from bridge.label.labeler import label_pool
from bridge.label.plan import LabelOptions
from bridge.label.summary import LabelSummary
from bridge.label.value import ValueConfig

if TYPE_CHECKING:
    from bridge.label.distributed import RayExecution


@dataclass(frozen=True)
class LabelStageSettings:
    """What ``bridge label`` runs with besides the workspace and the dataset."""

    spec: ChainSpec
    """The judge chain (its audit and progress settings are the run's too)."""
    restart: bool = False
    """Start labels.jsonl and audit.jsonl afresh (the old files kept as .bak); runs even when up to date."""
    batch_pairs: int = 64
    pricing: Pricing = field(default_factory=Pricing)
    max_pairs: int | None = None
    """:attr:`LabelOptions.max_pairs`; a run with a pair cap writes no stamp (a second run goes on)."""
    max_minutes: float | None = None
    """:attr:`LabelOptions.max_minutes`."""
    value: ValueConfig | None = field(default_factory=ValueConfig)
    """The value order against the runs in runs/<ds>/ (None: every pool pair, in priority order)."""
    refine: JudgeSpec | None = None
    """A costly judge, with its settings, that re-judges in value order the pairs a free stage gave a P (an answer
    judge needs a reference; exemplar-llm the exemplar stage)."""
    reference: str | None = None
    """The labelled answer-bearing pairs (``--reference``) the answer judges are calibrated on: part of what the
    stamp covers even where no answer judge runs (None: the one the chain's answer judge or ``refine`` holds)."""
    hole_reference: Path | None = None
    """A reading of random pool holes, written as people's random answers after the judges ran
    (:mod:`bridge.label.hole_reading`)."""
    ray: RayExecution | None = None
    """Judge on Ray workers (None: in this process)."""
    stamp: Mapping[str, Any] | None = None
    """The command's settings that the stage's up-to-date stamp covers (None: no stamp; the stage always runs)."""
    force: bool = False
    """Run even when the stamp says that nothing changed."""

    @property
    def answer_reference(self) -> str | None:
        """The reference the stage reads: the one given, else the one the answer judge or ``refine`` holds."""
        return self.reference or judge_reference(self.spec.judge) or judge_reference(self.refine)


def label_stage(
    ws: Workspace, ds: Dataset, settings: LabelStageSettings, *, say: Callable[[str], None]
) -> LabelSummary | None:
    """Judge ``ds``'s pool in ``ws`` as ``bridge label`` does, saying what it chose and what it did through ``say``.
    None when the stamp says that nothing changed since the last run (``say`` gets that run's summary)."""
    paths = LabelPaths.of_workspace(ws, ds.slug)
    stamp = _label_stamp(ws, ds, paths, settings)
    if stamp is not None and (skipped := stamp.skip_message(settings.force or settings.restart)) is not None:
        say(skipped)
        return None
    settings, budget = costly_judge_within_budget(settings, ds)
    settings = replace(settings, spec=replace(settings.spec, max_minutes=settings.max_minutes))
    spec = settings.spec
    chain, choice, llm = build_chain(spec, ds)
    options = _label_options(ws, ds, settings, llm, say)
    refine = settings.refine.name if settings.refine is not None else None
    head = f"{ds.name}: {choice}" + (f"; costly judge {refine} re-judges in value order" if refine else "")
    say("\n".join([head, *budget]))
    if ds.has_answers and not settings.answer_reference and spec.evidence != "off":
        say(
            f"note: {ds.name}'s answer-bearing pairs go to {spec.judge.name}; with --reference FILE (labelled "
            "answer-bearing pairs, e.g. bench/data/nq-answer-reference/labels-first.tsv) an answer judge calibrated "
            "on them gives every such pair a P"
        )
    summary = label_pool(ds, chain, paths, options)
    if settings.hole_reference is not None and _apply_reading(ds, paths, settings.hole_reference, say):
        summary = label_pool(ds, chain, paths, options)  # the qrels and the audit again, with the answers in them
    text = "\n".join([f"{ds.name} ({chain.pipeline.config_id})", *summary.lines(), *endpoint_lines(llm)])
    text += f"\n-> {paths.labels}\n-> {paths.augmented}\n-> {paths.audit}\n-> {paths.audit_report}"
    say(text)
    if stamp is not None and settings.max_pairs is None:  # a pair cap is per invocation: never up to date
        stamp.write(f"{head}\n{text}")
    return summary


def _apply_reading(ds: Dataset, paths: LabelPaths, reading: Path, say: Callable[[str], None]) -> int:
    """Write ``reading`` as people's random answers on this pool's holes; how many were written now."""
    from bridge.label.hole_reading import apply_reading
    from bridge.pool.pooling import read_pool

    applied = apply_reading(paths.labels, paths.audit_report, [(e.qid, e.docid) for e in read_pool(paths.pool)],
                            reading)  # fmt: skip
    say(
        f"hole reference {reading}: {applied.in_pool} of its {applied.read} read pairs are holes of this pool, "
        f"{applied.written} written now as people's random answers (its reading, not the dataset's assessors')"
    )
    return applied.written


def costly_judge_within_budget(settings: LabelStageSettings, ds: Dataset) -> tuple[LabelStageSettings, list[str]]:
    """The settings to run within the budget, and what the run's first lines say about its costly judge (``--refine``,
    else the chain's judge where it calls an LLM): the quality measured on this dataset (or that none was), and the
    budget. A zero budget (``--max-minutes 0`` or ``--max-pairs 0``) leaves the costly judge out altogether (not
    loaded, fitted or audited): the free stages decide what they can and every other pair keeps the estimate's
    prior P."""
    spec = settings.spec
    name = (settings.refine or spec.judge).name
    if not judge_traits(name).calls_llm:
        return settings, []
    who = f"{name} ({spec.llm.model})"
    measured = measured_quality(ds.name, name, spec.llm.model)
    unmeasured = f"{who} was never measured on {ds.name}: this run's audit measures it"
    quality = f"{who} {measured.line()}" if measured else unmeasured
    better = better_measured(ds.name, name, spec.llm.model)
    if better is not None:
        quality += f"; {better.model} measured AUC {better.auc[0]:.2f} here: --model {better.model}"
    if settings.max_minutes == 0 or settings.max_pairs == 0:
        budget = (
            f"budget 0: {who} is not asked; every pair the free stages leave keeps the estimate's prior P "
            "(what narrows it: a budget, --max-minutes M; a served model, --backend openai; people answering the "
            "review queue's random share)"
        )
        if settings.refine:
            return replace(settings, refine=None), [quality, budget]
        return replace(settings, spec=spec.within_budget(0)), [quality, budget]
    if settings.max_minutes is not None:
        budget = f"budget: {settings.max_minutes:g} minutes of pool judging by {who} (its fixed costs apart)"
        rate = measured_rate(ds.name, name, spec.llm.model)
        if rate is None:
            budget += "; its seconds per pair were never measured: the first pair measures them"
        else:
            pairs = int(60 * settings.max_minutes / rate[0])
            budget += f": about {pairs} pairs at the {rate[0]:g} s per pair measured {rate[1]} on 2 cores"
            budget += judge_traits(name).budget_note
    elif settings.max_pairs is not None:
        budget = f"budget: {settings.max_pairs} pool pairs for {who}"
    else:
        budget = f"budget: none; every pair the free stages leave goes to {who} (--max-minutes M bounds it)"
    return settings, [quality, budget]


def _label_stamp(ws: Workspace, ds: Dataset, paths: LabelPaths, settings: LabelStageSettings) -> StageStamp | None:
    """The stage's stamp over its settings, the runs, the label folder, the audit report and the reference (with
    the fits kept beside it)."""
    if settings.stamp is None:
        return None
    given = settings.answer_reference
    reference = [Path(given), Path(given).parent / "fits"] if given else []
    read = (ws.runs(ds.slug), paths.labels.parent, paths.audit_report, *reference)
    draws = ws.qrels_draws(ds.slug)  # bridge eval's, beside the labels
    return stage_stamp(paths.labels.parent, "label", settings.stamp, read, ignore=(draws,), dataset=ds.fingerprint)


def _label_options(
    ws: Workspace, ds: Dataset, settings: LabelStageSettings, llm: Any, say: Callable[[str], None]
) -> LabelOptions:
    """The label run's options: the budget, the value order (when runs/<ds>/ has runs), the executor and the costly
    answer judge of ``refine`` (sharing the chain's ``llm``)."""
    spec = settings.spec
    options = LabelOptions(
        restart=settings.restart,
        batch_pairs=settings.batch_pairs,
        audit=spec.audit,
        pricing=settings.pricing,
        progress=spec.progress,
        max_pairs=settings.max_pairs,
        max_minutes=settings.max_minutes,
    )
    if settings.value is not None:
        runs = read_runs(ws.runs(ds.slug))
        if runs:
            options = replace(options, runs=runs, families=run_families(ws.runs(ds.slug)), value=settings.value)
        else:
            say(f"no runs in {ws.runs(ds.slug)}: every pool pair is judged (no value order)")
    if settings.ray is not None:
        from bridge.label.distributed import ray_runners

        runner, scorer = ray_runners(spec, settings.ray.dataset, settings.ray.config)
        options = replace(options, runner=runner, scorer=scorer)
    if settings.refine is not None:
        if settings.refine.name in costly_answer_judges() and not settings.answer_reference:
            raise BridgeError("--refine needs --reference: the costly answer judge is calibrated on it")
        if judge_traits(settings.refine.name).refines_exemplar and not exemplar_wanted(spec, ds):
            raise BridgeError(
                f"--refine {settings.refine.name} re-judges what the exemplar stage decided, and the stage is off here "
                "(--exemplar off, a single --judge, or a dataset with answers): add --exemplar on"
            )
        options = replace(options, refine=build_refine_chain(spec, settings.refine, ds, llm))
    return options


def endpoint_lines(llm: Any) -> list[str]:
    """Per-endpoint calls, errors and tokens/s of an ``openai`` backend (none for embedded backends)."""
    backend = getattr(llm, "backend", llm)
    rows = backend.summary() if backend is not None and hasattr(backend, "summary") else []
    return [
        f"endpoint {r['endpoint']}: {r['calls']} calls, {r['errors']} errors, "
        f"{r['prompt_tokens'] + r['completion_tokens']} tokens, {r['tokens_per_s']:.0f} tokens/s"
        for r in rows
    ]
