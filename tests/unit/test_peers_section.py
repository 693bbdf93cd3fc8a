"""compat/RESULTS.md's peers section (Kafka Streams, Connect, MirrorMaker 2) survives `kafka-wire compat`."""

from compat import peers


def test_the_peers_section_is_kept_whole(tmp_path):
    path = tmp_path / "RESULTS.md"
    section = f"{peers.SECTION_BEGIN}\n## Kafka Streams\n| a | b |\n{peers.SECTION_END}"
    path.write_text(f"# Compatibility results\n\nclients...\n\n{section}\n\ntrailing text\n")
    assert peers.kept_section(path) == f"\n{section}\n"


def test_no_section_keeps_nothing(tmp_path):
    path = tmp_path / "RESULTS.md"
    path.write_text("# Compatibility results\n")
    assert peers.kept_section(path) == ""
    assert peers.kept_section(tmp_path / "missing.md") == ""
