"""compat/tool_compare.py's normaliser: what it hides between Kafka's and kafka-wire's tool output, and
what it keeps (a difference outside its table stays a difference)."""

from __future__ import annotations

from compat.tool_compare import (ACLS, CONSUMER_GROUPS, PRODUCER_PERFORMANCE, TOPICS, TRANSACTIONS, Comparison,
                                 Normaliser, ToolRun)


def _same(tool: str, kafka: str, ours: str, *args: str, kafka_stderr: str = "", our_stderr: str = "") -> bool:
    return Comparison(tool, args, ToolRun(0, kafka, kafka_stderr), ToolRun(0, ours, our_stderr)).same


def test_ids_become_placeholders_numbered_by_first_appearance():
    kafka = "Topic: a\tTopicId: XdhfFcWjQICJp4Y9zgjxlw\tPartitionCount: 1\nTopic: b\tTopicId: wz27mOX9QqmzXfiWXY17Rg\n"
    ours = "Topic: a\tTopicId: 5R9gq0n6Q9Kk3vJqTq3c8A\tPartitionCount: 1\nTopic: b\tTopicId: Qq3c8A5R9gq0n6Q9Kk3vJq\n"
    assert _same(TOPICS, kafka, ours)
    # Two topics sharing one id on one side only is a difference.
    assert not _same(TOPICS, kafka, ours.replace("Qq3c8A5R9gq0n6Q9Kk3vJq", "5R9gq0n6Q9Kk3vJqTq3c8A"))
    assert not _same(TOPICS, kafka, ours.replace("PartitionCount: 1", "PartitionCount: 2"))


def test_member_ids_of_both_protocols():
    header = "GROUP  CONSUMER-ID  HOST  CLIENT-ID\n"
    classic = "g      app-1-0536d61f-3ab4-4031-9aa7-3cc99ed37129 /127.0.0.1 app-1\n"
    other = "g      app-1-f0a3d2c1-3ab4-4031-9aa7-3cc99ed37129 /127.0.0.1 app-1\n"
    assert _same(CONSUMER_GROUPS, header + classic, header + other)
    assert _same(CONSUMER_GROUPS, "g 3pT6Bi2pTP2LDPv8ksg5iw /127.0.0.1 app\n",
                 "g /fvrH2YGTfWiF/hKyy/zdw /127.0.0.1 app\n")
    assert not _same(CONSUMER_GROUPS, header + classic, header + other.replace("app-1 ", "app-2 ").replace(
        " app-1\n", " app-2\n"))


def test_transaction_tables_compare_cells_without_padding_and_clocks():
    kafka = ("ProducerId\tProducerEpoch\tLastTimestamp\tCurrentTransactionStartOffset\t\n"
             "1000      \t0            \t1795557356367\t0                            \t\n")
    ours = ("ProducerId\tProducerEpoch\tLastTimestamp\tCurrentTransactionStartOffset\t\n"
            "7         \t0            \t1795557356459\t0                            \t\n")
    assert _same(TRANSACTIONS, kafka, ours, "describe-producers")
    assert not _same(TRANSACTIONS, kafka, ours.replace("\t0                            \t", "\tNone\t"),
                     "describe-producers")


def test_listings_without_an_order():
    kafka = "TransactionalId\tCoordinator\tProducerId\tTransactionState\t\nb\t1\t0\tOngoing\t\na\t1\t1\tEmpty\t\n"
    ours = "TransactionalId\tCoordinator\tProducerId\tTransactionState\t\na\t1\t0\tEmpty\t\nb\t1\t1\tOngoing\t\n"
    assert _same(TRANSACTIONS, kafka, ours, "list")
    acls_kafka = "Current ACLs for resource `B`:\n\t(x)\n\t(y)\n\nCurrent ACLs for resource `A`:\n\t(z)\n\n"
    acls_ours = "Current ACLs for resource `A`:\n\t(z)\n\nCurrent ACLs for resource `B`:\n\t(y)\n\t(x)\n\n"
    assert _same(ACLS, acls_kafka, acls_ours)
    assert not _same(ACLS, acls_kafka, acls_ours.replace("(z)", "(w)"))


def test_measurements_and_log_lines_are_not_compared_but_counts_are():
    kafka = "1000 records sent, 3333.333333 records/sec (0.32 MB/sec), 116.45 ms avg latency, 338.00 ms max latency.\n"
    ours = "1000 records sent, 13513.513514 records/sec (1.29 MB/sec), 60.64 ms avg latency, 77.00 ms max latency.\n"
    assert _same(PRODUCER_PERFORMANCE, kafka, ours)
    assert not _same(PRODUCER_PERFORMANCE, kafka, ours.replace("1000 records sent", "999 records sent"))
    log = ("[2026-11-24 22:01:00,522] WARN [Producer clientId=producer-1] retrying\n"
           " (org.apache.kafka.clients.NetworkClient)\n")
    assert _same(TOPICS, "", "", kafka_stderr=log + "Error: x\n", our_stderr="Error: x\n")
    assert not _same(TOPICS, "", "", kafka_stderr="Error: x\n", our_stderr="Error: y\n")


def test_rules_apply_only_to_their_tools():
    # A 22-character word before a host column is a member id only in kafka-consumer-groups' output.
    assert Normaliser(TOPICS).text("x 3pT6Bi2pTP2LDPv8ksg5iw /127.0.0.1\n") == "x 3pT6Bi2pTP2LDPv8ksg5iw /127.0.0.1\n"
