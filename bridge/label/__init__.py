"""The label stage: where a pool pair gets its label.

* ``chain.py``        the judge chain (answer evidence -> topic adapters -> the judge), built from one
  frozen :class:`ChainSpec`; judges prepare themselves (hold-outs, calibration);
* ``labeler.py``      the label run (:func:`label_pool`): plan, judge the pool, audit, write; resumes from labels.jsonl
  (its pairs go to the judges in batches by :mod:`bridge.judging.work`);
  * ``plan.py``       its options and what it decides first: the pool left to judge, the audit's pairs, each judge's
    preparation (fixed costs);
  * ``pool_judging.py`` the pool's pairs: the free stages, then the budget for costly judges in value order (and
    ``--refine``);
  * ``audit_run.py``  the audit's known pairs after the pool, and the outputs from the records: augmented qrels, the
    hole model's calibrations, judge-audit.json;
  * ``budget.py``     prices and the time budget's ledger (budget.json); ``files.py`` the run's files and what they
    hold; ``summary.py`` what the run did, as ``bridge label`` prints it;
* ``value.py``        the value of asking about a pair, from the hole model's estimate of the runs;
* ``distributed.py``  the same run on Ray workers that rebuild the chain from the pickled spec;
* ``label_workflow.py``, ``judge_eval_workflow.py``, ``evidence_workflow.py``  each command's work as a library
  function over typed settings (``judge_eval_methods.py``: the judges judge-eval measures; the measurement itself
  is :mod:`bridge.judging.quality.judge_eval`);
* ``cli.py``          registers ``bridge label``, ``judge-eval``, ``evidence`` (``label_cli.py``, ``judge_eval_cli.py``,
  ``evidence_cli.py``: argparse -> settings -> the workflow); the shared options and the specs they describe in
  ``label_options_cli.py`` (ChainSpec), ``judge_options_cli.py`` (every registered judge's flags, the JudgeSpec
  they describe), ``topic_stage_options_cli.py`` (the topic adapters and the exemplar judge).

The judges themselves live in :mod:`bridge.judging`; the records in :mod:`bridge.core.label_records`.
"""

from bridge.label.chain import ChainSpec, JudgeChain, build_chain
from bridge.label.files import LabelPaths
from bridge.label.labeler import label_pool
from bridge.label.plan import LabelOptions
from bridge.label.summary import LabelSummary

__all__ = ["ChainSpec", "JudgeChain", "LabelOptions", "LabelPaths", "LabelSummary", "build_chain", "label_pool"]
