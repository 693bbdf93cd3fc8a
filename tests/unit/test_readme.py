"""The README stays true: its API table is exactly what ApiVersions advertises, and the two
commands it names exist."""

import re
from pathlib import Path

from broker.handlers import HANDLERS

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()


def test_api_table_matches_the_registered_handlers():
    section = README[README.index("## APIs served"):]
    section = section[:section.index("\n## ", 1)]
    rows = re.findall(r"^\| (\w+) \| (\d+) \| (\d+)-(\d+) \|", section, re.M)
    table = {int(key): (name, int(lo), int(hi)) for name, key, lo, hi in rows}
    served = {key: (h.api.name, h.min_version, h.max_version) for key, h in HANDLERS.items()}
    assert table == served


def test_the_two_commands_exist_and_ci_runs_the_test_command():
    assert "    bash scripts/serve.sh\n" in README
    assert "    bash scripts/test.sh\n" in README
    assert (ROOT / "scripts" / "serve.sh").is_file()
    assert (ROOT / "scripts" / "test.sh").is_file()
    assert "scripts/test.sh" in (ROOT / ".ci" / "run").read_text()
