"""The rooms of the house keep their arrows pointing one way (docs/ARCHITECTURE.md).

Imports are read from the source (every `import` and `from ... import`, at module level or inside a
function, except under `if TYPE_CHECKING:`), so a lazy import that runs back up is caught too.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# Each room and the rooms it may import. Rooms above the broker may use the client, the test
# support and one another as listed; nothing below may name anything above.
ALLOWED: dict[str, set[str]] = {
    "kafka_wire": set(),
    "log": {"kafka_wire"},
    "coordinator": {"log", "kafka_wire"},
    "broker": {"coordinator", "log", "kafka_wire"},
    "client": {"kafka_wire"},
    "testing": {"client", "kafka_wire"},
    "console": {"broker", "coordinator", "log", "kafka_wire", "client"},
    "registry": {"broker", "coordinator", "kafka_wire", "client"},
    "pipelines": {"client", "kafka_wire"},
    "compat": {"broker", "coordinator", "log", "kafka_wire", "client", "testing"},
    "bench": {"client", "testing", "kafka_wire", "log", "compat"},
    "cli": {"client", "kafka_wire", "log", "compat"},
}

# The command-line modules that are the broker's own, not clients of it: each may also import
# the broker (and serve, the console and the Schema Registry it starts). Everything else in cli/ is
# a Kafka client.
CLI_BROKER_MODULES = {
    "cli.commands.serve": {"broker", "console", "registry"},
    # Offline, `kafka-wire users` edits the SCRAM credentials in a stopped broker's data directory
    # (what `kafka-storage.sh format --add-scram` does for Kafka): the broker's own store and config.
    "cli.commands.users": {"broker"},
}

ROOMS = set(ALLOWED)


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def source_modules() -> dict[str, Path]:
    modules = {}
    for room in ROOMS:
        for path in (ROOT / room).rglob("*.py"):
            modules[module_name(path)] = path
    return modules


def _type_checking_only(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)


def imported_modules(path: Path, name: str) -> set[str]:
    """Every module named by an import in the file, relative imports resolved."""
    tree = ast.parse(path.read_text(), str(path))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        if _type_checking_only(node):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - (node.level - 1)]
                stem = ".".join(base + ([node.module] if node.module else []))
            else:
                stem = node.module or ""
            found.add(stem)
            # `from package import module` names a module too.
            found.update(f"{stem}.{alias.name}" for alias in node.names)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return found


def import_graph() -> dict[str, set[str]]:
    """Module -> the modules of ours it imports. An import of one's own enclosing package
    (`from . import x` in a submodule) is left out: Python runs the package first whatever the
    submodule says, so that edge is not a circle a reader has to untangle."""
    modules = source_modules()
    return {name: {m for m in imported_modules(path, name) if m in modules and not name.startswith(m + ".")}
            for name, path in modules.items()}


def room_of(module: str) -> str:
    return module.split(".", 1)[0]


def test_no_room_imports_a_room_above_it():
    wrong = []
    modules = source_modules()
    for name, path in sorted(modules.items()):
        room = room_of(name)
        allowed = ALLOWED[room] | CLI_BROKER_MODULES.get(name, set()) | {room}
        for imported in sorted(imported_modules(path, name)):
            target = room_of(imported)
            if target in ROOMS and target not in allowed:
                wrong.append(f"{name} imports {imported}")
    assert not wrong, "arrows that run the wrong way:\n" + "\n".join(wrong)


def test_no_import_cycles():
    """Tarjan's strongly connected components over the module graph: any component of more than
    one module (or a module importing itself) is a circle."""
    graph = import_graph()
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles: list[list[str]] = []
    counter = 0

    def strongconnect(start: str) -> None:
        nonlocal counter
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        circles.append(sorted(component))

    for module in sorted(graph):
        if module not in index:
            strongconnect(module)
    assert not circles, "import circles:\n" + "\n".join(" <-> ".join(c) for c in circles)


def test_the_layering_check_sees_a_lazy_import_running_up(tmp_path):
    """The reader finds an import inside a function, relative ones resolved: what the two tests
    above rely on."""
    room = tmp_path / "log"
    room.mkdir()
    (room / "__init__.py").write_text("")
    source = room / "segment.py"
    source.write_text("def f():\n    from ..broker import server\n    from .index import x\n")
    global ROOT
    saved, ROOT = ROOT, tmp_path
    try:
        found = imported_modules(source, "log.segment")
    finally:
        ROOT = saved
    assert {"broker", "broker.server", "log.index", "log.index.x"} <= found
