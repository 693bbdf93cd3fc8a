"""Delay every packet a network namespace sends, without netem: iptables NFQUEUE and a verdict later.

Run inside the namespace (netns.py starts it with `ip netns exec` and adds the rule that queues the
node's outgoing packets, `iptables -A OUTPUT -o eth0 -j NFQUEUE --queue-num N`):

    python -m compat.faults.delay_queue --queue 7 --delay-ms 200

It binds netfilter queue N over a netlink socket (nfnetlink_queue; the protocol is spoken here
directly, no library), asks for packet metadata only, and gives each queued packet its ACCEPT
verdict `delay` after it was queued. Verdicts go out in queue order (one batch verdict accepts every
packet up to an id), so order is kept, as netem's constant delay keeps it. Established connections
are delayed as much as new ones. It prints `ready` once bound; on SIGTERM it accepts everything
still queued and exits (the rule should be removed first).
"""

from __future__ import annotations

import argparse
import collections
import errno
import os
import select
import signal
import socket
import struct
import sys
import time

NETLINK_NETFILTER = 12
NFNL_SUBSYS_QUEUE = 3
NFQNL_MSG_PACKET, NFQNL_MSG_VERDICT, NFQNL_MSG_CONFIG, NFQNL_MSG_VERDICT_BATCH = 0, 1, 2, 3
NFQA_PACKET_HDR = 1
NFQA_VERDICT_HDR = 2
NFQA_CFG_CMD, NFQA_CFG_PARAMS, NFQA_CFG_QUEUE_MAXLEN, NFQA_CFG_MASK, NFQA_CFG_FLAGS = 1, 2, 3, 4, 5
NFQNL_CFG_CMD_BIND = 1
NFQNL_COPY_META = 1
NFQA_CFG_F_FAIL_OPEN = 1
NF_ACCEPT = 1
NLM_F_REQUEST, NLM_F_ACK = 1, 4
NLMSG_ERROR = 2
QUEUE_MAXLEN = 65536


def _attribute(kind: int, payload: bytes) -> bytes:
    header = struct.pack("=HH", 4 + len(payload), kind)
    return header + payload + b"\0" * (-(4 + len(payload)) % 4)


def _message(kind: int, queue: int, attributes: bytes, flags: int = NLM_F_REQUEST, seq: int = 0) -> bytes:
    body = struct.pack("=BBH", socket.AF_UNSPEC, 0, socket.htons(queue)) + attributes
    return struct.pack("=IHHII", 16 + len(body), (NFNL_SUBSYS_QUEUE << 8) | kind, flags, seq, 0) + body


def _messages(data: bytes):
    """(type, payload after the nfgenmsg) of each netlink message in a datagram."""
    pos = 0
    while pos + 16 <= len(data):
        length, kind, _flags, _seq, _pid = struct.unpack_from("=IHHII", data, pos)
        if length < 16:
            return
        yield kind, data[pos + 16:pos + length]
        pos += (length + 3) & ~3


def _packet_id(payload: bytes) -> int | None:
    pos = 4  # the nfgenmsg
    while pos + 4 <= len(payload):
        length, kind = struct.unpack_from("=HH", payload, pos)
        if length < 4:
            return None
        if kind & 0x7FFF == NFQA_PACKET_HDR:
            return struct.unpack_from("!I", payload, pos + 4)[0]
        pos += (length + 3) & ~3
    return None


class DelayQueue:
    def __init__(self, queue: int, delay: float) -> None:
        self.queue = queue
        self.delay = delay
        self.sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_NETFILTER)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
        self.sock.bind((0, 0))
        self.pending: collections.deque = collections.deque()  # (due, packet id), ids increasing

    def _request(self, attributes: bytes, seq: int) -> None:
        """A config request, acknowledged (an NLMSG_ERROR of 0) or refused."""
        self.sock.send(_message(NFQNL_MSG_CONFIG, self.queue, attributes, NLM_F_REQUEST | NLM_F_ACK, seq))
        while True:
            for kind, payload in _messages(self.sock.recv(65536)):
                if kind == NLMSG_ERROR:
                    code = struct.unpack_from("=i", payload.rjust(4, b"\0") if len(payload) < 4 else payload, 0)[0]
                    if code != 0:
                        raise OSError(-code, f"nfnetlink_queue config: {os.strerror(-code)}")
                    return

    def bind(self) -> None:
        self._request(_attribute(NFQA_CFG_CMD, struct.pack("!BxH", NFQNL_CFG_CMD_BIND, socket.AF_INET)), 1)
        self._request(_attribute(NFQA_CFG_PARAMS, struct.pack("!IB", 0, NFQNL_COPY_META)), 2)
        self._request(_attribute(NFQA_CFG_QUEUE_MAXLEN, struct.pack("!I", QUEUE_MAXLEN)), 3)

    def accept_up_to(self, packet_id: int) -> None:
        self.sock.send(_message(NFQNL_MSG_VERDICT_BATCH, self.queue,
                                _attribute(NFQA_VERDICT_HDR, struct.pack("!II", NF_ACCEPT, packet_id))))

    def run(self, stop) -> None:
        self.sock.setblocking(False)
        while not stop():
            timeout = max(0.0, self.pending[0][0] - time.monotonic()) if self.pending else 0.5
            if select.select([self.sock], [], [], timeout)[0]:
                self._receive()
            self._release(time.monotonic())
        if self.pending:
            self.accept_up_to(self.pending[-1][1])

    def _receive(self) -> None:
        while True:
            try:
                data = self.sock.recv(1 << 16)
            except BlockingIOError:
                return
            except OSError as error:  # ENOBUFS: the kernel dropped messages; the packets retransmit
                if error.errno == errno.ENOBUFS:
                    continue
                raise
            now = time.monotonic()
            for kind, payload in _messages(data):
                if kind == (NFNL_SUBSYS_QUEUE << 8) | NFQNL_MSG_PACKET:
                    packet_id = _packet_id(payload)
                    if packet_id is not None:
                        self.pending.append((now + self.delay, packet_id))

    def _release(self, now: float) -> None:
        last = None
        while self.pending and self.pending[0][0] <= now:
            last = self.pending.popleft()[1]
        if last is not None:
            self.accept_up_to(last)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="compat.faults.delay_queue")
    parser.add_argument("--queue", type=int, required=True)
    parser.add_argument("--delay-ms", type=float, required=True)
    args = parser.parse_args(argv)
    stopping = []
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stopping.append(True))
    delayer = DelayQueue(args.queue, args.delay_ms / 1000.0)
    delayer.bind()
    print("ready", flush=True)
    delayer.run(lambda: bool(stopping))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
