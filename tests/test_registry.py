"""The plug-in registry: a name is taken once."""

import pytest

from bridge.core.errors import BridgeError
from bridge.core.registry import Registry


def test_a_second_entry_under_a_taken_name_is_refused_and_the_first_kept():
    registry: Registry[str] = Registry("toy judge")
    registry.add("mine", "first")
    registry.add("mine", "first")  # the same entry again (a module imported twice): harmless
    with pytest.raises(BridgeError, match="toy judge 'mine' is registered twice"):
        registry.add("mine", "second")
    with pytest.raises(BridgeError, match="registered twice"):
        registry.register("mine")("third")
    assert registry["mine"] == "first" and list(registry) == ["mine"]


def test_every_judge_eval_method_is_a_registered_judge_or_one_of_its_own():
    """judge-eval's lists name no judge that does not exist: each name is registered or declared as its own."""
    from bridge.judging import judge_names
    from bridge.label.judge_eval_methods import (
        OWN_METHODS,
        default_eval_methods,
        default_reference_methods,
        eval_methods,
        reference_methods,
    )

    known = set(judge_names()) | set(OWN_METHODS)
    defaults = {*default_eval_methods().split(","), *default_reference_methods().split(",")}
    named = {*eval_methods(), *reference_methods(), *defaults}
    assert named - known == set()
    assert not set(OWN_METHODS) & set(judge_names())  # an own method does not hide a judge of the same name
