"""The layering rules of the code base, checked by reading every module's imports with ``ast``.

1. No import cycle among the project's modules, not even through imports made only for type checking.
2. Layers (:data:`LAYERS`, drawn in docs/architecture.md): a module imports from its own package and the layers below
   it only. The stages talk to later ones through files; only the dispatcher (``bridge/cli.py``) names every command,
   and only the library's facade (``bridge/api/``) and ``bridge.pyterrier`` call the evaluation and retrieval stages.
3. Only command-line modules (``cli.py``, ``*_cli.py``, ``__main__.py``) import
   ``argparse`` or another command-line module; a command's parsed arguments become settings there.
4. Small parts: no function over 80 lines (but the review app's routes), none with more than 8 parameters (a frozen
   dataclass of settings is the cure; its generated constructor is exempt), no command-line module over 150 lines (a
   command's work is a library function the command line calls), no module over 500 lines.
5. Rooms: no two folders of bridge/ import each other (a folder's modules depend along one axis), and no folder's own
   modules hold more than 15% of bridge/'s lines (a folder that large is a hall, not a room).
"""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("bridge",)


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
    return last in ("cli", "__main__") or last.endswith("_cli")


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
    assert is_cli("bridge.label.cli") and is_cli("bridge.evaluation.rag.cli") and not is_cli("bridge.label.labeler")


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


LONG_ALLOWED = {("bridge.review.app", "create_app")}
"""The review app's routes: one long template, read top to bottom."""


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


def test_no_module_over_500_lines():
    """A module says what it is; past 500 lines it is several things."""
    large = sorted(
        f"{name}: {n} lines"
        for name, path in project_modules().items()
        if (n := len(path.read_text(encoding="utf-8").splitlines())) > 500
    )
    assert large == []


def folder_of(name: str, modules: dict[str, Path]) -> str:
    """The folder a module's file lies in, relative to the repository (``bridge/judging/llm``)."""
    return modules[name].parent.relative_to(REPO).as_posix()


def folder_edges(edges: dict[str, set[str]], modules: dict[str, Path]) -> dict[str, set[str]]:
    """Folder -> the other folders its modules import."""
    out: dict[str, set[str]] = {}
    for name, targets in edges.items():
        here = folder_of(name, modules)
        out.setdefault(here, set()).update(
            there for t in targets if t in modules and (there := folder_of(t, modules)) != here
        )
    return out


def test_no_two_folders_import_each_other():
    """Typing-only imports included: a folder's modules may use another folder's, never the other way too."""
    modules = project_modules()
    folders = folder_edges(graph(typing_too=True), modules)
    both = sorted(f"{a} <-> {b}" for a, bs in folders.items() for b in bs if a < b and a in folders.get(b, ()))
    assert both == []
    assert cycles(folders) == []


def test_no_folder_holds_more_than_15_percent_of_the_lines():
    modules = project_modules()
    lines: dict[str, int] = {}
    for name, path in modules.items():
        folder = folder_of(name, modules)
        lines[folder] = lines.get(folder, 0) + len(path.read_text(encoding="utf-8").splitlines())
    total = sum(lines.values())
    halls = sorted(f"{folder}: {n / total:.0%}" for folder, n in lines.items() if n > 0.15 * total)
    assert halls == []


def test_the_folder_checks_see_what_they_should():
    modules = {
        "bridge.a.x": REPO / "bridge/a/x.py",
        "bridge.b.y": REPO / "bridge/b/y.py",
        "bridge.a.z": REPO / "bridge/a/z.py",
    }
    folders = folder_edges({"bridge.a.x": {"bridge.b.y"}, "bridge.b.y": {"bridge.a.z"}, "bridge.a.z": set()}, modules)
    assert folders == {"bridge/a": {"bridge/b"}, "bridge/b": {"bridge/a"}}
    assert cycles(folders) == [["bridge/a", "bridge/b"]]


def test_the_size_checks_see_what_they_should():
    tree = ast.parse("def f(self, a, b, *args, c=1, **kw):\n    pass\n")
    node = tree.body[0]
    assert isinstance(node, ast.FunctionDef) and parameters(node) == 3


# -- how far a command's arguments travel ---------------------------------------------------------------------------


def _definitions(sources: dict[str, str]) -> tuple[dict, dict]:
    """module -> {top-level function name: node}, and module -> {imported name: (module, name)}."""
    defs: dict[str, dict[str, ast.FunctionDef]] = {}
    names: dict[str, dict[str, tuple[str, str]]] = {}
    for module, text in sources.items():
        tree = ast.parse(text)
        defs[module] = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
        names[module] = {
            alias.asname or alias.name: (node.module, alias.name)
            for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom) and node.module in sources
            for alias in node.names
        }
    return defs, names


def argument_walk(sources: dict[str, str], module: str, function: str, parameter: str) -> list[tuple[str, str]]:
    """The calls a value makes through the code: from ``module.function``'s ``parameter``, every call of a project
    function that is handed that value (positionally or by keyword) and, in turn, the calls of its parameter.
    Each ``(caller module, callee module)`` is a call the reader follows into a callee and climbs back up from."""
    defs, names = _definitions(sources)
    seen: set[tuple[str, str]] = set()
    calls: list[tuple[str, str]] = []

    def visit(mod: str, fn: str, param: str) -> None:
        if (mod, fn) in seen:
            return
        seen.add((mod, fn))
        for node in ast.walk(defs[mod][fn]):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
                continue
            target = (mod, node.func.id) if node.func.id in defs[mod] else names[mod].get(node.func.id)
            if target is None or target[1] not in defs.get(target[0], {}):
                continue
            callee = defs[target[0]][target[1]]
            given = [a.arg for a in callee.args.args]
            handed = [given[i] for i, a in enumerate(node.args) if isinstance(a, ast.Name) and a.id == param]
            handed += [k.arg for k in node.keywords if isinstance(k.value, ast.Name) and k.value.id == param]
            for name in handed:
                calls.append((mod, target[0]))
                visit(target[0], target[1], name)

    visit(module, function, parameter)
    return calls


def climbs(calls: list[tuple[str, str]]) -> int:
    """Calls into another module: each is a file the reader opens and then climbs back up from."""
    return sum(caller != callee for caller, callee in calls)


def test_the_argument_walk_follows_the_value_and_nothing_else():
    sources = {
        "a": "from b import g, h\ndef f(args):\n    g(args)\n    h(1)\n    local(x=args)\ndef local(x):\n    g(x)\n",
        "b": "from c import k\ndef g(v):\n    k(1, v)\ndef h(n):\n    k(n, n)\n",
        "c": "def k(a, b):\n    return b\n",
    }
    # f -> g (a->b) -> k (b->c); f -> local (a->a; g already walked); h never sees args
    assert argument_walk(sources, "a", "f", "args") == [("a", "b"), ("b", "c"), ("a", "a"), ("a", "b")]
    assert climbs(argument_walk(sources, "a", "f", "args")) == 3


def test_bridge_labels_arguments_become_settings_near_the_command_line():
    """``bridge label``'s parsed arguments are read where the command line is and become frozen settings there: the
    reader following ``args`` opens fewer than 10 other modules (the settings carry the rest)."""
    sources = {name: path.read_text(encoding="utf-8") for name, path in project_modules().items()}
    calls = argument_walk(sources, "bridge.label.label_cli", "cmd_label", "args")
    assert calls, "the walk found no call: the checker lost the command"
    assert all(is_cli(callee) for _, callee in calls), "args reached a module below the command line"
    assert climbs(calls) < 10, calls


# -- layers ---------------------------------------------------------------------------------------------------------

LAYERS: tuple[frozenset[str], ...] = tuple(
    frozenset(layer.split())
    for layer in (
        "bridge.core",
        "bridge.datasets bridge.llm bridge.prompts",
        "bridge.encoders bridge.estimate bridge.pool",
        "bridge.judging bridge.doctor",
        "bridge.judging.fitting",
        "bridge.judging.free",
        "bridge.judging.llm",
        "bridge.judging.learned",
        "bridge.judging.quality",
        "bridge.label",
        "bridge.review bridge.retrievers",
        "bridge.evaluation.scoring",
        "bridge.evaluation.rebenchmark",
        "bridge.evaluation.reusability",
        "bridge.evaluation.report",
        "bridge.evaluation.score bridge.evaluation.rag bridge.evaluation.check",
        "bridge.evaluation.evaluate bridge.evaluation",
        "bridge.api",
        "bridge bridge.cli bridge.__main__ bridge.pyterrier",
    )
)
"""The packages from the bottom up, as docs/architecture.md draws them: a module imports only from its own package
and the layers below it."""


ROOMS = frozenset(name for layer in LAYERS for name in layer)


def package_of(module: str) -> str:
    """``bridge.label.chain`` -> ``bridge.label``; a room of a package that has its own layers stands for itself
    (``bridge.evaluation.report.blocks`` -> ``bridge.evaluation.report``); top-level modules of ``bridge`` stand alone
    (``bridge.cli``)."""
    parts = module.split(".")
    return next((p for p in (".".join(parts[:3]), ".".join(parts[:2])) if p in ROOMS), ".".join(parts[:2]))


def layer_of(module: str) -> int:
    package = package_of(module)
    found = [i for i, layer in enumerate(LAYERS) if package in layer]
    assert found, f"{module}: its package {package} is in no layer of LAYERS"
    return found[0]


def test_the_layer_check_sees_what_it_should():
    assert package_of("bridge.label.chain") == "bridge.label" and package_of("bridge") == "bridge"
    assert package_of("bridge.evaluation.report.writer") == "bridge.evaluation.report"
    assert layer_of("bridge.evaluation.scoring.curves") < layer_of("bridge.evaluation.report.writer")
    assert layer_of("bridge.core.trec") < layer_of("bridge.datasets.core")
    assert layer_of("bridge.label.chain") > layer_of("bridge.judging.base") > layer_of("bridge.llm.base")


def test_no_module_imports_from_a_layer_above_its_own():
    """Typing-only imports included: a reader of a layer needs nothing above it."""
    up = sorted(
        f"{name} imports {target}"
        for name, targets in graph(typing_too=True).items()
        for target in targets
        if target != "argparse" and layer_of(target) > layer_of(name)
    )
    assert up == []


CONVENTIONAL_NAMES = {"__init__", "cli", "options_cli", "base"}
"""File names every package may have: its package, its command line, its flags, its plug-in protocol and registry."""


def test_no_two_modules_share_a_name():
    """A module's file name says what it is, once: two ``measures.py`` or ``summary.py`` make a reader open both."""
    by_name: dict[str, list[str]] = {}
    for name, path in project_modules().items():
        by_name.setdefault(path.stem, []).append(name)
    twins = sorted(f"{stem}: {', '.join(sorted(names))}" for stem, names in by_name.items() if len(names) > 1)
    assert [t for t in twins if t.split(":")[0] not in CONVENTIONAL_NAMES] == []
