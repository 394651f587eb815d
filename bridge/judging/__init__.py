"""The judging stage: every way bridge decides whether a pooled pair is relevant, grouped by what a judge costs.

* ``base.py``    what judges share: the :class:`Case` a judge sees, the :class:`Judge` protocol and its optional
  preparation, tolerant parsing of model replies, and the judge registry (:data:`JUDGES`): each judge registers
  with the config class it owns and its traits (calls an LLM, answer-bearing, selectable, measured), and every
  "which judges ..." question is a query of it (:func:`judge_names`, :func:`judge_traits`); a judge is built
  (:func:`build_judge`) from a frozen :class:`JudgeSpec`: its name, its config and, for an answer judge, its
  fallback;
* ``settings.py`` how a config declares the fields a command line sets (:func:`~bridge.judging.settings.option`,
  data that one command-line module turns into flags);
* ``free/``      no model: answer-string evidence decides answer-free pairs (``evidence.py``), judges that answer
  from a qrels file, a constant or a coin (``reference.py``), known negatives by rule for the audit
  (``answer_swap.py``);
* ``llm/``       an LLM call per pair: one-call judges, UMBRELA grades and the one-pass score (``single.py``), the
  DREAM debate with escalation to people (``dream.py``), one calibrated pass with the debate for the uncertain band
  only (``cascade.py``), the answer reader's likelihoods (``reader.py``);
* ``learned/``   fitted on labelled pairs: the answer judges, calibrated on a random sample of the holes read by
  people (``answer_context.py``; their free features ``answer_features.py``, their kept fits ``answer_fits.py``),
  topic adapters (``adapter.py``, ``topic_models.py``, ``learning_curve.py``), isotonic / Platt maps
  (``calibration.py``), hole-like calibration with strata chosen by cross-validation (``hole_fit.py``), measured as
  it is used (``hole_calibration.py``);
* ``quality/``   measuring a judge: the audit (``audit*.py``), agreement and calibration metrics with their intervals
  (``metrics.py``), the read reference (``reference_labels.py``), judges measured against people's labels
  (``judge_eval.py``, what ``bridge judge-eval`` runs; ``adapter_eval.py`` the topic adapters' part of it,
  ``judge_eval_report.py`` what it writes).

Where a pool pair gets its label: ``bridge/label/`` chains these judges (``chain.py``) and runs them over the pool and
the audit (``labeler.py``). The registry imports the modules that register judges
(:data:`~bridge.judging.base.JUDGE_MODULES`, and those of the ``bridge.judges`` entry point group) on its first lookup.
"""

from bridge.judging.base import (
    JUDGES,
    Case,
    Judge,
    JudgeContext,
    JudgeSpec,
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
    default_judge,
    judge_names,
    judge_traits,
    parse_json_object,
    plain_judge,
    register_judge,
    usage_of,
    yes_no,
)

__all__ = [
    "JUDGES",
    "Case",
    "Judge",
    "JudgeContext",
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
    "default_judge",
    "judge_names",
    "judge_traits",
    "parse_json_object",
    "plain_judge",
    "register_judge",
    "usage_of",
    "yes_no",
]
