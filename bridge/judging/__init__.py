"""The judging stage: every way bridge decides whether a pooled pair is relevant.

Its rooms import one way, each only from the rooms above it in this list (``tests/test_architecture.py``):

* the root       what judges share: ``base.py`` (the :class:`Case` a judge sees, the :class:`Judge` protocol and its
  preparation, the :class:`JudgeContext` a factory builds from, one record builder, and the registry
  :data:`JUDGES`: each judge registers with the config class it owns and its traits, and every "which judges ..."
  question is a query of it, :func:`judge_names`, :func:`judge_traits`); ``settings.py`` (how a config declares its
  flags); ``replies.py`` (tolerant parsing of model replies, one re-ask); ``single_call.py`` (the one-call judges'
  settings, shared with the judges using their score);
  ``reference_labels.py`` (a read reference); ``teaching.py``; ``work.py`` (pairs in lanes, batched to judges);
* ``fitting/``   fitting on labelled pairs: metrics with intervals, score maps, the hole-like calibration;
* ``free/``      judges and rules that call no model: answer-string evidence (``evidence.py``), the qrels, constant,
  open and random judges (``reference.py``), known pairs for the audit and calibrations (``known_pairs.py``,
  ``answer_swap.py``), and the answer judge (``answer_context.py``, its features and fits), registered without a
  model as ``answer-lexical``;
* ``llm/``       an LLM call per pair: one-call judges and UMBRELA (``single.py``), the DREAM debate (``dream.py``),
  the cascade (``cascade.py``), the reader (``reader.py``), the answer judges that read a model's signal
  (``answer_judges.py``);
* ``learned/``   learned as a run goes: topic adapters (``adapter.py``, ``topic_models.py``, ``learning_curve.py``),
  the exemplar judge and its fit (``exemplar*.py``);
* ``quality/``   measuring a judge: the audit (``audit*.py``), judges against people's labels (``judge_eval*.py``,
  ``adapter_eval.py``), what each costly judge was measured to be worth (``measured.py``).

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
    Preparable,
    Preparation,
    Prepared,
    RegisteredJudge,
    build_judge,
    cases_for,
    default_judge,
    judge_names,
    judge_traits,
    plain_judge,
    register_judge,
)
from bridge.judging.replies import ParseError, Reply, ask_with_repair, parse_json_object, usage_of, yes_no

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
