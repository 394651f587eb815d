"""bridge inside a PyTerrier experiment: fill the holes of ``pt.Experiment``'s systems, with intervals, in a notebook.

Reached as ``bridge.pyterrier`` and as ``pt.bridge``: PyTerrier imports the modules that packages register under its
``pyterrier.modules`` entry point when it is imported, and bridge registers this one (so this module's top level
stays small: an error here would break ``import pyterrier``). An extension module of bridge itself rather than a
second ``pyterrier_bridge`` package: there is one version to pin, and the figures are bridge's own
(:func:`bridge.evaluate`), so they equal ``bridge eval``'s on the same inputs.

- :func:`Experiment`: ``pt.Experiment``'s arguments plus the bridge dataset and the judge. It pools the systems'
  unjudged pairs, labels them (the free stages by default; a costly judge only within a budget) and returns
  PyTerrier's table with each measure's estimate, 95% interval and bounds, and the verdicts between adjacent systems.
- :func:`infer_qrels`: a run and qrels in (autoqrels' shape), the filled qrels out with ``p_relevant`` and ``route``.
- :class:`Judge`: a transformer that adds ``label``, ``p_relevant`` and ``route`` to a result frame (``bm25 >> judge``).
- :class:`Retriever`: a first-stage system of a pool file as a transformer.

PyTerrier's conventions throughout: ``qid, query`` topics, ``qid, docno, score, rank`` results (rank from 0),
``qid, docno, label`` qrels (ir_measures' ``query_id, doc_id, relevance`` are read too), ``verbose`` for progress
bars. Judges that call a model cache their responses in bridge's response cache (``JudgeConfig.cache_dir``).

The modules: :mod:`~bridge.pyterrier.conversions` (topics, qrels and results as frames and back),
:mod:`~bridge.pyterrier.filling` (the judge, the pooling and :func:`infer_qrels`), :mod:`~bridge.pyterrier.experiment`
(:func:`Experiment`) and :mod:`~bridge.pyterrier.transformers` (:class:`Judge`, :class:`Retriever`).
"""

from __future__ import annotations

try:
    import pyterrier  # noqa: F401 - PyTerrier first: without it, this error names the extra to install
except ModuleNotFoundError as exc:
    if exc.name != "pyterrier":
        raise
    raise ModuleNotFoundError(
        "bridge.pyterrier needs PyTerrier: pip install 'bridge-qrels[pyterrier]' (`make install` installs it)",
        name="pyterrier",
    ) from None

from bridge.pyterrier.conversions import get_qrels, get_topics
from bridge.pyterrier.experiment import Experiment, FilledExperiment, FillOptions
from bridge.pyterrier.filling import JudgeConfig, infer_qrels
from bridge.pyterrier.transformers import Judge, Retriever

__all__ = ["Experiment", "FillOptions", "FilledExperiment", "Judge", "JudgeConfig", "Retriever", "get_qrels",
           "get_topics", "infer_qrels"]  # fmt: skip
