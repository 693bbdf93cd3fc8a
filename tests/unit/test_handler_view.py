"""Handlers touch the broker only through what BrokerView (broker/handler_view.py) declares.

The sources are read, not run: every `broker.<name>` (and `getattr(broker, "<name>")`) in a handler,
or in a module a handler hands its broker to, must be a member of the view, and every member of
the view must be something the Broker really has.
"""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

from broker.config import BrokerConfig
from broker.handler_view import BrokerView
from broker.node import Broker

ROOT = Path(__file__).resolve().parents[2]
HANDLERS = sorted((ROOT / "broker" / "handlers").glob("p*.py"))
# Modules whose functions handlers call with their broker (they act on it for the handler).
ON_BEHALF = [ROOT / "broker" / name for name in (
    "leader_hints.py", "topic_configs.py", "client_quotas.py", "dynamic_broker_config.py", "broker_loggers.py",
    "security/authorizer.py", "security/delegation_tokens.py")]


def declared() -> set[str]:
    members = set(BrokerView.__annotations__)
    members |= {name for name, value in vars(BrokerView).items()
                if not name.startswith("_") and (inspect.isfunction(value) or isinstance(value, property))}
    return members


def _is_broker(node: ast.AST) -> bool:
    """`broker`, or `self.broker` (a helper object holding the handler's broker)."""
    if isinstance(node, ast.Name):
        return node.id == "broker"
    return isinstance(node, ast.Attribute) and node.attr == "broker" and isinstance(node.value, ast.Name) \
        and node.value.id == "self"


def touched(path: Path) -> dict[str, int]:
    """Each broker member the module names, with the first line naming it."""
    found: dict[str, int] = {}
    for node in ast.walk(ast.parse(path.read_text())):
        name = None
        if isinstance(node, ast.Attribute) and _is_broker(node.value):
            name = node.attr
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                and node.func.id in ("getattr", "hasattr", "setattr") and len(node.args) >= 2 \
                and _is_broker(node.args[0]) and isinstance(node.args[1], ast.Constant):
            name = node.args[1].value
        if name is not None:
            found.setdefault(name, node.lineno)
    return found


def test_handlers_touch_only_what_the_view_declares():
    members = declared()
    undeclared = [f"{path.relative_to(ROOT)}:{line}: broker.{name}"
                  for path in [*HANDLERS, *ON_BEHALF] for name, line in sorted(touched(path).items())
                  if name not in members]
    assert not undeclared, "not in BrokerView (broker/handler_view.py):\n" + "\n".join(undeclared)


def test_the_check_sees_what_a_handler_touches(tmp_path):
    handler = tmp_path / "p99_example.py"
    handler.write_text("async def handle(broker, ctx, request):\n"
                       "    broker.logs.get('t', 0)\n"
                       "    return getattr(broker, 'secret_internals', None)\n")
    assert touched(handler) == {"logs": 2, "secret_internals": 3}
    assert "secret_internals" not in declared()


def test_every_handler_types_its_broker_with_the_view():
    untyped = []
    for path in HANDLERS:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for arg in [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]:
                    if arg.arg == "broker" and (arg.annotation is None or ast.unparse(arg.annotation) != "BrokerView"):
                        untyped.append(f"{path.name}:{node.lineno} {node.name}")
    assert not untyped


def test_the_broker_has_every_member_of_the_view(tmp_path):
    broker = Broker(BrokerConfig({"log.dirs": str(tmp_path), "listeners": "PLAINTEXT://127.0.0.1:0"}))
    try:
        missing = sorted(name for name in declared() if not hasattr(broker, name))
        assert not missing
        for name, value in vars(BrokerView).items():
            if inspect.isfunction(value) and not name.startswith("_"):
                assert list(inspect.signature(getattr(Broker, name)).parameters) == \
                    list(inspect.signature(value).parameters), name
    finally:
        broker.close()
