"""Client quota entities and keys as Kafka's DescribeClientQuotas/AlterClientQuotas name them
(Kafka's QuotaConfig): the entity types and each quota key's value type."""

from __future__ import annotations

USER, CLIENT_ID, IP = "user", "client-id", "ip"
ENTITY_TYPES = (USER, CLIENT_ID, IP)

# Kafka's QuotaConfig: the keys of user and client-id entities, and of ip entities, with their types.
USER_CLIENT_KEYS = {
    "producer_byte_rate": "LONG",
    "consumer_byte_rate": "LONG",
    "request_percentage": "DOUBLE",
    "controller_mutation_rate": "DOUBLE",
}
IP_KEYS = {"connection_creation_rate": "INT"}
