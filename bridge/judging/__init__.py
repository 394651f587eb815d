"""The judging stage: every way bridge decides whether a pooled pair is relevant.

One label run chains judges from cheapest and most trustworthy to dearest, and every record
names the stage that decided it:

* ``evidence``   answer-string evidence decides answer-free pairs without a call (``evidence.py``);
* ``single``     one-call LLM judges: LLMJudge, UMBRELA-style grades, the prefilter (``single.py``);
* ``adapter``    topic adapters: a classifier per topic learned from its own human judgments (``adapter.py``);
* ``calibration`` isotonic / Platt maps from a raw score to P(relevant), ECE, Brier (``calibration.py``);
* ``cascade``    one calibrated pass, the DREAM debate for the uncertain band only (``cascade.py``);
* ``dream``      the DREAM debate between two agents, escalation to people (``dream.py``);
* ``reference``  judges that call no model: a qrels file, a constant (``reference.py``);
* ``audit``      known pairs mixed blind into every run measure the judge itself (``audit.py``);
* ``answer_swap`` known non-relevant pairs that hold an answer string, for the audit (``answer_swap.py``);
* ``metrics``    balanced accuracy, kappa, AUC and their Jeffreys intervals (``metrics.py``);
* ``judge_eval`` judges compared on human-labeled samples, adapter learning curves (``judge_eval.py``).

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
