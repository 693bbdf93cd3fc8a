"""Answers the request fuzzer (compat/request_fuzz.py --against-kafka) found different from Kafka 4.3.0's
and that now match: legacy AlterConfigs' checks ahead of the controller (a config key named twice,
null values)."""

from __future__ import annotations

from ..scenario import Session, scenario


@scenario("AlterConfigs", versions=(0, 2), covers=["INVALID_REQUEST"])
def alter_configs_refused_before_the_controller(s: Session, v: int):
    """A config key named twice and a null value: INVALID_REQUEST, for a topic that exists."""
    s.create_topic(s.topic())

    def alter(label, configs):
        s.call("AlterConfigs", v, {"resources": [{"resource_type": 2, "resource_name": s.topic(), "configs": [
            {"name": k, "value": value} for k, value in configs]}], "validate_only": False}, label=label)

    alter("a key twice", [("retention.ms", "1000"), ("retention.ms", "2000")])
    alter("a null value", [("retention.ms", None), ("segment.ms", None)])
