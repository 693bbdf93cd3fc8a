"""What a client's first coordinator lookups get from a broker nobody has used yet (profile "cold")."""

from __future__ import annotations

from ..scenario import Session, scenario


@scenario("FindCoordinator", profile="cold", covers=["COORDINATOR_NOT_AVAILABLE"])
def find_coordinator_before_internal_topics_exist(s: Session):
    """The first FindCoordinator for a group, and for a transactional id, on a fresh broker: the
    internal topic does not exist yet (it is created now)."""
    s.call("FindCoordinator", 3, {"key": s.group(), "key_type": 0}, label="first group lookup")
    s.call("FindCoordinator", 3, {"key": s.transactional_id(), "key_type": 1}, label="first transaction lookup")
