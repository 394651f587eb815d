"""What the hole model draws a pair's P from, without the model itself: the facts of a pair a calibration reads
(:class:`PairFacts`), a calibration's coefficient draws (:class:`Calibration`) and the file a label run keeps them in.

Judges that fit a calibration (the answer judges, the exemplar stage, the topic adapters) import this module alone;
the model that applies the calibrations to the open pairs is :mod:`bridge.estimate.holes`.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from bridge.core.errors import InputError
from bridge.core.fsio import read_utf8, write_json_atomic
from bridge.core.label_records import LabelRecord
from bridge.datasets.kinds import ALL, kind_of
from bridge.datasets.kinds import FACTS as KIND_FACTS

Pair = tuple[str, str]
INTERCEPT = "1"
GATE, ADAPTER, LLM, PRIOR, UNPOOLED, PEOPLE = "gate", "adapter", "llm", "prior", "unpooled", "people"
UNMEASURED = "unmeasured"
"""Open pairs of a topic that no stage calibrated and whose qrels judge no ranked pair non-relevant: nothing measured
says how many of its holes are relevant, so their share is anywhere in (0, 1) (:func:`uninformed_calibration`)."""
CALIBRATION_PHRASES = {
    GATE: "the evidence gate (no answer string in the passage; P from its measured miss rate)",
    ADAPTER: "topic adapters (calibrated on their topic's judged pairs)",
    LLM: "the LLM judge (calibrated on known pairs)",
    PRIOR: "no measured stage (the topic's prior)",
    UNMEASURED: "nothing measured (positives-only qrels: their share relevant anywhere in 0-1)",
    UNPOOLED: "outside the pool (the topic's prior)",
}
"""What the report says of the holes each of the estimate's own calibrations filled (a judge's own stages describe
themselves: :func:`bridge.judging.base.describe_stage`)."""
UNCALIBRATED = (GATE, PRIOR, UNPOOLED, UNMEASURED)
"""Groups whose P no judge calibrated on pairs (the gate's comes from its miss rate; the others are guesses)."""
RANDOM_SAMPLING = "random"
"""``details["sampling"]`` of a people's label drawn at random from the open pairs (usable for calibration)."""
KIND_PREFIX = "kind="
"""A feature ``kind=NAME``: 1 for a pair of that kind of hole (:mod:`bridge.datasets.kinds`), a sampling design's
indicator."""


def sigmoid(z: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-np.clip(z, -30.0, 30.0)))


def logit(p: float) -> float:
    p = min(max(float(p), 1e-6), 1 - 1e-6)
    return math.log(p / (1 - p))


@dataclass(frozen=True)
class PairFacts:
    """What a calibration may read about a pair: the label and P its stage gave, its place in the pool, and any
    feature the judge recorded (``details["features"]``)."""

    label: int | None = None
    p: float | None = None
    systems: tuple[str, ...] = ()
    min_rank: int | None = None
    extra: Mapping[str, float] = field(default_factory=dict)

    @classmethod
    def of(cls, record: LabelRecord) -> PairFacts:
        extra = dict(record.details.get("features") or {}) if isinstance(record.details.get("features"), dict) else {}
        adapter = record.details.get("adapter")
        if isinstance(adapter, dict) and "trained_on" in adapter:  # a topic adapter: its topic's prevalence
            extra.setdefault("logit_prior", prior_logit(adapter["relevant_in_training"], adapter["trained_on"]))
        return cls(record.label, record.p_yes, tuple(record.systems), record.min_rank, extra)

    def value(self, name: str) -> float:
        """One feature by name: ``1``, ``logit_p``, ``label``, ``log_systems`` (log of how many systems pooled
        the pair), ``log_rank`` (log of its best rank), ``pooled_by:SYSTEM``, a recorded feature (a kind's facts
        among them, :mod:`bridge.datasets.kinds`), or ``A*B``, the product of two of these (a kind's own slope)."""
        if "*" in name and name not in self.extra:
            left, right = name.split("*", 1)
            return self.value(left) * self.value(right)
        if name.startswith(KIND_PREFIX):
            if not any(fact in self.extra for fact in KIND_FACTS):
                raise KeyError(
                    f"no feature {name!r} for this pair: its record holds no kind facts (bridge.datasets.kinds)"
                )
            return float(kind_of(self.extra) == name[len(KIND_PREFIX) :])
        if name == INTERCEPT:
            return 1.0
        if name == "logit_p":
            return logit(0.5 if self.p is None else self.p)
        if name == "label":
            return float(self.label or 0)
        if name == "log_systems":
            return math.log(max(len(self.systems), 1))
        if name == "log_rank":
            return math.log(max(self.min_rank or 1, 1))
        if name.startswith("pooled_by:"):
            return float(name.split(":", 1)[1] in self.systems)
        if name in self.extra:
            return float(self.extra[name])
        raise KeyError(f"no feature {name!r} for this pair")


NOMINAL_COVERAGE = 0.95
"""What a 95% interval must cover: a hole-like fit's level spreads are chosen to reach it on its held-out check, and
the report flags a check below it."""


def prior_logit(relevant: int, judged: int) -> float:
    """The logit of a topic's share of relevant judgments (Jeffreys-smoothed): a class-balanced classifier's P
    assumes an even share, and this moves it to the topic's."""
    return logit((relevant + 0.5) / (judged + 1.0))


def pool_candidates(systems: Iterable[str]) -> tuple[str, ...]:
    """The strata a hole-like calibration may pick from: how many systems pooled a pair, its best rank, and
    whether each system pooled it."""
    return ("log_systems", "log_rank", *(f"pooled_by:{s}" for s in sorted(set(systems))))


@dataclass(frozen=True)
class Calibration:
    """P(relevant) = sigmoid(x @ beta) for a pair's features x, beta drawn from ``draws`` (one row per draw)."""

    name: str
    features: tuple[str, ...]
    draws: np.ndarray
    population: str
    """The pairs it rests on, in words (the report shows it)."""
    hole_like: bool = False
    """Fitted on a random sample of holes (else on known pairs: its logit gets the transfer shift)."""
    quality: Mapping[str, Any] = field(default_factory=dict)
    """Cross-fitted quality per stratum and how the strata were chosen (for the report)."""
    transfer_sd: float | None = None
    """Logit shift (sd) common to all its pairs where it is applied to holes of another collection than it was
    fitted on (a shipped fit); None: the hole model's ``transfer_sd`` for a calibration on known pairs, 0 for a
    hole-like one."""
    topic_sd: float = 0.0
    """Logit shift (sd) of each topic's pairs on their own: how far a topic's share of relevant holes strays from
    what the features say (measured where it was fitted)."""
    family_sd: float = 0.0
    """Logit shift (sd) of each retrieval family's holes on their own (a hole moves with the mean of the shifts of
    the families that pooled it): how far the holes learned retrievers find stray from what the features say, and
    lexical ones' (measured on the benchmark, :func:`bridge.judging.learned.exemplar_fitting.family_spread`)."""
    term_priors: Mapping[str, tuple[float, float]] = field(default_factory=dict)
    """Prior (mean, sd) of a recalibration term's coefficient (:data:`bridge.estimate.level.TERMS`) measured where it
    was fitted, by feature; a term not named here takes the default prior."""
    kind_sd: Mapping[str, float] = field(default_factory=dict)
    """Logit shift (sd) common to each kind's pairs (:mod:`bridge.datasets.kinds`), and ``all``: one common to every
    pair (the only one where the sample held one kind): how far a hole-like fit's level is from the truth beyond
    what its bootstrap says, chosen where it was fitted so that its held-out check covers at the nominal rate
    (:mod:`bridge.judging.fitting.hole_calibration`). :meth:`widened` draws it."""
    level_shifts: np.ndarray | None = field(default=None, compare=False, repr=False)
    """The logit shift common to all pairs that each draw's intercept carries (a level drawn because nothing, or
    little, measured it here), by draw; None: none drawn. :meth:`central` puts every draw at its median."""
    spread: np.ndarray | None = field(default=None, compare=False, repr=False)
    """(draws x features) what :meth:`widened` added to each draw (each kind's level shift); :meth:`central` puts it
    at its median (0 until people's answers measure it). None: nothing added."""

    def __post_init__(self) -> None:
        draws = np.atleast_2d(np.asarray(self.draws, dtype=float))
        if draws.shape[1] != len(self.features):
            raise ValueError(f"calibration {self.name}: {draws.shape[1]} coefficients, {len(self.features)} features")
        object.__setattr__(self, "draws", draws)

    def rows(self, facts: Sequence[PairFacts]) -> np.ndarray:
        return np.array([[f.value(n) for n in self.features] for f in facts], dtype=float).reshape(
            len(facts), len(self.features)
        )

    def probabilities(self, x: np.ndarray) -> np.ndarray:
        """(draws, pairs) P under every coefficient draw."""
        return sigmoid(self.draws @ np.asarray(x, dtype=float).T)

    def mean(self, x: np.ndarray) -> np.ndarray:
        """P per pair averaged over the draws, computed once per distinct feature row (the gate's tens of
        thousands of pairs share one)."""
        x = np.asarray(x, dtype=float).reshape(len(x), len(self.features))
        rows, inverse = np.unique(x, axis=0, return_inverse=True)
        return self.probabilities(rows).mean(axis=0)[inverse.reshape(-1)]

    def shifted(self, shifts: np.ndarray, rng: np.random.Generator, size: int) -> Calibration:
        """``size`` draws, each a random draw of this calibration with its intercept moved by a draw of ``shifts`` (by
        each in turn where there are ``size`` of them)."""
        b = rng.integers(0, len(self.draws), size)
        draws = self.draws[b].copy()
        level = np.asarray(shifts, dtype=float) if len(shifts) == size else rng.choice(shifts, size)
        draws[:, self.features.index(INTERCEPT)] += level
        return replace(self, draws=draws, level_shifts=level + self._level_of(b), spread=_rows_of(self.spread, b))

    def widened(self, rng: np.random.Generator, size: int) -> Calibration:
        """``size`` draws, each a random draw of this calibration with each kind's level shift (:attr:`kind_sd`) on
        top: a kind with its own indicator column moves by its own shift, the kinds the intercept alone stands for
        by the largest of theirs (so where the design has no column per kind, every kind moves together), and every
        pair by the shift common to all (``kind_sd["all"]`` beside other kinds)."""
        if not any(sd > 0 for sd in self.kind_sd.values()):
            return self
        b = rng.integers(0, len(self.draws), size)
        spread = np.zeros((size, len(self.features)))
        kinds = {k: sd for k, sd in self.kind_sd.items() if k != ALL} or dict(self.kind_sd)
        columns = {k: self.features.index(KIND_PREFIX + k) for k in kinds if KIND_PREFIX + k in self.features}
        bare = max((sd for k, sd in kinds.items() if k not in columns), default=0.0)
        base = normal_spread(bare, size, rng)
        common = normal_spread(self.kind_sd.get(ALL, 0.0), size, rng) if len(kinds) < len(self.kind_sd) else 0.0
        spread[:, self.features.index(INTERCEPT)] = base + common
        for kind, j in columns.items():
            spread[:, j] = normal_spread(kinds[kind], size, rng) - base
        before = _rows_of(self.spread, b)
        return replace(self, draws=self.draws[b] + spread, level_shifts=_rows_of(self.level_shifts, b),
                       spread=spread if before is None else before + spread)  # fmt: skip

    def updated(self, x: np.ndarray, y: np.ndarray, prior_sd: float, rng: np.random.Generator) -> Calibration:
        """The posterior after people's answers ``y`` on random holes ``x``: a logit shift ``delta`` with prior
        N(0, prior_sd) on top of each coefficient draw, (draw, delta) weighted by the answers' likelihood."""
        grid = np.linspace(-4.0, 4.0, 161)
        z = self.draws @ x.T  # draws x answers
        shifted = z[:, None, :] + grid[None, :, None]  # draws x grid x answers
        log_p = np.where(y[None, None, :] == 1, -np.logaddexp(0.0, -shifted), -np.logaddexp(0.0, shifted))
        log_w = log_p.sum(axis=2) - 0.5 * (grid[None, :] / max(prior_sd, 1e-3)) ** 2
        w = np.exp(log_w - log_w.max())
        w /= w.sum()
        picked = rng.choice(w.size, size=len(self.draws), p=w.ravel())
        b, g = np.unravel_index(picked, w.shape)
        draws = self.draws[b].copy()
        draws[:, self.features.index(INTERCEPT)] += grid[g]
        population = f"{self.population}; updated by people's answers on {len(y)} random open pairs"
        return replace(self, draws=draws, population=population, level_shifts=grid[g] + self._level_of(b),
                       spread=_rows_of(self.spread, b))  # fmt: skip

    def _level_of(self, rows: np.ndarray) -> np.ndarray | float:
        return 0.0 if self.level_shifts is None else self.level_shifts[rows]

    def central(self) -> Calibration:
        """The calibration with its drawn level at the median (the coefficients' own spread kept): what the point
        estimate draws from, so that a level nobody measured widens the interval without moving the point (the mean
        of sigmoid(z + shift) over a symmetric shift drifts every low P toward one half; DESIGN.md §14)."""
        if self.level_shifts is None and self.spread is None:
            return self
        draws = self.draws.copy() if self.spread is None else self.draws - self.spread + np.median(self.spread, axis=0)
        if self.level_shifts is not None:
            draws[:, self.features.index(INTERCEPT)] += float(np.median(self.level_shifts)) - self.level_shifts
        return replace(self, draws=draws, level_shifts=None, spread=None)

    def description(self) -> dict[str, Any]:
        """What the report says a P rests on: the population, whether it is a sample of holes, and the quality."""
        shifts = (
            {"transfer_sd": self.transfer_sd, "topic_sd": self.topic_sd, "family_sd": self.family_sd}
            if self.transfer_sd is not None
            else {}
        )
        kinds = {"kind_sd": dict(self.kind_sd)} if self.kind_sd else {}
        return {"population": self.population, "hole_like": self.hole_like, **shifts, **kinds, **dict(self.quality)}

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "features": list(self.features),
            "draws": [[round(float(v), 6) for v in row] for row in self.draws],
            "population": self.population,
            "hole_like": self.hole_like,
            "quality": dict(self.quality),
            **({"transfer_sd": self.transfer_sd} if self.transfer_sd is not None else {}),
            **({"topic_sd": self.topic_sd} if self.topic_sd else {}),
            **({"family_sd": self.family_sd} if self.family_sd else {}),
            **({"term_priors": {k: list(v) for k, v in self.term_priors.items()}} if self.term_priors else {}),
            **({"kind_sd": dict(self.kind_sd)} if self.kind_sd else {}),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any], path: Path | None = None) -> Calibration:
        try:
            return cls(
                str(data["name"]),
                tuple(data["features"]),
                np.array(data["draws"], dtype=float),
                str(data.get("population", "")),
                bool(data.get("hole_like", False)),
                dict(data.get("quality") or {}),
                None if data.get("transfer_sd") is None else float(data["transfer_sd"]),
                float(data.get("topic_sd") or 0.0),
                float(data.get("family_sd") or 0.0),
                {str(k): (float(v[0]), float(v[1])) for k, v in (data.get("term_priors") or {}).items()},
                {str(k): float(v) for k, v in (data.get("kind_sd") or {}).items()},
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise InputError(f"not a calibration ({exc})", path=path) from None


def _rows_of(values: np.ndarray | None, rows: np.ndarray) -> np.ndarray | None:
    """A per-draw array's rows (a resampled calibration's ``level_shifts`` or ``spread``); None stays None."""
    return None if values is None else values[rows]


def normal_spread(sd: float, size: int, rng: np.random.Generator) -> np.ndarray:
    """``size`` draws of N(0, ``sd``) at evenly spaced quantiles, in random order: a level drawn this way has its
    median at 0 exactly and its tails where they belong, with none of a random sample's noise in the interval."""
    from scipy.stats import norm

    return rng.permutation(norm.ppf((np.arange(size) + 0.5) / size) * sd)


def constant_calibration(name: str, p: np.ndarray | float, population: str) -> Calibration:
    """P drawn from the given values (one per draw) whatever the pair: the gate, a fixed P in tests."""
    values = np.atleast_1d(np.asarray(p, dtype=float))
    return Calibration(name, (INTERCEPT,), np.log(values / (1 - values))[:, None], population)


def uninformed_calibration(draws: int, seed: int) -> Calibration:
    """:data:`UNMEASURED`'s P: a share of relevant holes drawn uniformly in (0, 1) once per draw for all of them
    (holes of one collection rise and fall together: a topic's own draw would average out over topics and give a
    narrow interval around 0.5 that no measurement supports)."""
    share = np.random.default_rng(seed).uniform(0.0, 1.0, draws).clip(1e-3, 1 - 1e-3)
    population = (
        "nothing measured: no stage calibrated these holes and their topics' qrels judge no ranked pair non-relevant "
        "(positives only), so the share of relevant holes is drawn anywhere in (0, 1)"
    )
    return constant_calibration(UNMEASURED, share, population)


def shift_calibration(name: str, sd: float, draws: int, seed: int, population: str) -> Calibration:
    """The pair's own P (``logit_p``) with its logit moved by a draw from N(0, sd) (0: the P as it is)."""
    shifts = normal_spread(sd, draws, np.random.default_rng(seed)) if sd > 0 else np.zeros(1)
    coefficients = np.column_stack([np.ones(len(shifts)), shifts])
    return Calibration(name, ("logit_p", INTERCEPT), coefficients, population, level_shifts=shifts)


def write_calibrations(path: Path, calibrations: Mapping[str, Calibration]) -> None:
    write_json_atomic(path, {name: c.to_json() for name, c in sorted(calibrations.items())})


def read_calibrations(path: Path) -> dict[str, Calibration]:
    """The calibrations a label run wrote (none where it wrote no file)."""
    if not path.exists():
        return {}
    try:
        data = json.loads(read_utf8(path))
    except json.JSONDecodeError as exc:
        raise InputError(f"not valid JSON ({exc.msg}); re-run `bridge label`", path=path, line=exc.lineno) from None
    if not isinstance(data, dict):
        raise InputError("expected an object of calibrations by name", path=path)
    calibrations = {name: Calibration.from_json(c, path) for name, c in data.items()}
    for name, c in calibrations.items():
        if not np.isfinite(c.draws).all():  # NaN P would read as "not relevant" in every draw
            bad = int(np.argwhere(~np.isfinite(c.draws))[0][0])
            raise InputError(
                f"calibration {name!r}: draw {bad + 1} is not a finite number; re-run `bridge label`",
                path=path,
                field=f"{name}.draws",
            )
    return calibrations
