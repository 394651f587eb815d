"""The plug-in registry: a name is taken once."""

import ast
from pathlib import Path

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


OTHER_MEANINGS = {
    "qrels": "a qrels set's column and fill",
    "open": "a verdict (bridge.estimate.leaderboard)",
    "random": "a sampling order and fill",
}
"""Judge names that are also ordinary words of the code: only their use as a judge's name is checked."""


def _declares_names(tree: ast.AST) -> set[str]:
    """The names a module's classes give themselves (``name = "..."`` or ``self.name = ...`` in a class): the module
    that defines a judge's class is that judge's module, as is the one that registers it."""
    out: set[str] = set()
    for cls in (n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)):
        for node in ast.walk(cls):
            targets = (
                node.targets
                if isinstance(node, ast.Assign)
                else [node.target]
                if isinstance(node, ast.AnnAssign)
                else []
            )
            if any(
                (isinstance(t, ast.Name) and t.id == "name") or (isinstance(t, ast.Attribute) and t.attr == "name")
                for t in targets
            ):
                out |= {c.value for c in ast.walk(node) if isinstance(c, ast.Constant) and isinstance(c.value, str)}
    return out


def _as_judge_name(node: ast.Constant, parents: dict[int, ast.AST]) -> bool:
    """A constant used as a judge's name: a JudgeSpec's name, or compared with something called name or judge."""
    parent = parents.get(id(node))
    if isinstance(parent, ast.Call) and getattr(parent.func, "id", getattr(parent.func, "attr", "")) == "JudgeSpec":
        return True
    if isinstance(parent, ast.Compare):
        sides = [parent.left, *parent.comparators]
        return any(getattr(s, "attr", getattr(s, "id", "")) in ("name", "judge") for s in sides)
    return False


def test_no_module_names_a_judge_but_its_own():
    """A judge is named only where it is registered or its class is defined; every other module asks the registry by
    trait (the default judge, the plain one, the ones that refine, ...). Prose (docstrings, help) may mention judges."""
    from bridge.judging import JUDGES

    registered = {name: JUDGES[name].factory.__module__ for name in JUDGES}
    root = Path(__file__).resolve().parents[1]
    named = []
    for path in sorted((root / "bridge").rglob("*.py")):
        module = ".".join(path.relative_to(root).with_suffix("").parts)
        tree = ast.parse(path.read_text(encoding="utf-8"))
        own = _declares_names(tree) | {n for n, m in registered.items() if m == module}
        parents = {id(child): node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Constant) and node.value in registered) or node.value in own:
                continue
            if node.value not in OTHER_MEANINGS or _as_judge_name(node, parents):
                named.append(f"{module}:{node.lineno} {node.value!r}")
    assert named == []
