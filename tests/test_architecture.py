"""The rooms of ``src/hermes`` and the one direction of their imports (docs/architecture.md).

Every ``import`` and ``from … import`` in the source — at module level, inside functions and under
``TYPE_CHECKING`` alike — may only name the module's own room or a room below it in :data:`LAYERS`.
Inside ``tools/``, a tool family may use the shared modules of ``tools/`` but never another family.
No exceptions are listed: a new arrow upwards is a design change, made here and in the doc together.
"""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "src" / "hermes"

#: top to bottom; a room may import only itself and the rooms after it
LAYERS: tuple[str, ...] = (
    "__main__",
    "cli",
    "toolgateway",
    "surfaces",
    "agent",
    "tools",
    "plugins",
    "connectors",
    "routing",
    "vendors",
    "media",
    "net",
    "store",
    "config",
    "redact",
    "errors",
    "__init__",
)


def room_of(path: Path) -> str:
    rel = path.relative_to(SRC)
    return rel.parts[0].removesuffix(".py")


def hermes_imports(path: Path) -> list[tuple[int, str]]:
    """``(line, module)`` for every absolute import of a ``hermes`` module in ``path``."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names if alias.name.startswith("hermes."))
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, f"{path}:{node.lineno}: relative import; write it absolute"
            if node.module and (node.module == "hermes" or node.module.startswith("hermes.")):
                if node.module == "hermes":  # a room, or a name of the package itself (``__version__``)
                    found.extend((node.lineno, f"hermes.{alias.name}" if (SRC / alias.name).is_dir()
                                  or (SRC / f"{alias.name}.py").exists() else "hermes.__init__")
                                 for alias in node.names)
                else:
                    found.append((node.lineno, node.module))
    return found


def sources() -> list[Path]:
    return sorted(SRC.rglob("*.py"))


def test_every_room_is_in_the_layer_list() -> None:
    rooms = {room_of(p) for p in sources()} | {p.name for p in SRC.iterdir() if p.is_dir() and p.name != "__pycache__"}
    assert rooms <= set(LAYERS), f"rooms missing from LAYERS: {sorted(rooms - set(LAYERS))}"


def test_imports_only_run_down() -> None:
    rank = {room: i for i, room in enumerate(LAYERS)}
    upward: list[str] = []
    for path in sources():
        mine = room_of(path)
        for line, module in hermes_imports(path):
            target = module.split(".")[1]
            if target not in rank:
                upward.append(f"{path.relative_to(SRC)}:{line} imports {module}: unknown room {target!r}")
            elif rank[target] < rank[mine]:
                upward.append(f"{path.relative_to(SRC)}:{line} imports {module} ({mine} → {target} runs up)")
    assert upward == [], "\n".join(upward)


def tool_families() -> set[str]:
    """Packages of ``tools/`` that register tools (discovery's rule: ``registry.register(`` at column 0);
    a package that registers none (``routed/``) is shared by the families."""
    return {p.name for p in (SRC / "tools").iterdir() if p.is_dir() and (p / "__init__.py").exists()
            and any(line.startswith("registry.register(") for f in p.rglob("*.py")
                    for line in f.read_text(encoding="utf-8").splitlines())}


def test_the_routed_families_are_families() -> None:
    assert {"web", "image", "audio", "vision", "x", "file", "memory", "skills"} <= tool_families()
    assert "routed" not in tool_families()


def test_tool_families_never_import_each_other() -> None:
    families = tool_families()
    crossing: list[str] = []
    for path in sorted((SRC / "tools").rglob("*.py")):
        parts = path.relative_to(SRC / "tools").parts
        mine = parts[0] if len(parts) > 1 else None
        for line, module in hermes_imports(path):
            bits = module.split(".")
            if len(bits) < 3 or bits[1] != "tools" or bits[2] not in families:
                continue
            if mine is None:
                crossing.append(f"tools/{'/'.join(parts)}:{line} imports the family {module} (the shared "
                                "modules of tools/ stay below the families)")
            elif bits[2] != mine:
                crossing.append(f"tools/{'/'.join(parts)}:{line} imports {module} (family {mine} → {bits[2]})")
    assert crossing == [], "\n".join(crossing)


def test_the_order_is_written_once_in_the_docs() -> None:
    doc = (SRC.parent.parent / "docs" / "architecture.md").read_text(encoding="utf-8")
    written = " → ".join(room for room in LAYERS if not room.startswith("__"))
    assert written in doc, f"docs/architecture.md should state the order as: {written}"
