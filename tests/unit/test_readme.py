"""The README and docs/compatibility.md stay true: the "APIs served" table (docs/compatibility.md)
is exactly what ApiVersions advertises, lists every API Apache Kafka 4.3.0 advertises (captured in
tests/unit/data) with Kafka's versions and why we do not serve the others, the README's count of
them is the table's, and the two commands the README names exist."""

import re
from pathlib import Path

from broker.handlers import HANDLERS

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()
COMPATIBILITY = (ROOT / "docs" / "compatibility.md").read_text()


KAFKA_API_VERSIONS = ROOT / "tests" / "unit" / "data" / "apiversions-kafka-4.3.0.txt"
ZOOKEEPER_API_VERSIONS = ROOT / "tests" / "unit" / "data" / "apiversions-kafka-3.9.1-zookeeper.txt"


def captured(path: Path) -> dict[int, tuple[str, str]]:
    """{key: (name, "min-max")} of a captured ApiVersions answer (key name min max per line)."""
    versions = {}
    for line in path.read_text().splitlines():
        if line and not line.startswith("#"):
            key, name, lo, hi = line.split()
            versions[int(key)] = (name, f"{lo}-{hi}")
    return versions


def api_table() -> dict[int, tuple[str, str, str, str]]:
    section = COMPATIBILITY[COMPATIBILITY.index("\n## APIs served\n"):]
    next_section = section.find("\n## ", 1)
    section = section if next_section == -1 else section[:next_section]
    rows = re.findall(r"^\| (\w+) \| (\d+) \| ([\d-]+) \| ([\d-]+) \| (.*?) ?\|$", section, re.M)
    assert rows, "no API table under ## APIs served"
    table = {int(key): (name, theirs, ours, why) for name, key, theirs, ours, why in rows}
    assert len(table) == len(rows), "an API key listed twice"
    return table


def test_api_table_matches_the_registered_handlers():
    """The kafka-wire column is exactly what ApiVersions advertises."""
    served = {key: (h.api.name, f"{h.min_version}-{h.max_version}") for key, h in HANDLERS.items()}
    listed = {key: (name, ours) for key, (name, _, ours, _) in api_table().items() if ours != "-"}
    assert listed == served


def test_api_table_lists_every_api_kafka_advertises_with_its_versions():
    """Every API key Kafka 4.3.0 advertises is a row, with Kafka's version range beside ours."""
    kafka = captured(KAFKA_API_VERSIONS)
    table = api_table()
    assert {key: (name, theirs) for key, (name, theirs, _, _) in table.items() if theirs != "-"} == kafka


def test_every_api_not_served_says_why():
    for key, (name, _, ours, why) in api_table().items():
        assert (ours == "-") == bool(why.strip()), f"{name} ({key}): a reason exactly when not served"


def test_kraft_only_apis_were_not_served_by_a_zookeeper_mode_kafka():
    """The rows that say "KRaft only" are right: Kafka 3.9.1 in ZooKeeper mode (captured) did not
    advertise them."""
    zookeeper_mode = captured(ZOOKEEPER_API_VERSIONS)
    kraft_only = [key for key, (_, _, _, why) in api_table().items() if why.startswith("KRaft only")]
    assert kraft_only and not set(kraft_only) & set(zookeeper_mode)


def test_the_readme_counts_the_apis_as_the_table_does():
    """The front page's "advertises N of the M APIs Apache Kafka 4.3.0 advertises" is the table's."""
    table = api_table()
    served = sum(ours != "-" for _, _, ours, _ in table.values())
    kafka = sum(theirs != "-" for _, theirs, _, _ in table.values())
    claim = re.search(r"advertises (\d+) of the (\d+) APIs\s+Apache Kafka 4\.3\.0 advertises", README)
    assert claim, "the README no longer says how many of Kafka's APIs kafka-wire serves"
    assert (int(claim[1]), int(claim[2])) == (served, kafka)


def test_the_two_commands_exist_and_ci_runs_the_test_command():
    assert "    bash scripts/serve.sh\n" in README
    assert "    bash scripts/test.sh\n" in README
    assert (ROOT / "scripts" / "serve.sh").is_file()
    assert (ROOT / "scripts" / "test.sh").is_file()
    assert "scripts/test.sh" in (ROOT / ".ci" / "run").read_text()
