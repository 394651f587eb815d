"""The judges ``bridge judge-eval`` measures, and its defaults.

A method is a registered judge that declares itself measured (:attr:`bridge.judging.JudgeTraits.measured`) or one of
judge-eval's own, ``OWN_METHODS``: the lists are queries of the registry, so a new judge needs no line here.
"""

from bridge.judging import JUDGES, judge_names

OWN_METHODS = {
    "lara": "LARA-style confidence escalation over the calibrated judge's scores (no judge of its own)",
    "adapter": "the topic adapters: within-topic cross-validation, their row on the same sample, learning curves",
}
"""judge-eval's methods that are not registered judges, and what each measures."""


def default_eval_methods() -> str:
    """judge-eval's default methods on a sample of the dataset's judged pairs: the judges registered for it, and LARA
    over the scorer's P."""
    return ",".join((*judge_names(measured=True, sample_default=True), "lara"))


def default_reference_methods() -> str:
    """With --reference: the judges registered for it (the answer string alone, the answer judges, the LLM judges)."""
    return ",".join(judge_names(measured=True, reference_default=True))


def measured_judges() -> tuple[str, ...]:
    """The registered judges judge-eval measures, in registration order."""
    return tuple(j.name for j in JUDGES.values() if j.traits.measured)


def eval_methods() -> tuple[str, ...]:
    """Every method judge-eval runs on a balanced sample of the dataset's judged pairs."""
    return (*measured_judges(), *OWN_METHODS)


def reference_methods() -> tuple[str, ...]:
    """The methods judge-eval runs on a reference of answer-bearing pairs (the adapters and LARA need the dataset's
    judged pairs)."""
    return measured_judges()
