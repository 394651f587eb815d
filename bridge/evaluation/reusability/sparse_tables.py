"""The sparse-judgment benchmark's figures over its cases and the tables ``python -m bench sparse`` prints: per
configuration and measure, Kendall's tau, errors, coverage and width (:func:`table`), what the estimate decides
(:func:`verdict_table`) and the forecast against what happened (:func:`forecast_table`). Apart from
:mod:`bridge.evaluation.reusability.sparse_cuts`, which runs the cases: these only read their results.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from bridge.evaluation.reusability.sparse_cuts import DECIDED_GAP, CaseResult
from bridge.evaluation.scoring.rankcorr import kendall_tau


@dataclass(frozen=True)
class Figures:
    """One configuration and measure over its cases: the mean and the spread over cases of each figure."""

    config: str
    measure: str
    cases: int
    tau_holey: list[float]
    tau_estimate: list[float]
    error_holey: list[float]
    error_estimate: list[float]
    error_oracle: list[float]
    covered: int
    systems: int
    width: float
    label_minutes: float
    """Mean wall-clock minutes of the label stage per case (2 cores: its CPU budget)."""
    llm_calls: float

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def case_figures(result: CaseResult, measure: str) -> dict[str, float]:
    """Kendall's tau (holey, estimate), mean |error| (holey, estimate, oracle floor), coverage and mean width of one
    case on one measure."""
    rows = [s for s in result.scores if s.measure == measure]
    full = [s.full for s in rows]
    return {
        "tau_holey": kendall_tau(full, [s.holey for s in rows]),
        "tau_estimate": kendall_tau(full, [s.estimate for s in rows]),
        "error_holey": float(np.mean([abs(s.holey - s.full) for s in rows])),
        "error_estimate": float(np.mean([abs(s.estimate - s.full) for s in rows])),
        "error_oracle": float(np.mean([abs(s.oracle - s.full) for s in rows])),
        "covered": sum(s.covered for s in rows),
        "systems": len(rows),
        "width": float(np.mean([s.high - s.low for s in rows])),
    }


def summarize(results: Sequence[CaseResult]) -> list[Figures]:
    """Per configuration and measure: each figure per case (the spread over seeds and cuts is what is reported)."""
    out = []
    keys = dict.fromkeys((r.config, s.measure) for r in results for s in r.scores)
    for config, measure in keys:
        cases = [r for r in results if r.config == config]
        figures = [case_figures(r, measure) for r in cases]
        out.append(Figures(
            config, measure, len(figures),
            *([f[k] for f in figures] for k in ("tau_holey", "tau_estimate", "error_holey", "error_estimate",
                                                 "error_oracle")),
            sum(int(f["covered"]) for f in figures), sum(int(f["systems"]) for f in figures),
            float(np.mean([f["width"] for f in figures])),
            float(np.mean([r.label_seconds for r in cases])) / 60, float(np.mean([r.llm_calls for r in cases])),
        ))  # fmt: skip
    return out


def spread(values: Sequence[float]) -> str:
    """``0.873 [0.85, 0.90]``: the mean and the range over cases."""
    v = [x for x in values if x == x]
    if not v:
        return "n/a"
    return f"{np.mean(v):.3f} [{min(v):.3f}, {max(v):.3f}]" if len(v) > 1 else f"{v[0]:.3f}"


def table(figures: Sequence[Figures]) -> str:
    """The benchmark's table (markdown)."""
    head = (
        "| config | measure | cases | tau holey | tau estimate | error holey | error estimate | error oracle "
        "floor | covered (95%) | width | label min | LLM calls |\n|---|---|---|---|---|---|---|---|---|---|---|---|"
    )
    lines = [head]
    for f in figures:
        lines.append(
            f"| {f.config} | {f.measure} | {f.cases} | {spread(f.tau_holey)} | {spread(f.tau_estimate)} | "
            f"{spread(f.error_holey)} | {spread(f.error_estimate)} | {spread(f.error_oracle)} | "
            f"{f.covered}/{f.systems} ({f.covered / max(f.systems, 1):.2f}) | {f.width:.3f} | "
            f"{f.label_minutes:.1f} | {f.llm_calls:.0f} |"
        )
    return "\n".join(lines)


def verdict_table(results: Sequence[CaseResult], baseline: str = "bm25") -> str:
    """What the estimate decides (markdown): per configuration and measure, over its cases, the system pairs at least
    :data:`DECIDED_GAP` apart under the full judgments, the share it decides (settled or likely, a direction), the
    settled verdicts that are wrong, the share of likely verdicts that are right, and the same share decided against
    ``baseline``."""
    head = (
        f"| config | measure | pairs >= {DECIDED_GAP} apart | decided | settled wrong | likely right | "
        f"decided against {baseline} |\n|---|---|---|---|---|---|---|"
    )
    lines = [head]
    keys = dict.fromkeys((r.config, v.measure) for r in results for v in r.pairs)
    for config, measure in keys:
        pairs = [v for r in results if r.config == config for v in r.pairs if v.measure == measure]
        decided = [v for v in pairs if v.right is not None]
        settled = [v for v in decided if v.status == "settled"]
        likely = [v for v in decided if v.status == "likely"]
        against = [v for v in pairs if baseline in (v.better, v.worse)]
        lines.append(
            f"| {config} | {measure} | {len(pairs)} | {_share(len(decided), len(pairs))} | "
            f"{sum(not v.right for v in settled)} of {len(settled)} | "
            f"{_share(sum(bool(v.right) for v in likely), len(likely))} | "
            f"{_share(sum(v.right is not None for v in against), len(against))} |"
        )
    return "\n".join(lines)


def forecast_table(results: Sequence[CaseResult]) -> str:
    """The forecast against what happened (markdown): per number of more answers, the forecast made with fewer
    answers (mean interval width over systems and measures, adjacent comparisons decided) beside the cases that had
    that many, over the cuts both exist for."""
    head = (
        "| answers | cases | width forecast | width measured | decided forecast | decided measured |"
        "\n|---|---|---|---|---|---|"
    )
    lines = [head]
    by = {(r.people, r.cut.name): r for r in results}
    rows: dict[int, list[tuple[float, float, float, float]]] = {}
    for r in results:
        for f in r.forecast:
            after = by.get((r.people + int(f["answers"]), r.cut.name))
            if after is None:
                continue
            width = float(np.mean([s.high - s.low for s in after.scores]))
            rows.setdefault(after.people, []).append((f["width"], width, f["decided"], after.adjacent[0]))
    for n, values in sorted(rows.items()):
        w_f, w_m, d_f, d_m = (float(np.mean(v)) for v in zip(*values, strict=True))
        lines.append(f"| {n} | {len(values)} | {w_f:.3f} | {w_m:.3f} | {d_f:.1f} | {d_m:.1f} |")
    return "\n".join(lines)


def _share(part: int, whole: int) -> str:
    return f"{part}/{whole} ({part / whole:.2f})" if whole else "0/0"
