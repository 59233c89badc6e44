"""The import graph is the architecture (docs/design.md#layers): data flows one way, from the
config edge down into the compiled core, and these tests read it from the sources.

Every import counts: top-level and lazy ones inside functions, absolute and relative
(``from ..config import run_replay``), ``import a.b`` and ``from pkg import module``; each is
resolved to the module it loads. On that graph: the layer contract (a module imports only its
own package and the layers below it), no import cycle, and no module importing another
package's private (``_``) module.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CORE = ("aisim/speculation", "aisim/fpm", "aisim/replay", "aisim/catalogue")
UPSTREAM = ("aisim.config", "aisim.cli", "aisim.sweep", "qualification", "pydantic")
#: The packages whose module graph the cycle and private-import guards read.
SCANNED = ("aisim", "qualification")

#: aisim's layers, lowest first (docs/design.md#layers). A module may import its own package
#: and anything in a lower layer, never a higher one; the layer of a module is that of the
#: longest entry naming it or a package above it (``"aisim"`` alone is the facade,
#: ``aisim/__init__.py``). Packages in one layer do not import each other.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("aisim.errors", "aisim._text", "aisim._input_limits"),
    ("aisim._fields", "aisim._yaml", "aisim._extras", "aisim._build"),
    ("aisim._io",),
    # The public faces of the helpers, for the harness and users' tools (docs/api.md).
    ("aisim.files", "aisim.fields", "aisim.extras"),
    ("aisim.catalogue",),
    ("aisim.speculation",),
    # The forward-pass estimators and the replay are independent: the replay prices passes
    # through the pricer protocol it declares, and the config edge plugs an estimator in.
    ("aisim.fpm", "aisim.replay"),
    ("aisim.traffic",),
    ("aisim.config",),
    ("aisim",),
    ("aisim.sweep",),
    # Intervals replay Monte Carlo replicas on the sweep's backends; a sweep point's replica
    # runs through its draw's own run(), so the sweep never imports this package.
    ("aisim.uncertainty",),
    ("aisim.cli",),
    ("aisim.__main__",),
)


def _modules(root: Path, top: str) -> dict[str, tuple[Path, bool]]:
    """Dotted module name -> (file, is a package) for every module under ``root / top``."""
    found: dict[str, tuple[Path, bool]] = {}
    for path in sorted((root / top).rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        package = parts[-1] == "__init__"
        if package:
            parts = parts[:-1]
        found[".".join(parts)] = (path, package)
    return found


def _targets(name: str, package: bool, node: ast.Import | ast.ImportFrom) -> list[str]:
    """The dotted names an import statement in module ``name`` loads, relative ones resolved:
    ``import a.b`` names ``a.b``; ``from pkg import x`` names ``pkg.x`` (a module) or ``pkg``."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if node.level:
        base = name.split(".") if package else name.split(".")[:-1]
        base = base[: len(base) - (node.level - 1)]
        prefix = ".".join(base + ([node.module] if node.module else []))
    else:
        prefix = node.module or ""
    return [f"{prefix}.{alias.name}" for alias in node.names]


@functools.cache
def _graph(root: Path = ROOT, tops: tuple[str, ...] = ("aisim",)) -> dict[str, set[str]]:
    """Module -> the modules (and outside names, such as ``pydantic``) it imports, anywhere in
    its source; a name inside the scanned packages is reduced to the module that defines it."""
    modules: dict[str, tuple[Path, bool]] = {}
    for top in tops:
        modules.update(_modules(root, top))
    graph: dict[str, set[str]] = {}
    for name, (path, package) in modules.items():
        imported: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, (ast.Import, ast.ImportFrom)):
                continue
            for target in _targets(name, package, node):
                if isinstance(node, ast.ImportFrom) and target not in modules:
                    target = target.rpartition(".")[0]  # a name defined in that module
                inside = target
                while inside and inside not in modules:
                    inside = inside.rpartition(".")[0]
                # A name outside the scanned packages (``pydantic``) is kept as written.
                imported.add(inside or target)
        imported.discard(name)
        graph[name] = imported
    return graph


def _imports(path: Path, root: Path = ROOT) -> set[str]:
    """What the module at ``path`` imports, lazy and relative imports resolved: for
    ``from pkg import x`` both ``pkg`` and ``pkg.x`` (a superset, for checks that forbid)."""
    parts = list(path.relative_to(root).with_suffix("").parts)
    package = parts[-1] == "__init__"
    name = ".".join(parts[:-1] if package else parts)
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            targets = _targets(name, package, node)
            names.update(targets)
            if isinstance(node, ast.ImportFrom):
                names.update(target.rpartition(".")[0] for target in targets)
    return names


def _layer(module: str) -> int:
    best, where = -1, -1
    for index, entries in enumerate(LAYERS):
        for entry in entries:
            matches = module == entry or (entry != "aisim" and module.startswith(entry + "."))
            if matches and len(entry) > best:
                best, where = len(entry), index
    return where


def _unit(module: str) -> str:
    """The layer entry a module belongs to (its package, or the module itself)."""
    for entries in LAYERS:
        for entry in entries:
            if module == entry or (entry != "aisim" and module.startswith(entry + ".")):
                return entry
    return module


def layer_violations(root: Path = ROOT) -> list[str]:
    graph = _graph(root)
    offenders = []
    for module, imported in sorted(graph.items()):
        own = _layer(module)
        assert own >= 0, f"{module} is in no layer of LAYERS: add it there and to docs/design.md"
        for target in sorted(imported):
            if not target.startswith("aisim"):
                continue
            theirs = _layer(target)
            if _unit(target) == _unit(module):
                continue
            if theirs >= own:
                offenders.append(f"{module} imports {target} (layer {own} -> {theirs})")
    return offenders


def import_cycles(root: Path = ROOT, tops: tuple[str, ...] = SCANNED) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    graph = _graph(root, tops)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []
    counter = 0
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start] & graph.keys())))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child] & graph.keys()))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    cycles.append(sorted(component))
    return cycles


def private_imports(root: Path = ROOT, tops: tuple[str, ...] = SCANNED) -> list[str]:
    """Imports of another package's private module or private name: ``pkg._mod`` and
    ``pkg.mod._name`` may be imported from ``pkg`` and the packages inside it only
    (``aisim._io`` from anywhere in aisim, ``aisim.replay._plan`` from aisim.replay only,
    ``qualification.mape._render`` from qualification.mape only)."""
    modules: dict[str, tuple[Path, bool]] = {}
    for top in tops:
        modules.update(_modules(root, top))

    def owner(module: str) -> str:
        return module if modules[module][1] else module.rpartition(".")[0]

    def inside(package: str, parent: str) -> bool:
        return package == parent or package.startswith(parent + ".")

    offenders = []
    for module, imported in sorted(_graph(root, tops).items()):
        for target in sorted(imported & modules.keys()):
            parent, _, last = target.rpartition(".")
            private = last.startswith("_") and not last.startswith("__")
            if private and not inside(owner(module), parent):
                offenders.append(f"{module} imports {target}")
    # ``from pkg.mod import _helper``: a private name, not a module, of another package.
    for module, (path, package) in sorted(modules.items()):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.ImportFrom):
                continue
            for alias, target in zip(node.names, _targets(module, package, node), strict=True):
                source = target.rpartition(".")[0]
                private = alias.name.startswith("_") and not alias.name.startswith("__")
                foreign = source in modules and not inside(owner(module), owner(source))
                if private and target not in modules and foreign:
                    offenders.append(f"{module} imports {target}")
    return offenders


def test_the_layers_hold() -> None:
    offenders = layer_violations()
    assert offenders == [], "upward imports: " + "; ".join(offenders)


def test_there_is_no_import_cycle() -> None:
    cycles = import_cycles()
    assert cycles == [], "import cycles: " + "; ".join(" <-> ".join(cycle) for cycle in cycles)


def test_no_module_imports_another_packages_private_module() -> None:
    offenders = private_imports()
    assert offenders == [], "private imports across packages: " + "; ".join(offenders)


def _tree(tmp_path: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return tmp_path


def test_the_guards_see_relative_and_lazy_imports(tmp_path: Path) -> None:
    # A miniature aisim: each guard must catch the import a plain scan of absolute,
    # top-level imports would miss.
    root = _tree(
        tmp_path,
        {
            "aisim/__init__.py": "",
            "aisim/config/__init__.py": "from aisim.config._run import run_replay\n",
            "aisim/config/_run.py": "from aisim.replay import _engine\n",
            "aisim/replay/__init__.py": "",
            "aisim/replay/_engine.py": (
                "def price():\n    from ..config import run_replay\n    return run_replay\n"
            ),
        },
    )
    assert layer_violations(root) == ["aisim.replay._engine imports aisim.config (layer 6 -> 8)"]
    assert import_cycles(root) == [["aisim.config", "aisim.config._run", "aisim.replay._engine"]]
    assert private_imports(root) == ["aisim.config._run imports aisim.replay._engine"]


def test_the_guards_cover_the_harness(tmp_path: Path) -> None:
    # A miniature harness: a cycle through a lazy import, a relative import of another
    # package's private module and of a private name; the public route is not flagged.
    root = _tree(
        tmp_path,
        {
            "aisim/__init__.py": "",
            "qualification/__init__.py": "",
            "qualification/mape/__init__.py": "from qualification.mape._render import plots\n",
            "qualification/mape/_render.py": (
                "def plots():\n    from qualification.report import build\n    return build\n"
            ),
            "qualification/report/__init__.py": "from ._build import build\n",
            "qualification/report/_build.py": (
                "from ..mape._render import _png\n\n"
                "def build():\n    from qualification.mape import plots\n    return plots, _png\n"
            ),
        },
    )
    assert import_cycles(root) == [
        [
            "qualification.mape",
            "qualification.mape._render",
            "qualification.report",
            "qualification.report._build",
        ]
    ]
    assert private_imports(root) == [
        "qualification.report._build imports qualification.mape._render",
        "qualification.report._build imports qualification.mape._render._png",
    ]


def test_the_core_never_imports_upstream() -> None:
    offenders = []
    for package in CORE:
        for module in sorted((ROOT / package).rglob("*.py")):
            for name in sorted(_imports(module)):
                if any(name == top or name.startswith(top + ".") for top in UPSTREAM):
                    offenders.append(f"{module.relative_to(ROOT)} imports {name}")
    assert offenders == []


def test_the_edge_imports_the_core_not_the_cli() -> None:
    for module in sorted((ROOT / "aisim" / "config").rglob("*.py")):
        imported = _imports(module)
        assert not any(name.startswith(("aisim.cli", "qualification")) for name in imported), module


def _compiled_modules() -> list[str]:
    """setup.py's compiled list, read without running setup()."""
    source = (ROOT / "setup.py").read_text(encoding="utf-8").split("ext_modules = []")[0]
    namespace: dict[str, object] = {"__name__": "setup_list"}
    exec(compile(source, "setup.py", "exec"), namespace)
    compiled = namespace["compiled_modules"]
    assert callable(compiled)
    import os

    here = os.getcwd()
    try:
        os.chdir(ROOT)
        return list(compiled())
    finally:
        os.chdir(here)


NO_IO_OR_PARSING = ("pydantic", "yaml", "aisim._io", "aisim._yaml", "pathlib", "aisim.config")


def test_compiled_modules_do_no_parsing_library_or_file_io() -> None:
    """The compiled core takes frozen specs: no pydantic/YAML, no file reads (issue 13)."""
    modules = _compiled_modules()
    assert "aisim/catalogue/_specs.py" in modules
    offenders = []
    for module in modules:
        path = ROOT / module
        for name in sorted(_imports(path)):
            if any(name == top or name.startswith(top + ".") for top in NO_IO_OR_PARSING):
                offenders.append(f"{module} imports {name}")
        text = path.read_text(encoding="utf-8")
        for call in ("open(", ".read_text(", ".read_bytes("):
            if call in text:
                offenders.append(f"{module} calls {call}")
    assert offenders == []


def test_the_harness_uses_only_the_public_cli() -> None:
    """qualification/ calls aisim.cli's public names (main, build_parser, the argument
    converters), never its private subcommand modules."""
    offenders = []
    for module in sorted((ROOT / "qualification").rglob("*.py")):
        for name in sorted(_imports(module)):
            if name.startswith("aisim.cli._"):
                offenders.append(f"{module.relative_to(ROOT)} imports {name}")
    assert offenders == []


def test_no_compiled_module_uses_the_field_readers() -> None:
    """The ``aisim._fields`` readers check untrusted values: the edges use them (``aisim.config``,
    the interpreted ``aisim.fpm._inputs``); compiled modules take typed values and import only
    the message helpers of ``aisim._text``. ``_fields`` itself is not compiled."""
    modules = _compiled_modules()
    assert "aisim/_fields.py" not in modules
    assert "aisim/fpm/_inputs.py" not in modules
    assert "aisim/_text.py" in modules
    offenders = [
        f"{module} imports {name}"
        for module in modules
        for name in sorted(_imports(ROOT / module))
        if name == "aisim._fields"
    ]
    assert offenders == []
    # The edge module really is the one using them (else this test checks a renamed nothing).
    assert "aisim._fields" in _imports(ROOT / "aisim" / "fpm" / "_inputs.py")


def _module_targets(path: Path) -> set[str]:
    """String constants shaped as an import target (``"pkg.module"`` / ``"pkg.module:attr"``),
    as ``importlib.import_module`` or a ``"module:attribute"`` registry would load them."""
    import re

    shape = re.compile(r"[A-Za-z_]\w*(\.\w+)*(:\w+)?")
    return {
        node.value.partition(":")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and shape.fullmatch(node.value)
    }


def _qualification_imports(package: Path, root: Path = ROOT) -> list[str]:
    offenders = []
    for module in sorted(package.rglob("*.py")):
        for name in sorted(_imports(module, root) | _module_targets(module)):
            if name == "qualification" or name.startswith("qualification."):
                offenders.append(f"{module.relative_to(root)} imports {name}")
    return offenders


def test_aisim_never_imports_the_harness() -> None:
    # One way only: qualification imports aisim; aisim finds the harness's subcommands and config
    # kinds through entry points (pyproject.toml, docs/design.md#import-graph). Every import
    # statement counts, also lazy ones inside functions, and so do "module:attribute" strings.
    assert _qualification_imports(ROOT / "aisim") == []


def test_the_harness_scan_sees_lazy_and_string_imports(tmp_path: Path) -> None:
    # The scan above would catch the cycle this replaced: a lazy import inside a function and an
    # import_module target string.
    (tmp_path / "lazy.py").write_text(
        "def run():\n    from qualification.gate import compare_snapshots\n", encoding="utf-8"
    )
    (tmp_path / "registry.py").write_text(
        'KINDS = {"plan": "qualification.plan._model:Plan"}\n', encoding="utf-8"
    )
    (tmp_path / "prose.py").write_text(
        '"""The logic lives in ``qualification.gate``."""\n', encoding="utf-8"
    )
    assert _qualification_imports(tmp_path, tmp_path) == [
        "lazy.py imports qualification.gate",
        "lazy.py imports qualification.gate.compare_snapshots",
        "registry.py imports qualification.plan._model",
    ]
