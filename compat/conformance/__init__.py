"""The differential conformance suite: the same requests to Apache Kafka and to kafka-wire, answers compared.

A scenario is written once, as a short sequence of requests through our wire client
(client/wire_client.py); the runner plays it against the reference Kafka (compat/reference_kafka.py)
and against a kafka-wire broker, decodes both sides' answers with kafka_wire, normalises the fields
that legitimately differ (normalize.py: one declared table, each entry with its reason) and compares
what is left field by field (compare.py). A difference is either listed in known.py — kept on
purpose, or an open conformance bug, each with its reason — or it is unexplained, and the run fails.

    kafka-wire compat --against-kafka 4.3.0      # writes compat/CONFORMANCE.md (and .json)

Modules: scenario.py (the registry and the Session a scenario talks through), scenarios/ (the
scenarios, one module per area), profiles.py (broker settings a scenario may ask for, on both
sides), normalize.py, compare.py, known.py, report.py, run.py (the command).
"""
