"""How many more pairs a time budget allows: the one rule the label run's batches and the cascade's scoring pass
both follow, so that a budget of M minutes ends within M minutes plus about one pair's time."""

from __future__ import annotations

DEADLINE_PROBE = 1
"""Pairs the first batch under a deadline takes (its rate sizes the later batches): one, so that a slow judge (a
debate: tens of seconds a pair) overruns the budget by at most one pair's time when little is left."""


HEADROOM = 2.0
"""A batch is sized to end by half the time left at the rate measured so far, so a batch that runs up to twice as
slow as the pairs before it (a loaded machine, longer passages) still ends in time; the last pairs go one at a time."""


def room_before(deadline: float, started: float, done: int, now: float) -> int:
    """Pairs the next batch may take before ``deadline`` (``time.monotonic()`` values), at the rate measured so far
    (``done`` pairs since ``started``) with :data:`HEADROOM`: :data:`DEADLINE_PROBE` before any is done, at least one
    while time is left (so the overrun is at most that pair's time), none once the deadline has passed."""
    if now >= deadline:
        return 0
    if not done:
        return DEADLINE_PROBE
    return max(1, int((deadline - now) / (HEADROOM * (now - started) / done)))
