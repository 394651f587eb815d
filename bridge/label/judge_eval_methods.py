"""The judges ``bridge judge-eval`` measures, and its defaults.

A method is a registered judge that declares itself measured (:attr:`bridge.judging.JudgeTraits.measured`) or one of
judge-eval's own, ``OWN_METHODS``: the lists are queries of the registry, so a new judge needs no line here.
"""

from bridge.judging import JUDGES
from bridge.judging.base import registered_judges

OWN_METHODS = {
    "lara": "LARA-style confidence escalation over the calibrated judge's scores (no judge of its own)",
    "adapter": "the topic adapters: within-topic cross-validation, their row on the same sample, learning curves",
}
"""judge-eval's methods that are not registered judges, and what each measures."""


def _in_place(place: str) -> list[str]:
    """The measured judges registered with a place among the defaults (``place``: the trait), in that order."""
    chosen = [j for j in JUDGES.values() if j.traits.measured and getattr(j.traits, place)]
    return [j.name for j in sorted(chosen, key=lambda j: getattr(j.traits, place))]


def default_eval_methods() -> str:
    """judge-eval's default methods on a sample of the dataset's judged pairs: the judges registered for it in their
    places, and LARA right after the scorer whose P it reads."""
    names = _in_place("sample_default")
    scorer = next((i for i, n in enumerate(names) if JUDGES[n].traits.scores), len(names) - 1)
    return ",".join([*names[: scorer + 1], "lara", *names[scorer + 1 :]])


def default_reference_methods() -> str:
    """With --reference: the judges registered for it in their places (the answer string alone, the answer judges
    without and with a model, the LLM judges)."""
    return ",".join(_in_place("reference_default"))


def measured_judges() -> tuple[str, ...]:
    """The registered judges judge-eval measures, in registration order."""
    return tuple(j.name for j in registered_judges() if j.traits.measured)


def eval_methods() -> tuple[str, ...]:
    """Every method judge-eval runs on a balanced sample of the dataset's judged pairs."""
    return (*measured_judges(), *OWN_METHODS)


def reference_methods() -> tuple[str, ...]:
    """The methods judge-eval runs on a reference of answer-bearing pairs (the adapters and LARA need the dataset's
    judged pairs)."""
    return measured_judges()
