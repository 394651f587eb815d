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
