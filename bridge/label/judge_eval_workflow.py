"""``bridge judge-eval`` as a library function (:func:`judge_eval`): judges measured against human labels, on a
balanced sample of a dataset's judged pairs or on a labelled reference; the report written and its tables said."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from bridge.core.errors import BridgeError
from bridge.core.fsio import write_text_atomic
from bridge.core.layout import CALIBRATIONS_MD, Workspace
from bridge.datasets import Dataset
from bridge.datasets.kinds import pair_kind
from bridge.judging import JudgeContext, JudgeSpec, build_judge, judge_names
from bridge.judging.learned.adapter import TopicAdapterJudge
from bridge.judging.learned.topic_models import AdapterConfig
from bridge.judging.quality.adapter_eval import AdapterEvaluation, adapter_lines, adapter_quality, evaluate_adapter
from bridge.judging.quality.judge_eval import (
    JudgeQuality,
    KindQuality,
    ReferenceSample,
    SampleConfig,
    answer_calibrations,
    balanced_sample,
    kind_qualities,
    kind_quality_lines,
    run_judge_eval,
    run_reference_eval,
)
from bridge.judging.quality.judge_eval_report import (
    JudgeEvalReport,
    quality_table_lines,
    reliability_figure,
    write_report,
)
from bridge.judging.reference_labels import (
    read_reference,
    read_reference_design,
    read_reference_facts,
    subsample,
)
from bridge.label.chain import answer_judges
from bridge.label.judge_eval_methods import eval_methods, reference_methods
from bridge.llm import LLMConfig, open_llm


@dataclass(frozen=True)
class AdapterEvalSettings:
    """The topic adapters' part of judge-eval: their configuration and the learning curve's points."""

    config: AdapterConfig = field(default_factory=AdapterConfig)
    families: tuple[str, ...] = ("frozen-lr",)
    """Families of the learning curve."""
    sizes: tuple[int, ...] = (8, 16, 32, 64, 128)
    """Judgments per topic at each point of the learning curve."""


@dataclass(frozen=True)
class JudgeEvalSettings:
    """What ``bridge judge-eval`` measures, on what, and with which model."""

    methods: tuple[str, ...]
    """Judges to measure (:func:`eval_methods`; with ``reference``, :func:`reference_methods`)."""
    judge_spec: Callable[[str], JudgeSpec]
    """A method's judge with the command's settings (called when the method's judge is made)."""
    llm: LLMConfig
    """The model of the judges that call one (opened only if one does)."""
    reference: Path | None = None
    """Labelled answer-bearing pairs to measure on, instead of a balanced sample of the dataset's judged pairs."""
    sample: int | None = None
    """Balanced sample size (None: 200); with ``reference``, a seeded subsample of it (None: all of it)."""
    folds: int = 2
    """With ``reference``: judges that fit on known pairs are cross-fitted over this many parts of its questions."""
    threshold: int | None = None
    """The human grade counted as relevant (None: the dataset's)."""
    seed: int = 0
    calibration_sample: int = 100
    """Human-judged pairs, outside the sample, that calibrated and cascade are fitted on."""
    injection: int = 0
    """Non-relevant pairs also judged with an injected instruction."""
    adapter: AdapterEvalSettings = field(default_factory=AdapterEvalSettings)
    """The topic adapters' settings (read where ``methods`` has ``adapter``)."""
    progress: bool = True


def judge_eval(
    ws: Workspace, ds: Dataset, settings: JudgeEvalSettings, *, say: Callable[[str], None]
) -> list[JudgeQuality]:
    """Every judge of ``settings.methods`` on a balanced sample of ``ds``'s human-judged pairs (or on the reference)
    against the humans: the report under reports/<ds>/, its tables said through ``say``; returns each judge's
    quality."""
    threshold = settings.threshold if settings.threshold is not None else ds.relevance_threshold
    ds = replace(ds, relevance_threshold=threshold)
    methods = settings.methods
    known = eval_methods()
    unknown = sorted(set(methods) - set(known))
    if unknown:
        raise BridgeError(f"unknown judge(s) {', '.join(unknown)}; choose from {', '.join(known)}")
    if settings.reference is not None:
        return _judge_eval_on_reference(ws, ds, settings, settings.reference, say=say)
    sample = SampleConfig(
        200 if settings.sample is None else settings.sample,
        threshold,
        settings.seed,
        settings.injection,
        settings.calibration_sample,
        lara="lara" in methods,
    )
    judged = [m for m in methods if m not in ("adapter", "lara")]
    scorer = judge_names(scores=True)[0]
    if "lara" in methods and scorer not in judged:
        judged.insert(0, scorer)  # LARA reads the scorer's P
    needs_llm = any(settings.judge_spec(m).calls_llm() for m in judged)
    llm = open_llm(settings.llm, ws.llm_cache, progress=settings.progress) if needs_llm else None
    context = JudgeContext(ds, None, llm, ws.cache_dir, settings.progress)
    judges = {m: (lambda m=m: build_judge(settings.judge_spec(m), context)) for m in judged}
    out_dir = ws.reports(ds.slug) / "judge-eval"
    qualities, injections = run_judge_eval(ds, judges, out_dir, sample, progress=settings.progress)
    adapter_eval = None
    if "adapter" in methods:
        adapter_eval = _adapter_eval(ws, ds, settings, sample, qualities)
    model = llm.model_id if llm is not None else "-"
    figure = reliability_figure(qualities, out_dir.parent / "figures" / "reliability.png")
    report = JudgeEvalReport(ds.name, model, qualities, sample.population, injections, adapter_eval, figure)
    md, csv_path = write_report(out_dir, report)
    say(f"judge quality on {ds.name} ({sample.size} pairs, relevant = grade >= {threshold}) with {model}")
    say("\n".join(quality_table_lines(qualities)))
    for i in injections:
        say(f"injection {i.method}: {i.flipped}/{i.compared} labels flipped ({i.to_relevant} to relevant)")
    if adapter_eval is not None:
        say("\n".join(line for line in adapter_lines(adapter_eval) if line and not line.startswith("## ")))
    say(f"-> {md}\n-> {csv_path}")
    return qualities


def _adapter_eval(
    ws: Workspace, ds: Dataset, settings: JudgeEvalSettings, sample: SampleConfig, qualities: list[JudgeQuality]
) -> AdapterEvaluation:
    """The topic adapters cross-validated over every topic, their learning curves, and their row on the sample
    (appended to ``qualities``)."""
    adapter_settings = settings.adapter
    adapter = TopicAdapterJudge(ds, None, adapter_settings.config, ws.cache_dir, progress=settings.progress)
    evaluation = evaluate_adapter(
        ds, adapter, adapter_settings.families, adapter_settings.sizes, progress=settings.progress
    )
    pairs = balanced_sample(ds, sample.size, sample.threshold, sample.seed)
    qualities.append(adapter_quality(pairs, adapter, sample.seed))
    return evaluation


def _judge_eval_on_reference(
    ws: Workspace, ds: Dataset, settings: JudgeEvalSettings, path: Path, *, say: Callable[[str], None]
) -> list[JudgeQuality]:
    """``judge-eval --reference``: every judge on the reference's pairs, asked as the pipeline asks pool pairs."""
    methods = settings.methods
    known = reference_methods()
    unknown = sorted(set(methods) - set(known))
    if unknown:
        raise BridgeError(
            f"judge(s) {', '.join(unknown)} cannot be measured on a reference; choose from {', '.join(known)}"
        )
    reference, subsampled = _read_reference(ds, path, settings)
    pairs = reference.pairs
    specs = {m: replace(settings.judge_spec(m), fallback=None) for m in methods}
    needs_llm = any(spec.calls_llm() for spec in specs.values())
    llm = open_llm(settings.llm, ws.llm_cache, progress=settings.progress) if needs_llm else None
    context = JudgeContext(ds, None, llm, ws.cache_dir, settings.progress)
    judges = {m: (lambda m=m: build_judge(specs[m], context)) for m in methods}
    model_slug = re.sub(r"[^A-Za-z0-9._-]+", "-", Path(settings.llm.model).name if llm is not None else "no-llm")
    name = f"judge-eval-{path.stem}" + (f"-{len(pairs)}" if subsampled else "") + f"-{model_slug}"
    out_dir = ws.reports(ds.slug) / name
    relevant = sum(p.relevant for p in pairs)
    qualities = run_reference_eval(ds, judges, reference, out_dir, settings.folds, settings.seed, settings.progress)
    per_kind = _kind_rows(ds, path, reference, qualities)
    model = llm.model_id if llm is not None else "-"
    by_kind = _by_kind_lines(path, bool(reference.design), per_kind)
    figure = reliability_figure(qualities, out_dir.parent / "figures" / f"reliability-{name}.png")
    population = _reference_population(path, len(pairs), relevant, settings.folds)
    report = JudgeEvalReport(ds.name, model, qualities, population, (), None, figure, name, by_kind)
    md, csv_path = write_report(out_dir, report)
    say(f"judge quality on {len(pairs)} reference pairs of {ds.name} ({relevant} relevant) with {model}")
    say("\n".join(quality_table_lines(qualities)))
    say("\n".join(by_kind[1:]))
    calibrated = answer_calibrations(ds, [m for m in methods if m in answer_judges()], judges, reference)
    if calibrated:
        write_text_atomic(out_dir / CALIBRATIONS_MD, "\n".join(calibrated) + "\n")
        say("\n".join(calibrated))
    say(f"-> {md}\n-> {csv_path}" + (f"\n-> {out_dir / CALIBRATIONS_MD}" if calibrated else ""))
    return qualities


def _read_reference(ds: Dataset, path: Path, settings: JudgeEvalSettings) -> tuple[ReferenceSample, bool]:
    """The reference's pairs (a seeded subsample with ``settings.sample``), pool facts and design; whether the
    pairs are a subsample. Every pair must be a pair of ``ds``."""
    everything = read_reference(path)
    pairs = subsample(everything, settings.sample, settings.seed)
    facts = read_reference_facts(path)
    design = read_reference_design(path)
    qids = set(ds.qids)
    missing = [p for p in pairs if ds.corpus.get(p.docid) is None or p.qid not in qids]
    if missing:
        raise BridgeError(
            f"{path}: {len(missing)} pair(s) are not in {ds.name} (first: {missing[0].qid} {missing[0].docid}); "
            "is --dataset right, and is --limit off?"
        )
    return ReferenceSample(pairs, str(path), facts, design), len(pairs) < len(everything)


def _kind_rows(
    ds: Dataset, path: Path, reference: ReferenceSample, qualities: Sequence[JudgeQuality]
) -> list[KindQuality]:
    """Each judge's quality per kind of hole and over all (weighted by the sampling design, where there is one);
    the design must draw every pair as the kind the dataset makes it."""
    design: Mapping[tuple[str, str], Any] = reference.design or {}
    kinds = {(p.qid, p.docid): pair_kind(ds, p.qid, p.docid) for p in reference.pairs}
    if design:
        wrong = [k for k in kinds if k not in design or design[k].kind != kinds[k]]
        if wrong:
            raise BridgeError(
                f"{path.with_name('design.tsv')}: pair {wrong[0]} is missing from the sampling design or drawn as "
                f"another kind than the dataset makes it ({kinds[wrong[0]]!r}); {len(wrong)} such pair(s)"
            )
    weights = {key: 1.0 / design[key].probability for key in kinds if key in design}
    return [row for q in qualities for row in kind_qualities(q, kinds, weights)]


def _reference_population(path: Path, pairs: int, relevant: int, folds: int) -> str:
    """The report's line that says what the reference's pairs are and how the judges met them."""
    return (
        f"{pairs} pairs of the reference `{path}` ({relevant} relevant; labels by reading under its written "
        f"criterion: the maintainers' reading, not a crowd's), each asked as the label pipeline asks a pool pair "
        f"(behind the evidence gate, matched answers as a hint). Judges that fit on known pairs are cross-fitted "
        f"over {folds} parts of the reference's questions: every pair is scored by a judge fitted on the "
        "other parts. answer-string says relevant to every pair that holds an answer."
    )


def _by_kind_lines(path: Path, designed: bool, per_kind: Sequence[KindQuality]) -> list[str]:
    """The report's section per kind of hole (also said on the terminal, without its leading blank line)."""
    return [
        "",
        "## Per kind of hole ("
        + (f"design weights from {path.with_name('design.tsv')}" if designed else "no design.tsv: every pair weighs 1")
        + ")",
        "",
        "Cross-fitted as above. The `all` row weights each pair by its design weight (1 / inclusion probability), so "
        "it stands for the pool's answer-bearing holes, not for the sample; bAcc and kappa are of the judge's own "
        "labels; intervals: a bootstrap of questions within kinds.",
        "",
        *kind_quality_lines(per_kind),
    ]
