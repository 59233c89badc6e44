"""Data flows one way: the compiled core never imports the config edge, the CLI, the harness or
pydantic; the edge may import the core. Read from the sources (every import, also inside
functions), so a lazy upward import fails here too."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CORE = ("aisim/speculation", "aisim/fpm", "aisim/replay", "aisim/catalogue")
UPSTREAM = ("aisim.config", "aisim.cli", "aisim.sweep", "qualification", "pydantic")


def _imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module is not None and node.level == 0:
            names.add(node.module)
    return names


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
        for name in sorted(_imports(module) | _module_targets(module)):
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
        "registry.py imports qualification.plan._model",
    ]
