"""The cluster's transaction marker channel: a marker counts once replicated, and an answer belongs
to the marker it was sent for (found by the fault harness: partition-leader-zk x txn read 27 records
of an aborted transaction, partition-leader-followers x txn left a transaction open in txn-out-0)."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

from broker.cluster.transaction_failover import TransactionMarkerChannel
from kafka_wire.errors import ErrorCode

PID, EPOCH, COORDINATOR_EPOCH = 2000, 2, 7
TP = ("txn-out", 2)


class Partitions:
    """What the channel asks of its broker: leaders, appends (counted), replication (released by hand)."""

    def __init__(self, leader: int = 1, owned: bool = True) -> None:
        self.leader = leader
        self.owned = owned  # whether this process (one worker of several) owns the partitions
        self.appended: list[tuple] = []
        self.replication: list[asyncio.Future] = []
        self.node_id = 1
        self.metadata = SimpleNamespace(topic=lambda name: object(),
                                        leader_and_isr=lambda t, p: SimpleNamespace(leader=self.leader),
                                        brokers={})

    def owns(self, topic, partition) -> bool:
        return self.owned

    def inter_broker_listener(self) -> str:
        return "PLAINTEXT"

    def write_txn_markers(self, pid, epoch, coordinator_epoch, committed, partitions, transaction_version=0):
        self.appended.extend((pid, epoch, committed, *tp) for tp in partitions)
        return dict.fromkeys(partitions, ErrorCode.NONE)

    async def await_durable(self, partitions, timeout_ms):  # replicated (and synced, log.flush.on.ack)
        future = asyncio.get_running_loop().create_future()
        self.replication.append(future)
        error = await future
        return dict.fromkeys(partitions, error)


async def settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


def test_a_local_marker_counts_once_the_replicas_have_it():
    async def scenario():
        broker = Partitions()
        channel = TransactionMarkerChannel(broker)
        answered = []
        channel.on_answer = lambda: answered.append(True)
        assert channel.write(PID, EPOCH, COORDINATOR_EPOCH, False, [TP]) == {TP: ErrorCode.REQUEST_TIMED_OUT}
        await settle()
        # Asked again while the followers have not fetched it: still pending, not appended twice.
        assert channel.write(PID, EPOCH, COORDINATOR_EPOCH, False, [TP]) == {TP: ErrorCode.REQUEST_TIMED_OUT}
        assert len(broker.appended) == 1 and not answered
        broker.replication[0].set_result(ErrorCode.NONE)
        await settle()
        assert answered
        assert channel.write(PID, EPOCH, COORDINATOR_EPOCH, False, [TP]) == {TP: ErrorCode.NONE}
        assert not channel.answers and not channel.in_flight

    asyncio.run(scenario())


def test_a_marker_for_another_workers_partition_goes_to_the_broker_not_the_local_log():
    """A cluster broker of several workers: this broker leads the partition but another worker owns
    it, so the marker is sent with WriteTxnMarkers (to this broker) instead of appended here."""
    async def scenario():
        broker = Partitions(owned=False)  # (no endpoint known: the send answers NOT_LEADER_OR_FOLLOWER)
        channel = TransactionMarkerChannel(broker)
        assert channel.write(PID, EPOCH, COORDINATOR_EPOCH, True, [TP]) == {TP: ErrorCode.REQUEST_TIMED_OUT}
        await settle()
        assert broker.appended == [] and broker.replication == []
        assert channel.write(PID, EPOCH, COORDINATOR_EPOCH, True, [TP]) == {TP: ErrorCode.NOT_LEADER_OR_FOLLOWER}

    asyncio.run(scenario())


def test_a_marker_the_replicas_did_not_get_is_written_again():
    async def scenario():
        broker = Partitions()
        channel = TransactionMarkerChannel(broker)
        channel.write(PID, EPOCH, COORDINATOR_EPOCH, True, [TP])
        await settle()
        broker.replication[0].set_result(ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND)
        await settle()
        assert channel.write(PID, EPOCH, COORDINATOR_EPOCH, True, [TP]) == {TP: ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND}
        assert channel.write(PID, EPOCH, COORDINATOR_EPOCH, True, [TP]) == {TP: ErrorCode.REQUEST_TIMED_OUT}
        assert len(broker.appended) == 2

    asyncio.run(scenario())


def test_an_answer_for_a_forgotten_transaction_is_not_taken_for_the_next_one():
    """The coordinator lost __transaction_state (resign) while a marker was under way and got it back;
    the same producer's next transaction has the same key (same id, and epoch before TV2). The old
    marker's late answer must not stand for the new transaction's marker."""
    async def scenario():
        broker = Partitions()
        channel = TransactionMarkerChannel(broker)
        channel.write(PID, EPOCH, COORDINATOR_EPOCH, False, [TP])
        await settle()
        channel.forget({PID})
        broker.replication[0].set_result(ErrorCode.NONE)  # the old marker's answer arrives late
        await settle()
        assert not channel.answers
        # The next transaction's abort: a marker of its own is appended, and pending until replicated.
        assert channel.write(PID, EPOCH, COORDINATOR_EPOCH + 1, False, [TP]) == {TP: ErrorCode.REQUEST_TIMED_OUT}
        assert len(broker.appended) == 2

    asyncio.run(scenario())


def test_a_superseded_marker_answer_is_dropped():
    async def scenario():
        broker = Partitions(leader=3)  # another broker leads; it has no endpoint here: the send fails
        channel = TransactionMarkerChannel(broker)
        channel.write(PID, EPOCH, COORDINATOR_EPOCH, True, [TP])
        key = (PID, EPOCH, True, *TP)
        number = channel.in_flight[key]
        await settle()
        assert channel.write(PID, EPOCH, COORDINATOR_EPOCH, True, [TP]) == {TP: ErrorCode.NOT_LEADER_OR_FOLLOWER}
        channel._answer(key, number, ErrorCode.NONE)  # an answer for a marker no longer wanted
        assert not channel.answers

    asyncio.run(scenario())
