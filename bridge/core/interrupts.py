"""Interrupts a long job can survive: SIGTERM (a scheduler, ``timeout``) handled as Ctrl+C is, so that the job
writes its state before it stops."""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from typing import Any


@contextlib.contextmanager
def sigterm_interrupts() -> Iterator[None]:
    """SIGTERM (a scheduler, ``timeout``) takes the path of Ctrl+C for the block: a ``KeyboardInterrupt`` that lets
    the run write its state. Later SIGTERMs while that state is written are ignored; the old handler comes back after.
    Outside the main thread (where no handler can be set) nothing changes."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    raised = False

    def interrupt(signum: int, _frame: Any) -> None:
        nonlocal raised
        if not raised:
            raised = True
            raise KeyboardInterrupt(f"signal {signum}")

    old = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old)
