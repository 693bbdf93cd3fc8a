"""Exits 0 when the running interpreter's environment has what pyproject.toml asks for, 1 otherwise.

Usage: .venv/bin/python scripts/venv_is_current.py [EXTRA ...]

Checks the project itself (kafka-wire) and every dependency of the project and of the named
extras: a `name==version` pin must be installed at exactly that version, anything else must be
installed at all. Lets scripts/setup.sh and scripts/setup-tests.sh skip pip when nothing changed
(a second run takes a fraction of a second) and still notice a venv that drifted, e.g. after
someone installed another version of a client by hand. Standard library only.
"""

from __future__ import annotations

import importlib.metadata
import re
import sys
import tomllib
from pathlib import Path

PYPROJECT = Path(__file__).resolve().parent.parent / "pyproject.toml"


def requirements(extras: list[str]) -> list[str]:
    project = tomllib.loads(PYPROJECT.read_text())["project"]
    wanted = [project["name"], *project.get("dependencies", [])]
    for extra in extras:
        wanted += project.get("optional-dependencies", {})[extra]
    return wanted


def problem(requirement: str) -> str | None:
    spec = requirement.split(";")[0].strip()  # environment markers: every platform we run on is Linux
    name = re.split(r"[\s<>=!~\[]", spec, maxsplit=1)[0]
    try:
        installed = importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return f"{name} is not installed"
    pinned = re.search(r"==\s*([^\s,]+)", spec)
    if pinned and installed != pinned.group(1):
        return f"{name} {installed} is installed, pyproject.toml pins {pinned.group(1)}"
    return None


def main() -> int:
    problems = [p for r in requirements(sys.argv[1:]) if (p := problem(r))]
    for found in problems:
        print(f"venv_is_current: {found}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
