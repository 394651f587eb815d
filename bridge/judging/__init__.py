"""The judging stage: every way bridge decides whether a pooled pair is relevant.

One label run chains judges from cheapest and most trustworthy to dearest, and every record
names the stage that decided it:

* ``evidence``   answer-string evidence decides answer-free pairs without a call (``evidence.py``);
* ``single``     one-call LLM judges: LLMJudge, UMBRELA-style grades, the prefilter (``single.py``);
* ``adapter``    topic adapters: a classifier per topic learned from its own human judgments (``adapter.py``),
  fitted and cross-validated in ``topic_models.py``, measured by learning curves in ``learning_curve.py``;
* ``calibration`` isotonic / Platt maps from a raw score to P(relevant), ECE, Brier (``calibration.py``);
* ``cascade``    one calibrated pass, the DREAM debate for the uncertain band only (``cascade.py``);
* ``dream``      the DREAM debate between two agents, escalation to people (``dream.py``);
* ``reference``  judges that call no model: a qrels file, a constant (``reference.py``);
* ``audit``      known pairs judged like pool pairs in every run measure the judge itself (``audit.py``);
* ``answer_context`` answer-bearing pairs: where the answer sits (and the LLM's P), calibrated on a random sample
  of the holes read by people (``answer_context.py``, ``reference_labels.py``);
* ``hole_calibration`` a judge calibrated on hole-like pairs: strata chosen by cross-validation, bootstrap
  draws, cross-fitted quality per stratum; and on known pairs where no hole sample exists (``hole_calibration.py``);
* ``answer_swap`` known non-relevant pairs that hold an answer string, for the audit (``answer_swap.py``);
* ``metrics``    balanced accuracy, kappa, AUC and their Jeffreys intervals (``metrics.py``);
* ``spec``       the frozen settings a judge is built from (``spec.py``).

Where a pool pair gets its label: ``bridge/label/`` chains these judges (``chain.py``) and runs them
over the pool and the audit (``run.py``).

``base.py`` holds what they share: the :class:`Case` a judge sees, the :class:`Judge` protocol
and its optional preparation, the registry and tolerant parsing of model replies; ``spec.py`` the
:class:`JudgeSpec` every judge is built from (:func:`build_judge`). The registry (:data:`JUDGES`) imports the
modules that register judges on its first lookup.
"""

from bridge.judging.base import (
    JUDGES,
    Case,
    Judge,
    JudgeTraits,
    ParseError,
    Preparable,
    Preparation,
    Prepared,
    RegisteredJudge,
    Reply,
    ask_with_repair,
    build_judge,
    cases_for,
    judge_names,
    judge_traits,
    parse_json_object,
    register_judge,
    usage_of,
    yes_no,
)
from bridge.judging.spec import JudgeSpec

__all__ = [
    "JUDGES",
    "Case",
    "Judge",
    "JudgeSpec",
    "JudgeTraits",
    "ParseError",
    "Preparable",
    "Preparation",
    "Prepared",
    "RegisteredJudge",
    "Reply",
    "ask_with_repair",
    "build_judge",
    "cases_for",
    "judge_names",
    "judge_traits",
    "parse_json_object",
    "register_judge",
    "usage_of",
    "yes_no",
]
