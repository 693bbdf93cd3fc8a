"""How a handler ends its connection without answering, where Kafka closes instead of replying
(a Produce with a record batch it cannot parse, an ACL request on a listener that forbids it)."""


class CloseConnection(Exception):
    """Raised by a handler or the dispatcher: the server closes this connection, sends nothing."""
