"""The admin APIs of test_api_admin_*.py under ACLs, as Kafka authorizes them: DescribeLogDirs
needs DESCRIBE on the cluster, DescribeClientQuotas DESCRIBE_CONFIGS, AlterClientQuotas and broker
config changes ALTER_CONFIGS (KafkaApis / ControllerApis / AuthHelper)."""

from __future__ import annotations

import pytest

from kafka_wire.acls import AclOperation as Op, ResourceType as Res

from tests.integration.test_security_acls import CLUSTER_AUTH, acl_broker, admin, alice, grant  # noqa: F401

pytestmark = pytest.mark.timeout(300)


def test_admin_apis_need_their_cluster_permissions(admin, alice):  # noqa: F811
    log_dirs = alice.call("DescribeLogDirs", 4, {"topics": None})
    assert (log_dirs.error_code, log_dirs.results) == (CLUSTER_AUTH, [])
    quotas = alice.call("DescribeClientQuotas", 1, {"components": [], "strict": False})
    assert (quotas.error_code, quotas.entries) == (CLUSTER_AUTH, None)
    alter = {"entries": [{"entity": [{"entity_type": "user", "entity_name": "alice"}],
                          "ops": [{"key": "producer_byte_rate", "value": 1000.0, "remove": False}]}],
             "validate_only": False}
    assert [e.error_code for e in alice.call("AlterClientQuotas", 1, alter).entries] == [CLUSTER_AUTH]
    broker_change = {"resources": [{"resource_type": 4, "resource_name": "", "configs": [
        {"name": "log.retention.ms", "config_operation": 0, "value": "100000"}]}], "validate_only": False}
    assert [r.error_code for r in alice.call("IncrementalAlterConfigs", 1, broker_change).responses] == [CLUSTER_AUTH]

    grant(admin, Res.CLUSTER, "kafka-cluster", Op.DESCRIBE)
    assert alice.call("DescribeLogDirs", 4, {"topics": None}).error_code == 0
    assert alice.call("DescribeClientQuotas", 1, {"components": [], "strict": False}).error_code == CLUSTER_AUTH
    grant(admin, Res.CLUSTER, "kafka-cluster", Op.ALTER_CONFIGS)  # implies DESCRIBE_CONFIGS
    assert [e.error_code for e in alice.call("AlterClientQuotas", 1, alter).entries] == [0]
    assert alice.call("DescribeClientQuotas", 1, {"components": [], "strict": False}).error_code == 0
    assert [r.error_code for r in alice.call("IncrementalAlterConfigs", 1, broker_change).responses] == [0]
