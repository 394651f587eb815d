"""The judges ``bridge judge-eval`` measures, and its defaults.

A method is a registered judge that declares itself measured (:attr:`bridge.judging.JudgeTraits.measured`) or one of
judge-eval's own, ``OWN_METHODS``: the lists are queries of the registry, so a new judge needs no line here.
"""

from bridge.judging import JUDGES

OWN_METHODS = {
    "lara": "LARA-style confidence escalation over the calibrated judge's scores (no judge of its own)",
    "adapter": "the topic adapters: within-topic cross-validation, their row on the same sample, learning curves",
    "answer-string": "relevant wherever the passage holds an answer string (the constant judge, on answer-bearing "
    "pairs only)",
}
"""judge-eval's methods that are not registered judges, and what each measures."""

DEFAULT_EVAL_METHODS = "llmjudge,calibrated,lara,dream,cascade"
DEFAULT_REFERENCE_METHODS = "answer-string,answer-lexical,calibrated,cascade,dream,answer-context"
"""With --reference: the answer string alone, the learned answer-context judge without and with the LLM, and
the LLM judges."""


def measured_judges() -> tuple[str, ...]:
    """The registered judges judge-eval measures, in registration order."""
    return tuple(j.name for j in JUDGES.values() if j.traits.measured)


def eval_methods() -> tuple[str, ...]:
    """Every method judge-eval runs on a balanced sample of the dataset's judged pairs."""
    return (*measured_judges(), *OWN_METHODS)


def reference_methods() -> tuple[str, ...]:
    """The methods judge-eval runs on a reference of answer-bearing pairs (the adapters and LARA need the dataset's
    judged pairs)."""
    return ("answer-string", *measured_judges())
