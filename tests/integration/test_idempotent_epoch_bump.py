"""Issue 18: librdkafka's idempotent producer bumps its epoch when a message times out and re-sends a
possibly written batch of another partition from sequence 0; the broker must take that as the new
epoch's first batch, as Apache Kafka does (compat/idempotent_epoch_bump.py has the scenario).

Both brokers end with the same records and the same delivery reports: the record written twice
is librdkafka's doing, not a broker's. KW_SLOW=1 (about two minutes: the reference Kafka starts).
"""

import os

import pytest

from compat.idempotent_epoch_bump import run

pytestmark = pytest.mark.skipif(os.environ.get("KW_SLOW") != "1",
                                reason="KW_SLOW=1: runs the reference Kafka beside kafka-wire (~2 min)")


def test_epoch_bump_after_a_message_timeout_writes_the_same_records_as_kafka():
    ours = run("kafka-wire", verbose=False)
    kafka = run("4.3.0", verbose=False)
    assert ours["reports"] == kafka["reports"], (ours, kafka)
    assert ours["values"] == kafka["values"], (ours, kafka)
