"""bridge: complete missing relevance judgments with DREAM debates and re-benchmark retrievers.

The Python API (:mod:`bridge.api`) is importable from here: ``bridge.pool_pairs``, ``bridge.label_pairs``,
``bridge.evaluate``, ``bridge.score``, ... It loads on first use, so the command line starts fast.
"""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"

_API = (
    "EvaluateOptions", "Evaluation", "LabelingOptions", "Labels", "Reusability", "ScoreOptions", "Scored", "as_qrels",
    "as_run", "evaluate", "hole_probabilities", "label_pairs", "load_dataset", "pool_pairs", "qrels_frame",
    "read_labels_folder", "read_qrels", "read_run", "retrieve", "reusability", "run_frame", "score",
)  # fmt: skip
__all__ = ["__version__", *_API]


def __getattr__(name: str) -> Any:
    if name in _API:
        from bridge import api

        return getattr(api, name)
    raise AttributeError(f"module 'bridge' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(__all__)
