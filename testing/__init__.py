"""Test support: real broker and cluster processes for tests, compat suites and benchmarks, and
the pytest plugin that gives users' own suites the `kafka_wire_broker` fixture."""
