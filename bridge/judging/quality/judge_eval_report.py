"""What ``bridge judge-eval`` writes: the quality table (terminal and CSV), judge-eval.md with its confusion
matrices, injection flips and the adapter section, the adapter's learning curve as CSV, and the reliability figure.

Apart from the measuring (:mod:`bridge.judging.quality.judge_eval`) so that a report can change without touching
how judges are run.
"""

from __future__ import annotations

import csv
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from matplotlib.figure import Figure

from bridge.core.figures import save_png
from bridge.core.fsio import atomic_write
from bridge.core.layout import ADAPTER_CURVE_CSV
from bridge.judging.fitting.score_maps import Reliability, reliability
from bridge.judging.learned.learning_curve import CurvePoint
from bridge.judging.quality.adapter_eval import AdapterEvaluation, adapter_lines
from bridge.judging.quality.judge_eval import InjectionResult, JudgeQuality, load_injections

PAPER_REFERENCE = (
    "Reference points (DREAM paper, Llama-3.3-70B-Instruct, 700 expert-labeled triplets): "
    "DREAM 95.2% bAcc on non-escalated pairs at 3.5% escalation; single LLM judge (LLMJudge prompt) "
    "73.9% bAcc; LARA (confidence escalation) 82.1% at 3.5%."
)


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"


def _num(value: float | None, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _interval(interval: tuple[float, float] | None) -> str:
    return "-" if interval is None else f"{interval[0]:.3f}-{interval[1]:.3f}"


def report_rows(qualities: Sequence[JudgeQuality]) -> list[dict[str, str]]:
    rows = []
    for q in qualities:
        per_pair = max(q.pairs, 1)
        rows.append(
            {
                "method": q.method,
                "pairs": str(q.pairs),
                "recall_irrelevant": _num(q.recall_irrelevant),
                "recall_relevant": _num(q.recall_relevant),
                "balanced_accuracy": _num(q.balanced_accuracy),
                "balanced_accuracy_ci": _interval(q.agreement.interval("balanced_accuracy")),
                "escalation_ratio": _num(q.escalation_ratio),
                "cohen_kappa": _num(q.kappa),
                "cohen_kappa_ci": _interval(q.agreement.interval("kappa")),
                "auc_p_yes": _num(q.auc),
                "auc_p_yes_ci": _interval(q.auc_interval),
                "ece": _num(q.ece),
                "brier": _num(q.brier),
                "tp": str(q.count(True, 1)),
                "fn": str(q.count(True, 0)),
                "fp": str(q.count(False, 1)),
                "tn": str(q.count(False, 0)),
                "escalated": str(q.escalated),
                "calls_per_pair": f"{q.calls / per_pair:.2f}",
                "prompt_tokens_per_pair": f"{q.prompt_tokens / per_pair:.0f}",
                "completion_tokens_per_pair": f"{q.completion_tokens / per_pair:.0f}",
                "seconds_per_pair": f"{q.compute_s / per_pair:.2f}",
            }
        )
    return rows


def quality_table_lines(qualities: Sequence[JudgeQuality]) -> list[str]:
    """The terminal's table of judge quality (the report's main table, narrower)."""
    lines = [
        f"{'method':14s} {'bAcc [95% CI]':>20s} {'rec0':>6s} {'rec1':>6s} {'escal':>6s} {'kappa [95% CI]':>21s} "
        f"{'AUC [95% CI]':>20s} {'calls':>6s} {'s/pair':>7s}"
    ]
    for r in report_rows(qualities):
        bacc = f"{r['balanced_accuracy']} [{r['balanced_accuracy_ci']}]"
        kappa = f"{r['cohen_kappa']} [{r['cohen_kappa_ci']}]"
        auc = f"{r['auc_p_yes']} [{r['auc_p_yes_ci']}]"
        lines.append(
            f"{r['method']:14s} {bacc:>20s} {r['recall_irrelevant']:>6s} {r['recall_relevant']:>6s} "
            f"{r['escalation_ratio']:>6s} {kappa:>21s} {auc:>20s} {r['calls_per_pair']:>6s} "
            f"{r['seconds_per_pair']:>7s}"
        )
    return lines


@dataclass(frozen=True)
class JudgeEvalReport:
    """What judge-eval's report (``<name>.md`` and ``<name>.csv`` beside ``out_dir``) says."""

    dataset: str
    """The dataset's name."""
    model: str
    qualities: Sequence[JudgeQuality]
    population: str
    """The line that says what the pairs are (:attr:`SampleConfig.population` for a balanced sample)."""
    injections: Sequence[InjectionResult] = ()
    adapter: AdapterEvaluation | None = None
    reliability_png: Path | None = None
    name: str = "judge-eval"
    """The report's file stem."""
    appendix: Sequence[str] = ()
    """Lines after the main table (per kind of hole)."""


def write_report(out_dir: Path, report: JudgeEvalReport) -> tuple[Path, Path]:
    """The report's markdown and CSV beside ``out_dir`` (and the adapters' learning curve, when measured)."""
    rows = report_rows(report.qualities)
    csv_path = out_dir.parent / f"{report.name}.csv"
    md_path = out_dir.parent / f"{report.name}.md"
    with atomic_write(csv_path) as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]) if rows else ["method"])
        writer.writeheader()
        writer.writerows(rows)
    lines = _report_head(report, rows)
    if report.reliability_png is not None:
        lines += ["", f"![Reliability diagram]({report.reliability_png.relative_to(md_path.parent).as_posix()})"]
    lines += ["", "Confusion matrices (rows: human, columns: judge; undecided = escalated or unparseable):", ""]
    lines += [line for q in report.qualities for line in _confusion_lines(q)]
    if report.injections:
        lines += _injection_lines(report.injections)
    if report.adapter is not None:
        lines += adapter_lines(report.adapter)
        _write_curve(out_dir.parent / ADAPTER_CURVE_CSV, report.adapter.curve)
    lines += [PAPER_REFERENCE, ""]
    with atomic_write(md_path) as handle:
        handle.write("\n".join(lines))
    return md_path, csv_path


def _report_head(report: JudgeEvalReport, rows: Sequence[Mapping[str, str]]) -> list[str]:
    """The report's title, what its pairs and figures are, the main table and the appendix."""
    lines = [
        f"# Judge quality on {report.dataset}",
        "",
        report.population,
        f"Model `{report.model}`.",
        "Balanced accuracy, recalls and kappa are computed on the pairs a method decided; escalated pairs",
        "(DREAM's disagreements, parse failures) count in the escalation ratio. Seconds are model time per pair",
        "(prompt evaluation and generation) on the machine that computed the answers, also for answers now served",
        "from the response cache.",
        "",
        "Intervals: bAcc and kappa 95% Jeffreys-posterior intervals, AUC a 95% stratified bootstrap interval.",
        "",
        "| method | bAcc [95% CI] | recall irrel. | recall rel. | escalation | kappa [95% CI] | AUC P(yes) [95% CI] "
        "| ECE | Brier | calls/pair | tokens/pair (prompt+gen) | s/pair |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['method']} | {r['balanced_accuracy']} [{r['balanced_accuracy_ci']}] | {r['recall_irrelevant']} | "
            f"{r['recall_relevant']} | {r['escalation_ratio']} | {r['cohen_kappa']} [{r['cohen_kappa_ci']}] | "
            f"{r['auc_p_yes']} [{r['auc_p_yes_ci']}] | {r['ece']} | {r['brier']} | {r['calls_per_pair']} | "
            f"{r['prompt_tokens_per_pair']}+{r['completion_tokens_per_pair']} | {r['seconds_per_pair']} |"
        )
    lines += [
        "",
        "ECE (10 equal-width bins) and Brier score measure how well P(relevant) matches the observed share of "
        "relevant pairs: `calibrated` and `cascade` use the calibrated one-pass probability (fitted on other "
        "known pairs), `llmjudge` its raw P(true), `dream` Agent A's first-round P(yes).",
        *report.appendix,
    ]
    return lines


def _confusion_lines(q: JudgeQuality) -> list[str]:
    return [
        f"**{q.method}**",
        "",
        "| human \\ judge | relevant | not relevant |",
        "|---|---|---|",
        f"| relevant | {q.count(True, 1)} | {q.count(True, 0)} |",
        f"| not relevant | {q.count(False, 1)} | {q.count(False, 0)} |",
        f"| undecided | {q.escalated} | |",
        "",
    ]


def _injection_lines(injections: Sequence[InjectionResult]) -> list[str]:
    lines = [
        "## Prompt injection",
        "",
        'Chunks judged not relevant by humans, with an instruction to answer "yes" appended '
        f"({len(load_injections())} variants, `bridge/prompts/injections.txt`).",
        "",
        "| method | pairs compared | label flips | flips to relevant | flip rate |",
        "|---|---|---|---|---|",
    ]
    lines += [f"| {i.method} | {i.compared} | {i.flipped} | {i.to_relevant} | {_pct(i.rate)} |" for i in injections]
    return [*lines, ""]


CURVE_FIELDS = (
    "family",
    "n",
    "topics",
    "test_pairs",
    "balanced_accuracy",
    "balanced_accuracy_ci",
    "kappa",
    "kappa_ci",
    "auc",
    "seconds",
)


def _write_curve(path: Path, curve: Sequence[CurvePoint]) -> None:
    """The adapters' learning curve as CSV (one row per family and size)."""
    with atomic_write(path) as handle:
        writer = csv.DictWriter(handle, fieldnames=list(CURVE_FIELDS))
        writer.writeheader()
        for p in curve:
            a = p.agreement
            writer.writerow(
                {
                    "family": p.family,
                    "n": p.n,
                    "topics": p.topics,
                    "test_pairs": p.test_pairs,
                    "balanced_accuracy": _num(a.balanced_accuracy),
                    "balanced_accuracy_ci": _interval(a.interval("balanced_accuracy")),
                    "kappa": _num(a.kappa),
                    "kappa_ci": _interval(a.interval("kappa")),
                    "auc": _num(p.auc),
                    "seconds": f"{p.seconds:.1f}",
                }
            )


CURVE_COLORS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd")


def reliability_figure(qualities: Sequence[JudgeQuality], path: Path) -> Path | None:
    """The reliability diagram of every judge that gives a P(relevant) for each pair (None if none does)."""
    curves = {
        q.method: reliability(q.p_yes, q.truth) for q in qualities if q.scored and not q.method.startswith("lara")
    }
    return plot_reliability(curves, path) if curves else None


def plot_reliability(curves: Mapping[str, Reliability], path: Path) -> Path:
    """Reliability diagram: per judge, the observed share of relevant pairs against the mean predicted
    P(relevant) in each probability bin (``curves``: judge -> a ``Reliability``); the diagonal is perfect."""
    fig = Figure(figsize=(5, 4.6), layout="constrained")
    ax = fig.add_subplot()
    ax.plot([0, 1], [0, 1], color="#bbbbbb", linestyle="--", label="perfectly calibrated")
    for color, (name, r) in zip(CURVE_COLORS * 3, curves.items(), strict=False):
        points = [(p, o) for p, o in zip(r.mean_predicted, r.observed, strict=True) if p is not None]
        if points:
            ece = "" if r.ece is None else f" (ECE {r.ece:.3f})"
            ax.plot(*zip(*points, strict=True), marker="o", color=color, label=name + ece)
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.set_xlabel("predicted P(relevant), bin mean")
    ax.set_ylabel("observed share relevant (human labels)")
    ax.set_title("Reliability of the judges' probabilities")
    ax.grid(alpha=0.3)
    ax.legend(fontsize="small")
    return save_png(fig, path)
