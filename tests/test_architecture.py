"""The layering rules of the code base, checked by reading every module's imports with ``ast``.

1. No import cycle among the project's modules (lazy imports inside functions count; imports made only
   for type checking do not).
2. Only command-line modules (``cli.py``, ``*_cli.py``, ``bridge/options.py``, ``__main__.py``) import
   ``argparse`` or another command-line module.
3. Nothing in ``bridge/`` imports from ``eval/`` or ``retrievers/``: the stages below the command line
   talk to later ones through files; only the dispatcher (``bridge/cli.py``) names their commands, and only
   the library's facade (``bridge/api.py``, the Python API over every stage) calls them.
4. Small parts: no function over 80 lines (but the report's HTML assembly and the review app's routes), none with
   more than 8 parameters (a frozen dataclass of settings is the cure; its generated constructor is exempt), no
   command-line module over 150 lines (a command's work is a library function the command line calls).
"""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("bridge", "retrievers", "eval")


def module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def project_modules() -> dict[str, Path]:
    return {module_name(p): p for package in PACKAGES for p in (REPO / package).rglob("*.py")}


def is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def imports(path: Path, modules: dict[str, Path], typing_too: bool = False) -> set[str]:
    """The project modules a file imports (``from a.b import c`` names ``a.b.c`` when that is a module); the imports
    under ``if TYPE_CHECKING:`` too with ``typing_too``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    guarded = [] if typing_too else [n for n in ast.walk(tree) if isinstance(n, ast.If) and is_type_checking(n)]
    skipped = {id(n) for node in guarded for child in node.body for n in ast.walk(child)}
    out: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            out |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.add(node.module)
            out |= {f"{node.module}.{alias.name}" for alias in node.names}
    return {name for name in out if name in modules or name.split(".")[0] == "argparse"}


def graph(typing_too: bool = False) -> dict[str, set[str]]:
    modules = project_modules()
    return {name: imports(path, modules, typing_too) - {name} for name, path in modules.items()}


def is_cli(name: str) -> bool:
    last = name.rsplit(".", 1)[-1]
    return last in ("cli", "__main__") or last.endswith("_cli") or name == "bridge.options"


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in edges.get(v, ()):
            if w not in edges:
                continue
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def test_the_checker_finds_what_it_should():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []
    assert is_cli("bridge.label.cli") and is_cli("eval.rag_cli") and not is_cli("bridge.label.labeler")


def test_no_import_cycle():
    assert cycles(graph()) == []


def test_no_import_cycle_even_for_typing():
    """Not even an import made for type annotations closes a circle (each judge owns its settings, so nothing
    below the judges needs to know them)."""
    assert cycles(graph(typing_too=True)) == []


def test_only_command_line_modules_import_argparse_or_command_line_modules():
    edges = graph()
    offenders = sorted(
        f"{name} imports {target}"
        for name, targets in edges.items()
        if not is_cli(name)
        for target in targets
        if target == "argparse" or is_cli(target)
    )
    assert offenders == []


def test_bridge_imports_nothing_from_eval_or_retrievers():
    edges = graph()
    offenders = sorted(
        f"{name} imports {target}"
        for name, targets in edges.items()
        if name.startswith("bridge") and name not in ("bridge.cli", "bridge.api", "bridge.pyterrier")
        for target in targets
        if target.split(".")[0] in ("eval", "retrievers")
    )
    assert offenders == []


def test_every_workspace_file_is_named_once_in_the_layout():
    """bridge/core/layout.py names every file a stage writes in a workspace; no other module spells one of those names
    as a string of its own (a name in a sentence, as help text has it, is not a path)."""
    from bridge.core import layout

    names = {v for k, v in vars(layout).items() if k.isupper() and isinstance(v, str) and "." in v}
    assert {"labels.jsonl", "hole-calibrations.json", "budget.json", "leaderboard.csv", "report.html"} <= names
    spelled = []
    for name, path in project_modules().items():
        if name == "bridge.core.layout":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and node.value in names:
                spelled.append(f"{name}:{node.lineno} {node.value!r}")
    assert not spelled, spelled


def test_core_imports_nothing_of_bridge_above_it():
    """bridge.core is what every stage shares; it depends on no stage (so any stage may import it)."""
    above = sorted(
        f"{name} imports {target}"
        for name, targets in graph().items()
        if name.startswith("bridge.core")
        for target in targets
        if target != "argparse" and not target.startswith("bridge.core")
    )
    assert above == []


LONG_ALLOWED = {("eval.report", "to_html"), ("bridge.review.app", "create_app")}
"""The report's HTML assembly and the review app's routes: one long template each, read top to bottom."""


def functions() -> list[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]]:
    return [
        (name, node)
        for name, path in project_modules().items()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
    ]


def parameters(node: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """Named parameters but ``self``/``cls`` (``*args``/``**kwargs`` do not count)."""
    args = [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]
    return len(args) - int(bool(args) and args[0].arg in ("self", "cls"))


def test_no_function_over_80_lines():
    long = sorted(
        f"{name}.{node.name}: {node.end_lineno - node.lineno + 1} lines"  # type: ignore[operator]
        for name, node in functions()
        if node.end_lineno - node.lineno + 1 > 80 and (name, node.name) not in LONG_ALLOWED  # type: ignore[operator]
    )
    assert long == []


def test_no_function_with_more_than_8_parameters():
    many = sorted(f"{name}.{node.name}: {parameters(node)}" for name, node in functions() if parameters(node) > 8)
    assert many == []


def test_command_line_modules_are_thin():
    thick = sorted(
        f"{name}: {len(path.read_text(encoding='utf-8').splitlines())} lines"
        for name, path in project_modules().items()
        if is_cli(name) and len(path.read_text(encoding="utf-8").splitlines()) > 150
    )
    assert thick == []


def test_the_size_checks_see_what_they_should():
    tree = ast.parse("def f(self, a, b, *args, c=1, **kw):\n    pass\n")
    node = tree.body[0]
    assert isinstance(node, ast.FunctionDef) and parameters(node) == 3
