"""Review settings: one frozen value, stored in the review database so every command agrees."""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields, replace
from typing import Any

from bridge.core.errors import BridgeError


@dataclass(frozen=True)
class ReviewConfig:
    judgments_per_case: int = 3
    """N: judgments from distinct annotators a case needs (the paper used 3, majority vote)."""
    check_share: float = 0.10
    """Share of all items that are known-answer attention checks (the paper used 10%)."""
    min_pass_rate: float = 1.0
    """An annotator below this attention-check pass rate is flagged (1.0: must pass every check)."""
    exclude_flagged: bool = True
    """Flagged annotators' labels are left out of votes and they are given no more items."""
    lease_s: float = 1200.0
    """How long an item handed to an annotator stays reserved for them."""
    seed: int = 0
    """Seeds the choice of attention checks and of the random holes."""
    random_holes: int = 40
    """Holes drawn at random for people to answer (:func:`bridge.review.items.random_holes`): their answers measure
    the level of the judges that labelled the holes."""

    def __post_init__(self) -> None:
        if self.judgments_per_case < 1:
            raise BridgeError(f"judgments per case must be at least 1, got {self.judgments_per_case}")
        if not 0.0 <= self.check_share < 1.0:
            raise BridgeError(f"attention-check share must be in [0, 1), got {self.check_share}")
        if not 0.0 <= self.min_pass_rate <= 1.0:
            raise BridgeError(f"minimum pass rate must be in [0, 1], got {self.min_pass_rate}")
        if self.lease_s <= 0:
            raise BridgeError(f"lease must be positive, got {self.lease_s} s")
        if self.random_holes < 0:
            raise BridgeError(f"random holes must be 0 or more, got {self.random_holes}")

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ReviewConfig:
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})

    def updated(self, **overrides: Any) -> ReviewConfig:
        """A copy with the given settings changed; ``None`` values leave a setting as it is."""
        return replace(self, **{k: v for k, v in overrides.items() if v is not None})

    def check_count(self, cases: int) -> int:
        """Attention checks to mix into ``cases`` cases so that they are ``check_share`` of all items."""
        if cases == 0 or self.check_share == 0:
            return 0
        return max(1, round(cases * self.check_share / (1.0 - self.check_share)))


@dataclass(frozen=True)
class ReviewOverrides:
    """Settings given to one review command, stored in the database for every later one (``ReviewDB.configure``);
    None keeps the stored value. Their meaning and defaults are :class:`ReviewConfig`'s."""

    judgments_per_case: int | None = None
    check_share: float | None = None
    min_pass_rate: float | None = None
    exclude_flagged: bool | None = None
    lease_s: float | None = None
    random_holes: int | None = None
