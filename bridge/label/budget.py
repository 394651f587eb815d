"""What a label run may spend: prices per token for the cost line, and the time budget's ledger (budget.json),
which later runs of the same judge configuration read back so that a budget spans runs."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path

from bridge.core.errors import BridgeError
from bridge.core.fsio import write_json_atomic
from bridge.core.label_records import Usage


@dataclass(frozen=True)
class Pricing:
    """Cost estimate, in dollars per million tokens (0 for a local model)."""

    prompt_per_million: float = 0.0
    completion_per_million: float = 0.0

    def cost(self, usage: Usage) -> float:
        return (
            usage.prompt_tokens * self.prompt_per_million + usage.completion_tokens * self.completion_per_million
        ) / 1e6


def read_ledger(path: Path) -> dict[str, float]:
    """The budget ledger (config id -> seconds spent); empty where there is none yet."""
    try:
        ledger = json.loads(path.read_text(encoding="utf-8"))
        return {str(key): float(seconds) for key, seconds in ledger.items()}
    except FileNotFoundError:
        return {}
    except (ValueError, TypeError, AttributeError):
        raise BridgeError(
            f"{path}: not a budget ledger (a JSON object of seconds); remove it to start the budget afresh"
        ) from None


class BudgetLedger:
    """The time budget's ledger while the costly judges run: ``budget.json`` holds what earlier runs spent plus this
    run's seconds so far, rewritten after each pool pair's record and once more at the end (or the interrupt), so a
    run killed outright overspends by at most the batch in flight."""

    def __init__(self, path: Path, key: str, enabled: bool) -> None:
        self.path, self.key, self.enabled = path, key, enabled
        self.before = read_ledger(path).get(key, 0.0) if enabled else 0.0
        self.started = time.perf_counter()

    def spent_now(self) -> float:
        """Seconds this run has spent so far."""
        return time.perf_counter() - self.started

    def flush(self) -> None:
        """Write earlier runs' seconds plus this run's so far (the other configurations' entries kept)."""
        if self.enabled:
            ledger = read_ledger(self.path)
            ledger[self.key] = self.before + self.spent_now()
            write_json_atomic(self.path, ledger)
