"""The judging stage: every way bridge decides whether a pooled pair is relevant.

One label run chains judges from cheapest and most trustworthy to dearest, and every record
names the stage that decided it:

* ``evidence``   answer-string evidence decides answer-free pairs without a call (``evidence.py``);
* ``single``     one-call LLM judges: LLMJudge, UMBRELA-style grades, the prefilter (``single.py``);
* ``dream``      the DREAM debate between two agents, escalation to people (``dream.py``);
* ``audit``      known pairs mixed blind into every run measure the judge itself (``audit.py``);
* ``metrics``    balanced accuracy, kappa, AUC and their bootstrap intervals (``metrics.py``);
* ``judge_eval`` judges compared on human-labeled samples (``judge_eval.py``).

``base.py`` holds what they share: the :class:`Case` a judge sees, the :class:`Judge` protocol
and its registry, and tolerant parsing of model replies.
"""

from bridge.judging.base import (
    JUDGES,
    Case,
    Judge,
    ParseError,
    Reply,
    ask_with_repair,
    parse_json_object,
    register_judge,
    usage_of,
    yes_no,
)

__all__ = [
    "JUDGES",
    "Case",
    "Judge",
    "ParseError",
    "Reply",
    "ask_with_repair",
    "parse_json_object",
    "register_judge",
    "usage_of",
    "yes_no",
]
