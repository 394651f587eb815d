"""A hole calibration's own check of its intervals (random half splits of its read sample), as the report states it:
the covered column of the quality tables, and the warning where a check covers less than the nominal 95%."""

from __future__ import annotations

import math
from collections.abc import Mapping
from statistics import NormalDist
from typing import Any

from bridge.estimate.calibration import NOMINAL_COVERAGE
from bridge.judging.fitting.hole_fit import HoleCalibrationConfig


def too_narrow_by(coverage: float, nominal: float = NOMINAL_COVERAGE) -> float:
    """How many times wider a normal interval that covers ``coverage`` must be to cover ``nominal``."""
    normal = NormalDist()
    return normal.inv_cdf((1 + nominal) / 2) / normal.inv_cdf((1 + max(min(coverage, 0.999), 0.01)) / 2)


def _short_of_nominal(q: Mapping[str, Any]) -> bool:
    """A check that covers less than the nominal 95% by more than twice its own sampling error (the standard error of
    a share over its half splits: a check that truly covers 95% is flagged about once in forty)."""
    checks = int(q.get("checks") or 0)
    error = math.sqrt(NOMINAL_COVERAGE * (1 - NOMINAL_COVERAGE) / checks) if checks else 0.0
    return q["coverage"] < NOMINAL_COVERAGE - 2 * error


def covered(q: Mapping[str, Any]) -> str:
    """A check's coverage, with the kind's level spread and the coverage the bootstrap's draws alone gave."""
    if q.get("coverage") is None:
        return ""
    extra = [f"level sd {q['level_sd']:.1f}"] if q.get("level_sd") is not None else []
    if q.get("coverage_unwidened") is not None:
        extra.append(f"{100 * q['coverage_unwidened']:.0f}% without")
    return f"{100 * q['coverage']:.0f}%" + (f" ({'; '.join(extra)})" if extra else "")


COVERED_MEANS = (
    f"Covered: share of the half splits of the read sample that check it ({HoleCalibrationConfig().splits // 2} in a "
    "default fit) whose held-out share relevant lies in the 95% interval the other half predicts, each kind's level "
    "drawn with the "
    "spread the other half of the splits chose (level sd, a logit sd; without: the bootstrap's draws alone). The "
    "estimate draws the same spreads."
)


def coverage_checks(calibrations: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """A hole calibration's own check of its intervals (random half splits of its read sample: does the other half's
    share relevant fall in the 95% interval one half predicts?), said where it covers less than the nominal 95% by
    more than twice its sampling error."""
    out = []
    for name, c in calibrations.items():
        strata = [q for q in (c.get("strata") or []) if q.get("coverage") is not None]
        short = [q for q in strata if _short_of_nominal(q) and (q["stratum"] == "all" or q.get("kind"))]
        if not short:
            continue
        said = "; ".join(
            f"{q['stratum']}: {100 * q['coverage']:.0f}% (about {too_narrow_by(q['coverage']):.1f}x too narrow)"
            for q in short
        )
        out.append(
            f"The {name} calibration's own check of its intervals (random half splits of its read sample: the 95% "
            f"interval one half predicts for the other half's share relevant) covers less than the nominal 95%, by "
            f"more than twice the check's own sampling error: {said}. The intervals resting on it are narrower than "
            "they should be by about that factor."
        )
    return out
