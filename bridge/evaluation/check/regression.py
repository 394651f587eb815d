"""Leaderboard regression check (``bridge eval check``): compare a leaderboard.csv with a saved baseline.

A regression is any of:
* a (system, measure) whose value under a checked qrels set dropped by more than the tolerance;
* a system or measure of the baseline missing from the current leaderboard;
* (unless disabled) two systems of the baseline whose order changed under a checked qrels set:
  a before b in the baseline (strictly higher value) and b strictly above a now.
Improvements, new systems and new measures are reported as notes, never as failures.

Where the current leaderboard carries estimates (``estimate``, its 5th and 95th percentiles
``estimate_q05``/``estimate_q95`` under the hole model, and the bounds ``lower``/``upper`` over every
assignment of the labels no person gave), the augmented column is compared as the estimate (the
baseline's ``estimate`` where it has one, else its augmented value), and a regression of it fails only
when it is **settled** (the upper bound lies below the baseline minus the tolerance) or **likely** (the
95th percentile does: P >= 0.95 that the score lies below it); two systems that swapped places fail
when the bounds separate them (settled) or the 5th percentile of the one now above lies above the 95th
of the other (likely). A regression the open labels could still undo is a warning.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import combinations
from pathlib import Path

from bridge.core.errors import BridgeError, InputError
from bridge.core.layout import JUDGE_AUDIT
from bridge.evaluation.rebenchmark.eval_summary import fmt_ci
from bridge.evaluation.rebenchmark.inputs import AUGMENTED
from bridge.evaluation.rebenchmark.run_scores import read_leaderboard
from bridge.judging.quality.audit_records import read_audit_report


class UntrustedLabelsError(BridgeError):
    """The augmented qrels come from a label run whose judge audit did not clear the trust bar."""


@dataclass(frozen=True)
class CheckConfig:
    tolerance: float = 0.0
    """Largest allowed drop of a value (absolute, in the measure's units)."""
    qrels: tuple[str, ...] = ("augmented",)
    """Qrels columns to check; empty: every qrels column both files have."""
    measures: tuple[str, ...] = ()
    """Measure labels to check; empty: all of the baseline's."""
    rank_order: bool = True
    """Fail when the order of two baseline systems flips."""
    settled_only: bool = True
    """With estimates in the current leaderboard: fail only on settled or likely regressions of the augmented
    column, warn on open ones."""
    systems: tuple[str, ...] = ()
    """Systems to check (others are ignored); empty: every system of the baseline. A named system missing from
    either leaderboard is an error, not a regression: a run that was never scored certifies nothing."""
    allow_untrusted_labels: bool = False
    """Check the augmented column even where scores without estimates rest on labels whose judge audit is missing
    or did not clear the trust bar (:func:`check_files`; by default such a check is refused)."""


@dataclass
class CheckResult:
    regressions: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    """Regressions the open labels could still undo (not failures)."""
    notes: list[str] = field(default_factory=list)
    checked: int = 0

    @property
    def ok(self) -> bool:
        return not self.regressions


Table = dict[tuple[str, str], dict[str, float]]
"""(system, measure) -> qrels column -> value."""


def _table(rows: Sequence[dict[str, str]], columns: Sequence[str], what: str) -> Table:
    table: Table = {}
    for line, row in enumerate(rows, start=2):
        values = {}
        for column in columns:
            try:
                values[column] = float(row[column])
            except (TypeError, ValueError):
                message = f"{what}: value {row.get(column)!r} is not a number"
                raise InputError(message, line=line, field=column) from None
        table[(row["system"], row["measure"])] = values
    return table


BOUNDED = "augmented"
"""The qrels column the estimates of a leaderboard.csv belong to."""


@dataclass(frozen=True)
class Estimate:
    """The augmented column's estimate of one (system, measure): bounds and quantiles."""

    lower: float
    estimate: float
    q05: float
    q95: float
    upper: float


def estimates_of(rows: Sequence[dict[str, str]]) -> dict[tuple[str, str], Estimate]:
    """(system, measure) -> the augmented score's estimate, where the leaderboard has one."""
    out = {}
    names = ("lower", "estimate", "estimate_q05", "estimate_q95", "upper")
    for line, row in enumerate(rows, start=2):
        cells = [row.get(n) or "" for n in names]
        if all(cells):
            try:
                out[(row["system"], row["measure"])] = Estimate(*(float(c) for c in cells))
            except ValueError:
                raise InputError("an estimate column is not a number", line=line) from None
    return out


def qrels_columns(rows: Sequence[dict[str, str]]) -> list[str]:
    """The qrels columns of a leaderboard.csv: those with a matching ``rank_<name>`` column."""
    if not rows:
        return []
    keys = list(rows[0])
    return [k for k in keys if f"rank_{k}" in keys]


def check_files(baseline: Path, current: Path, config: CheckConfig = CheckConfig()) -> CheckResult:
    """``bridge eval check``: the leaderboard.csv ``current`` against the saved ``baseline``. Estimates stand in for
    the judge audit only where every checked score has one (not AP): elsewhere augmented qrels whose labels were
    never shown to clear the trust bar are refused (:class:`UntrustedLabelsError`) unless the config allows them."""
    baseline_rows, current_rows = read_leaderboard(baseline), read_leaderboard(current)
    checked = config.qrels or tuple(qrels_columns(current_rows))
    bounds = estimates_of(current_rows)
    unbounded = sorted(
        {
            f"{r['system']} {r['measure']}"
            for r in current_rows
            if (not config.measures or r["measure"] in config.measures)
            and (not config.systems or r["system"] in config.systems)
            and not r["measure"].startswith("Judged")  # Judged@k does not depend on what the labels say
        }
        - {f"{s} {m}" for s, m in bounds}
    )
    fail_on_open = not config.settled_only
    if AUGMENTED in checked and not config.allow_untrusted_labels and (fail_on_open or unbounded):
        refuse_untrusted(current.parent / JUDGE_AUDIT, unbounded[:3] if not fail_on_open else ())
    return check_leaderboards(baseline_rows, current_rows, config)


def refuse_untrusted(audit_path: Path, unbounded: Sequence[str] = ()) -> None:
    """Stop ``eval check`` on augmented qrels whose label run did not show a judge above the trust bar
    (``unbounded``: scores without bounds that made the audit necessary, named in the error)."""
    audit = read_audit_report(audit_path)
    if audit is None:
        raise UntrustedLabelsError(
            f"no judge audit at {audit_path}: the augmented qrels' labels were never measured. Re-run `bridge "
            "label` (it audits its judge) and `bridge eval`, or pass --allow-untrusted-labels."
        )
    if not audit.get("trusted"):
        lane = audit.get("lanes", {}).get(audit.get("decisive") or "", {})
        b, interval = lane.get("balanced_accuracy"), lane.get("intervals", {}).get("balanced_accuracy")
        raise UntrustedLabelsError(
            f"refusing to check augmented qrels: {audit.get('warning') or 'the judge audit did not pass'} "
            f"(judge {audit.get('judge')}, audit bAcc {fmt_ci(b, interval)}, {audit_path}). "
            "Label with a stronger judge, or pass --allow-untrusted-labels."
            + (
                f" Scores without bounds need the audit ({', '.join(unbounded)}, ...); "
                "--measures can restrict the check to measures with estimates."
                if unbounded
                else ""
            )
        )


def check_leaderboards(
    baseline: Sequence[dict[str, str]], current: Sequence[dict[str, str]], config: CheckConfig = CheckConfig()
) -> CheckResult:
    """Every regression of ``current`` against ``baseline`` (the rows of two leaderboard.csv files)."""
    result = CheckResult()
    if config.systems:
        baseline, current = _named_systems(baseline, current, config.systems)
    base_cols, cur_cols = qrels_columns(baseline), qrels_columns(current)
    columns = list(config.qrels) or [c for c in base_cols if c in cur_cols]
    for column in columns:
        for name, cols in (("baseline", base_cols), ("current leaderboard", cur_cols)):
            if column not in cols:
                raise InputError(f"the {name} has no qrels column {column!r} (it has {', '.join(cols) or 'none'})")
    base = _table(baseline, columns, "baseline")
    cur = _table(current, columns, "current leaderboard")
    estimates = estimates_of(current) if config.settled_only else {}
    if BOUNDED in columns:  # the augmented column is compared as the estimate where the leaderboards have one
        for key, e in estimates.items():
            if key in cur:
                cur[key][BOUNDED] = e.estimate
        for key, e in estimates_of(baseline).items():
            if key in base:
                base[key][BOUNDED] = e.estimate
    measures = list(dict.fromkeys(m for _, m in base))
    for measure in sorted(set(m for _, m in cur) - set(measures)):
        result.notes.append(f"measure {measure} is new (not in the baseline)")
    if config.measures:
        unknown = sorted(set(config.measures) - set(measures))
        if unknown:
            raise InputError(f"measure(s) not in the baseline: {', '.join(unknown)}", field="measures")
        measures = list(config.measures)
    for system in sorted({s for s, _ in cur} - {s for s, _ in base}):
        result.notes.append(f"system {system} is new (not in the baseline)")
    compared = _Compared(base, cur, columns, estimates, config.tolerance)
    for measure in measures:
        systems = [s for s, m in base if m == measure]
        for system in systems:
            _check_values(result, compared, system, measure)
        if config.rank_order:
            _check_order(result, compared, [s for s in systems if (s, measure) in cur], measure)
    return result


def _named_systems(
    baseline: Sequence[dict[str, str]], current: Sequence[dict[str, str]], systems: Sequence[str]
) -> tuple[list[dict[str, str]], list[dict[str, str]]]:
    """Both leaderboards' rows of the named systems; each must be in both (else there is nothing to compare)."""
    for name, rows in (("baseline", baseline), ("current leaderboard", current)):
        absent = [s for s in systems if not any(r["system"] == s for r in rows)]
        if absent:
            advice = "score its run first: `bridge score RUN`" if rows is current else "save a baseline with it"
            raise InputError(
                f"system {absent[0]!r} is not in the {name}: it was never scored there, so there is nothing to "
                f"compare ({advice})",
                field="systems",
            )
    return [r for r in baseline if r["system"] in systems], [r for r in current if r["system"] in systems]


@dataclass(frozen=True)
class _Compared:
    """The two leaderboards' values on the checked columns, and the current one's estimates."""

    base: Table
    cur: Table
    columns: Sequence[str]
    estimates: dict[tuple[str, str], Estimate]
    tolerance: float


def _check_values(result: CheckResult, t: _Compared, system: str, measure: str) -> None:
    """A baseline system's values on one measure: missing, dropped (settled, likely or open) or improved."""
    if (system, measure) not in t.cur:
        result.regressions.append(f"{system} {measure}: missing from the current leaderboard")
        return
    for column in t.columns:
        before, after = t.base[(system, measure)][column], t.cur[(system, measure)][column]
        result.checked += 1
        if after < before - t.tolerance:
            text = (
                f"{system} {measure} ({column}): {before:.4f} -> {after:.4f} "
                f"(dropped {before - after:.4f} > tolerance {t.tolerance:g})"
            )
            e = t.estimates.get((system, measure)) if column == BOUNDED else None
            if e is None:
                result.regressions.append(text)
            elif e.upper < before - t.tolerance:
                result.regressions.append(f"{text}; settled: upper bound {e.upper:.4f}")
            elif e.q95 < before - t.tolerance:
                result.regressions.append(f"{text}; likely: 95th percentile {e.q95:.4f}")
            else:
                result.warnings.append(
                    f"{text}; open: the open labels allow up to {e.upper:.4f} (95th percentile {e.q95:.4f})"
                )
        elif after > before + t.tolerance:
            result.notes.append(f"{system} {measure} ({column}): improved {before:.4f} -> {after:.4f}")


def _check_order(result: CheckResult, t: _Compared, common: Sequence[str], measure: str) -> None:
    """Two systems of both leaderboards that swapped places on one measure (settled, likely or open)."""
    base, cur = t.base, t.cur
    for column in t.columns:
        for a, b in combinations(common, 2):
            was = base[(a, measure)][column] - base[(b, measure)][column]
            now = cur[(a, measure)][column] - cur[(b, measure)][column]
            if was * now < 0:
                high, low = (a, b) if was > 0 else (b, a)
                text = (
                    f"{measure} ({column}): ranking changed, {low} now above {high} "
                    f"(baseline {base[(high, measure)][column]:.4f} > {base[(low, measure)][column]:.4f}, "
                    f"now {cur[(high, measure)][column]:.4f} < {cur[(low, measure)][column]:.4f})"
                )
                up, down = t.estimates.get((low, measure)), t.estimates.get((high, measure))
                if column != BOUNDED or up is None or down is None:
                    result.regressions.append(text)
                elif up.lower > down.upper:
                    result.regressions.append(f"{text}; settled: {low}'s lower bound is above {high}'s upper")
                elif up.q05 > down.q95:
                    result.regressions.append(f"{text}; likely: {low}'s 5th percentile is above {high}'s 95th")
                else:
                    result.warnings.append(f"{text}; open: the open labels could undo it")
