"""The compatibility suite: unmodified real clients and librdkafka's own tests against a broker.

`kafka-wire compat` (compat/runner.py) runs them and prints a client x feature matrix;
compat/clients.py runs the client programs of tests/clients/, compat/librdkafka_suite.py builds
and runs librdkafka's integration tests, compat/matrix.py turns both into the matrix.
"""
