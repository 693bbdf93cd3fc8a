"""Share sessions (KIP-932), as Kafka's ShareSessionCache keeps them: one per (group, member), the
partitions a member's ShareFetch requests read, and the epoch the next request must carry.

Epoch 0 opens a session with the request's partitions (a request carrying acknowledgements cannot
open one); -1 closes it (the member's acquired records are then released); any other epoch must be
the session's next one, and adds the request's partitions and removes its forgotten ones.
ShareAcknowledge uses the session too, but never opens one. Sans-io: the broker holds the cache.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kafka_wire.errors import ErrorCode

INITIAL_EPOCH = 0
FINAL_EPOCH = -1
MAX_EPOCH = 0x7FFFFFFF


def next_epoch(epoch: int) -> int:
    """ShareRequestMetadata.nextEpoch: the epoch after `epoch` (wrapping past the largest to 1)."""
    if epoch < 0:
        return FINAL_EPOCH
    return 1 if epoch == MAX_EPOCH else epoch + 1


class ShareSessionError(Exception):
    def __init__(self, error: ErrorCode, message: str | None = None) -> None:
        super().__init__(message or error.name)
        self.error = error
        self.message = message


@dataclass
class ShareSession:
    group_id: str
    member_id: str
    epoch: int  # the epoch the next request must carry
    partitions: dict = field(default_factory=dict)  # (topic id, partition) -> None, in order added


@dataclass
class ShareFetchContext:
    """What one ShareFetch reads: `partitions` [(topic id, partition)]; `full` whether the answer
    lists every one (the session just opened); `final` whether the session closed."""

    partitions: list
    full: bool
    final: bool


class ShareSessionCache:
    def __init__(self, max_sessions: int = 1000) -> None:
        self.max_sessions = max_sessions  # group.share.max.share.sessions
        self.sessions: dict[tuple[str, str], ShareSession] = {}

    def fetch_context(self, group_id: str, member_id: str, epoch: int, partitions: list, forgotten: list,
                      has_acknowledgements: bool) -> ShareFetchContext:
        """The session a ShareFetch works in, updated for it; raises ShareSessionError."""
        key = (group_id, member_id)
        if epoch == FINAL_EPOCH:
            if partitions:
                raise ShareSessionError(ErrorCode.INVALID_REQUEST,
                                        "Can not send a ShareFetch with partitions to fetch in a final request.")
            if self.sessions.pop(key, None) is None:
                raise ShareSessionError(ErrorCode.SHARE_SESSION_NOT_FOUND)
            return ShareFetchContext([], False, True)
        if epoch == INITIAL_EPOCH:
            if has_acknowledgements:
                raise ShareSessionError(ErrorCode.INVALID_REQUEST,
                                        "Acknowledge data present in initial fetch request.")
            if key not in self.sessions and len(self.sessions) >= self.max_sessions:
                raise ShareSessionError(ErrorCode.SHARE_SESSION_LIMIT_REACHED)
            session = ShareSession(group_id, member_id, next_epoch(INITIAL_EPOCH), dict.fromkeys(partitions))
            self.sessions[key] = session
            return ShareFetchContext(list(session.partitions), True, False)
        session = self._current(key, epoch)
        for tp in forgotten:
            session.partitions.pop(tp, None)
        for tp in partitions:
            session.partitions.setdefault(tp, None)
        session.epoch = next_epoch(session.epoch)
        return ShareFetchContext(list(session.partitions), False, False)

    def acknowledge_context(self, group_id: str, member_id: str, epoch: int) -> bool:
        """Check a ShareAcknowledge's epoch against the member's session (and move it on, or close
        the session at -1); True when the session closed. Raises ShareSessionError."""
        key = (group_id, member_id)
        if epoch == INITIAL_EPOCH:
            raise ShareSessionError(ErrorCode.INVALID_SHARE_SESSION_EPOCH)
        if epoch == FINAL_EPOCH:
            if self.sessions.pop(key, None) is None:
                raise ShareSessionError(ErrorCode.SHARE_SESSION_NOT_FOUND)
            return True
        session = self._current(key, epoch)
        session.epoch = next_epoch(session.epoch)
        return False

    def _current(self, key, epoch: int) -> ShareSession:
        session = self.sessions.get(key)
        if session is None:
            raise ShareSessionError(ErrorCode.SHARE_SESSION_NOT_FOUND)
        if session.epoch != epoch:
            raise ShareSessionError(ErrorCode.INVALID_SHARE_SESSION_EPOCH)
        return session

    def remove_member(self, group_id: str, member_id: str) -> bool:
        """The member left the group or was fenced: its session goes."""
        return self.sessions.pop((group_id, member_id), None) is not None
