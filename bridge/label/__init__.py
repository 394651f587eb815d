"""The label stage: where a pool pair gets its label.

* ``chain.py``        the judge chain (answer evidence -> topic adapters -> the judge), built from one
  frozen :class:`ChainSpec`; judges prepare themselves (hold-outs, calibration);
* ``run.py``          the label run: resume from labels.jsonl, fixed costs (preparation, audit) first, the free
  stages, then the budget for costly judges in value order (and ``--refine``), records, augmented qrels, the
  hole model's calibrations and judge-audit.json;
* ``value.py``        the value of asking about a pair, from the hole model's estimate of the runs;
* ``distributed.py``  the same run on Ray workers that rebuild the chain from the pickled spec;
* ``judge_eval.py``   judges measured against human labels: samples, qualities, the report;
* ``label_workflow.py``, ``judge_eval_workflow.py``, ``evidence_workflow.py``  each command's work as a library
  function over typed settings (``judge_eval_methods.py``: the judges judge-eval measures);
* ``cli.py``          registers ``bridge label``, ``judge-eval``, ``evidence`` (``label_cli.py``, ``judge_eval_cli.py``,
  ``evidence_cli.py``: argparse -> settings -> the workflow); the shared options and the specs they describe in
  ``label_options_cli.py`` (ChainSpec), ``judge_options_cli.py`` (JudgeSpec), ``adapter_options_cli.py``.

The judges themselves live in :mod:`bridge.judging`; the records in :mod:`bridge.core.label_records`.
"""

from bridge.label.chain import ChainSpec, JudgeChain, build_chain
from bridge.label.run import LabelOptions, LabelPaths, LabelSummary, label_pool

__all__ = ["ChainSpec", "JudgeChain", "LabelOptions", "LabelPaths", "LabelSummary", "build_chain", "label_pool"]
