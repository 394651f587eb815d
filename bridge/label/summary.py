"""What a label run did, in counts, calls, seconds and dollars: the lines ``bridge label`` prints last."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from bridge.core.label_records import LabelRecord, Usage
from bridge.judging.quality.audit_report import AuditReport


@dataclass
class LabelSummary:
    pool_pairs: int = 0
    resumed: int = 0
    judged: int = 0
    routes: Counter[str] = field(default_factory=Counter)
    labels: Counter[str] = field(default_factory=Counter)
    usage: Usage = field(default_factory=Usage)
    audit_usage: Usage = field(default_factory=Usage)
    wall_s: float = 0.0
    cost: float = 0.0
    evidence_lines: list[str] = field(default_factory=list)
    audit: AuditReport | None = None
    left_by_budget: int = 0
    """Pool pairs not judged because the budget (--max-pairs / --max-minutes) ran out."""
    left_at_value_0: int = 0
    """Pool pairs not asked because their label can move no open comparison (they keep their calibrated P)."""
    calibration_usage: Usage = field(default_factory=Usage)
    """LLM work of the cascade's calibration on known pairs."""
    scoring_usage: Usage = field(default_factory=Usage)
    """LLM work of the cascade's scoring pass over the pool pairs this run judges (their records later find those
    calls in the response cache, so ``usage`` alone would not count them)."""
    fixed_s: float = 0.0
    """Seconds of fixed cost (the judges' preparation, the audit), outside the budget's clock."""
    free_s: float = 0.0
    """Seconds the free stages took over the pool (and the value order), before the budget's clock starts."""
    pool_s: float = 0.0
    """Seconds costly judges spent on pool pairs (what the budget counts)."""
    refined: int = 0
    """Pairs a costly judge re-judged this run."""
    refine_left: int = 0
    """Pairs of positive value the budget left to a later run of the costly judge."""
    refine_judge: str = ""
    """The costly judge's name."""

    @property
    def llm_calls(self) -> int:
        """Calls this run made to the model (calibration, scoring pass, pool pairs, audit), none counted twice."""
        return sum(u.calls for u in (self.calibration_usage, self.scoring_usage, self.usage, self.audit_usage))

    @property
    def cached_calls(self) -> int:
        """Requests answered from the response cache, the pool's repeats of the scoring pass included."""
        parts = (self.calibration_usage, self.scoring_usage, self.usage, self.audit_usage)
        return sum(u.cached_calls for u in parts)

    def add(self, record: LabelRecord) -> None:
        self.judged += 1
        self.routes[record.route] += 1
        self.labels["undecided" if record.label is None else str(record.label)] += 1
        self.usage = self.usage + record.usage

    @property
    def refine_line(self) -> str:
        left = (
            f" ({self.refine_left} of positive value left by the budget; raise it to go on)" if self.refine_left else ""
        )
        return f"refined by the costly judge {self.refine_judge}: {self.refined} pairs in value order{left}"

    def lines(self) -> list[str]:
        u = self.usage + self.scoring_usage
        per_pair = u.calls / self.judged if self.judged else 0.0
        a = self.audit_usage
        out = [
            f"pairs in pool:        {self.pool_pairs}",
            f"already labeled:      {self.resumed} (resumed)",
            f"judged now:           {self.judged}"
            + (
                f" ({self.left_by_budget} left unjudged by the budget; raise it to go on)"
                if self.left_by_budget
                else ""
            )
            + (f" ({self.left_at_value_0} of value 0 not asked)" if self.left_at_value_0 else ""),
            f"  relevant (1):       {self.labels['1']}",
            f"  not relevant (0):   {self.labels['0']}",
            f"  escalated / failed: {self.labels['undecided']}",
            *([self.refine_line] if self.refined or self.refine_left else []),
            "  routes:             " + (", ".join(f"{r}={n}" for r, n in sorted(self.routes.items())) or "-"),
            f"LLM calls made:       {self.llm_calls} (calibration {self.calibration_usage.calls}, scoring pass "
            f"{self.scoring_usage.calls}, pool pairs {self.usage.calls}, audit {a.calls}); {self.cached_calls} "
            "requests answered from the cache",
            f"pool LLM calls:       {u.calls} ({per_pair:.2f} per judged pair, scoring pass included)",
            f"tokens:               {u.prompt_tokens} prompt + {u.completion_tokens} completion (pool); "
            f"{a.prompt_tokens} + {a.completion_tokens} (audit)",
            f"wall time:            {self.wall_s:.1f} s (fixed cost {self.fixed_s:.1f} s: preparation and audit, "
            f"reused by later runs; free stages {self.free_s:.1f} s; costly judges on pool pairs {self.pool_s:.1f} s: "
            "what the budget counts)",
            f"cost estimate:        ${self.cost:.4f}",
        ]
        out += self.evidence_lines
        if self.audit is not None:
            out += self.audit.lines()
        return out
