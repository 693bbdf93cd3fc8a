"""The ACL authorizer: Kafka's StandardAuthorizer decisions, filters, persistence, the ACL handlers."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

import pytest

from broker.config import BrokerConfig, ConfigError
from broker.security.authorizer import (
    AclBinding,
    AclBindingFilter,
    AclOperation as Op,
    AclPermissionType as Perm,
    AllowEveryone,
    InvalidAcl,
    PatternType as Pat,
    ResourceType as Res,
    StandardAuthorizer,
    build_authorizer,
    parse_super_users,
)

ALLOW, DENY = Perm.ALLOW, Perm.DENY
LITERAL, PREFIXED = Pat.LITERAL, Pat.PREFIXED


def ctx(principal="User:alice", host="10.0.0.1"):
    return SimpleNamespace(principal=principal, peer=(host, 5555))


def acl(rtype, name, op, perm=ALLOW, principal="User:alice", host="*", pattern=LITERAL):
    return AclBinding(rtype, name, pattern, principal, host, op, perm)


def authorizer(*acls, super_users=(), allow_if_none=False, data_dir=None):
    a = StandardAuthorizer(data_dir, super_users, allow_if_none)
    if acls:
        a.create(list(acls))
    return a


def test_no_acls_denies_unless_allow_everyone_if_no_acl_found():
    assert not authorizer().authorize(ctx(), Op.READ, Res.TOPIC, "t")
    assert authorizer(allow_if_none=True).authorize(ctx(), Op.READ, Res.TOPIC, "t")


def test_acls_on_a_resource_take_it_out_of_the_no_acl_default():
    # Any ACL on the resource (even for someone else) means the default no longer applies.
    a = authorizer(acl(Res.TOPIC, "t", Op.READ, principal="User:bob"), allow_if_none=True)
    assert not a.authorize(ctx(), Op.READ, Res.TOPIC, "t")
    assert a.authorize(ctx(), Op.READ, Res.TOPIC, "other")


def test_literal_prefixed_and_wildcard_patterns():
    a = authorizer(acl(Res.TOPIC, "orders", Op.WRITE),
                   acl(Res.TOPIC, "logs-", Op.READ, pattern=PREFIXED),
                   acl(Res.GROUP, "*", Op.READ))
    assert a.authorize(ctx(), Op.WRITE, Res.TOPIC, "orders")
    assert not a.authorize(ctx(), Op.WRITE, Res.TOPIC, "orders2")
    assert not a.authorize(ctx(), Op.WRITE, Res.TOPIC, "order")
    assert a.authorize(ctx(), Op.READ, Res.TOPIC, "logs-app")
    assert a.authorize(ctx(), Op.READ, Res.TOPIC, "logs-")
    assert not a.authorize(ctx(), Op.READ, Res.TOPIC, "logs")
    assert a.authorize(ctx(), Op.READ, Res.GROUP, "any-group")
    assert not a.authorize(ctx(), Op.READ, Res.TRANSACTIONAL_ID, "any-group")


def test_deny_wins_over_allow_wherever_it_comes_from():
    a = authorizer(acl(Res.TOPIC, "*", Op.ALL),
                   acl(Res.TOPIC, "secret-", Op.READ, DENY, pattern=PREFIXED))
    assert a.authorize(ctx(), Op.READ, Res.TOPIC, "public")
    assert not a.authorize(ctx(), Op.READ, Res.TOPIC, "secret-plans")
    assert a.authorize(ctx(), Op.WRITE, Res.TOPIC, "secret-plans")  # the deny is for READ only
    b = authorizer(acl(Res.TOPIC, "t", Op.READ), acl(Res.TOPIC, "t", Op.ALL, DENY))
    assert not b.authorize(ctx(), Op.READ, Res.TOPIC, "t")


@pytest.mark.parametrize("granted, implied", [
    (Op.READ, Op.DESCRIBE), (Op.WRITE, Op.DESCRIBE), (Op.DELETE, Op.DESCRIBE), (Op.ALTER, Op.DESCRIBE),
    (Op.ALTER_CONFIGS, Op.DESCRIBE_CONFIGS),
])
def test_allow_implies_describe(granted, implied):
    a = authorizer(acl(Res.TOPIC, "t", granted))
    assert a.authorize(ctx(), implied, Res.TOPIC, "t")


@pytest.mark.parametrize("granted, not_implied", [
    (Op.DESCRIBE, Op.READ), (Op.CREATE, Op.DESCRIBE), (Op.DESCRIBE_CONFIGS, Op.ALTER_CONFIGS),
    (Op.READ, Op.WRITE), (Op.DESCRIBE, Op.DESCRIBE_CONFIGS),
])
def test_no_other_implications(granted, not_implied):
    a = authorizer(acl(Res.TOPIC, "t", granted))
    assert not a.authorize(ctx(), not_implied, Res.TOPIC, "t")


def test_deny_read_does_not_deny_describe():
    a = authorizer(acl(Res.TOPIC, "t", Op.DESCRIBE), acl(Res.TOPIC, "t", Op.READ, DENY))
    assert a.authorize(ctx(), Op.DESCRIBE, Res.TOPIC, "t")
    assert not a.authorize(ctx(), Op.READ, Res.TOPIC, "t")


def test_principal_and_host_matching():
    a = authorizer(acl(Res.TOPIC, "t", Op.READ, principal="User:*"),
                   acl(Res.TOPIC, "t", Op.WRITE, host="10.0.0.9"),
                   acl(Res.TOPIC, "t", Op.READ, DENY, principal="User:mallory"))
    assert a.authorize(ctx("User:anyone"), Op.READ, Res.TOPIC, "t")
    assert not a.authorize(ctx("User:mallory"), Op.READ, Res.TOPIC, "t")
    assert not a.authorize(ctx(), Op.WRITE, Res.TOPIC, "t")
    assert a.authorize(ctx(host="10.0.0.9"), Op.WRITE, Res.TOPIC, "t")
    # Principal types matter: Group:alice is not User:alice.
    assert not authorizer(acl(Res.TOPIC, "t", Op.READ, principal="Group:alice")).authorize(
        ctx(), Op.READ, Res.TOPIC, "t")


def test_super_users_may_do_anything_even_when_denied():
    a = authorizer(acl(Res.TOPIC, "t", Op.ALL, DENY, principal="User:*"),
                   super_users=parse_super_users(" User:admin ; User:ops;"))
    assert a.super_users == {"User:admin", "User:ops"}
    assert a.authorize(ctx("User:admin"), Op.DELETE, Res.TOPIC, "t")
    assert not a.authorize(ctx(), Op.DELETE, Res.TOPIC, "t")


def test_filter_authorized_and_authorized_operations():
    a = authorizer(acl(Res.TOPIC, "a", Op.READ), acl(Res.TOPIC, "b", Op.ALL))
    assert a.filter_authorized(ctx(), Op.DESCRIBE, Res.TOPIC, ["a", "b", "c", "a"]) == {"a", "b"}
    bits = a.authorized_operations(ctx(), Res.TOPIC, "a")
    assert bits == (1 << Op.READ) | (1 << Op.DESCRIBE)
    everything = AllowEveryone().authorized_operations(ctx(), Res.GROUP, "g")
    # Kafka 4.3 answers 3400 for a group without an authorizer: group configs (KIP-848) count too.
    assert everything == (1 << Op.READ) | (1 << Op.DESCRIBE) | (1 << Op.DELETE) | (1 << Op.DESCRIBE_CONFIGS) | \
        (1 << Op.ALTER_CONFIGS) == 3400


def test_authorize_by_resource_type_as_for_idempotent_producers():
    assert authorizer(acl(Res.TOPIC, "t", Op.WRITE)).authorize_by_resource_type(ctx(), Op.WRITE, Res.TOPIC)
    assert authorizer(acl(Res.TOPIC, "p-", Op.WRITE, pattern=PREFIXED)).authorize_by_resource_type(
        ctx(), Op.WRITE, Res.TOPIC)
    assert not authorizer(acl(Res.TOPIC, "t", Op.READ)).authorize_by_resource_type(ctx(), Op.WRITE, Res.TOPIC)
    # A deny on the same name, on a covering prefix, or on everything cancels the allow.
    for deny in (acl(Res.TOPIC, "t", Op.WRITE, DENY), acl(Res.TOPIC, "", Op.WRITE, DENY, pattern=PREFIXED),
                 acl(Res.TOPIC, "*", Op.ALL, DENY)):
        a = authorizer(acl(Res.TOPIC, "t", Op.WRITE), deny)
        assert not a.authorize_by_resource_type(ctx(), Op.WRITE, Res.TOPIC)
    assert authorizer(super_users={"User:alice"}).authorize_by_resource_type(ctx(), Op.WRITE, Res.TOPIC)


def test_binding_validation_uses_kafkas_messages():
    with pytest.raises(InvalidAcl, match="Invalid patternType MATCH"):
        acl(Res.TOPIC, "t", Op.READ, pattern=Pat.MATCH).validate()
    with pytest.raises(InvalidAcl, match="Invalid operation ANY"):
        acl(Res.TOPIC, "t", Op.ANY).validate()
    with pytest.raises(InvalidAcl, match="Invalid permissionType ANY"):
        acl(Res.TOPIC, "t", Op.READ, Perm.ANY).validate()
    with pytest.raises(InvalidAcl, match="Resource name should not be empty"):
        acl(Res.TOPIC, "", Op.READ).validate()
    with pytest.raises(InvalidAcl, match="no colon"):
        acl(Res.TOPIC, "t", Op.READ, principal="alice").validate()
    acl(Res.CLUSTER, "kafka-cluster", Op.ALTER).validate()


def _filter(rtype=Res.ANY, name=None, pattern=Pat.ANY, principal=None, host=None, op=Op.ANY, perm=Perm.ANY):
    return AclBindingFilter(rtype, name, pattern, principal, host, op, perm)


def test_filters_match_as_kafkas_do():
    lit = acl(Res.TOPIC, "orders", Op.READ)
    star = acl(Res.TOPIC, "*", Op.READ)
    pre = acl(Res.TOPIC, "ord", Op.READ, pattern=PREFIXED)
    other = acl(Res.GROUP, "orders", Op.READ, principal="User:bob", host="1.2.3.4", perm=DENY)
    every = [lit, star, pre, other]
    assert [a for a in every if _filter().matches(a)] == every
    assert [a for a in every if _filter(name="orders").matches(a)] == [lit, other]
    assert [a for a in every if _filter(Res.TOPIC, "orders", Pat.MATCH).matches(a)] == [lit, star, pre]
    assert [a for a in every if _filter(pattern=PREFIXED).matches(a)] == [pre]
    assert [a for a in every if _filter(principal="User:bob").matches(a)] == [other]
    assert [a for a in every if _filter(host="1.2.3.4", perm=DENY, op=Op.READ).matches(a)] == [other]
    assert not _filter(op=Op.WRITE).matches(lit)


def test_acls_persist_and_delete(tmp_path):
    a = authorizer(acl(Res.TOPIC, "t", Op.READ), acl(Res.GROUP, "g", Op.READ), data_dir=tmp_path)
    a.create([acl(Res.TOPIC, "t", Op.READ)])  # the same binding twice is stored once
    assert len(a.acls()) == 2
    reloaded = StandardAuthorizer(tmp_path)
    assert sorted(map(repr, reloaded.acls())) == sorted(map(repr, a.acls()))
    removed = reloaded.delete([_filter(Res.GROUP), _filter(Res.GROUP)])
    assert [len(r) for r in removed] == [1, 0]
    assert not StandardAuthorizer(tmp_path).authorize(ctx(), Op.READ, Res.GROUP, "g")
    assert StandardAuthorizer(tmp_path).authorize(ctx(), Op.READ, Res.TOPIC, "t")


def test_build_authorizer_accepts_kafkas_class_names(tmp_path):
    assert isinstance(build_authorizer(BrokerConfig({}), tmp_path), AllowEveryone)
    for name in ("org.apache.kafka.metadata.authorizer.StandardAuthorizer", "kafka.security.authorizer.AclAuthorizer"):
        built = build_authorizer(BrokerConfig({"authorizer.class.name": name, "super.users": "User:admin",
                                               "allow.everyone.if.no.acl.found": "true"}), tmp_path)
        assert isinstance(built, StandardAuthorizer)
        assert built.super_users == {"User:admin"} and built.allow_if_no_acl
    with pytest.raises(ConfigError):
        build_authorizer(BrokerConfig({"authorizer.class.name": "com.example.Custom"}), tmp_path)


# -- the ACL handlers --------------------------------------------------------------------------------


def _broker(tmp_path, **props):
    config = BrokerConfig({"log.dirs": str(tmp_path), **props})
    broker = SimpleNamespace(config=config)
    from broker.security import attach

    attach(broker)
    return broker


def _call(api_name, broker, body, version, principal="User:admin"):
    from broker.handlers import HANDLERS
    from kafka_wire.messages import APIS_BY_NAME

    api = APIS_BY_NAME[api_name]
    request = api.request.decode(api.request.encode_bytes(body, version), version)
    context = SimpleNamespace(principal=principal, peer=("127.0.0.1", 1), api_version=version)
    response = asyncio.run(HANDLERS[api.key].handle(broker, context, request))
    return api.response.decode(api.response.encode_bytes(response, version), version)


AUTHZ = {"authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
         "super.users": "User:admin"}


def _creation(**kw):
    base = {"resource_type": 2, "resource_name": "t", "resource_pattern_type": 3, "principal": "User:alice",
            "host": "*", "operation": int(Op.READ), "permission_type": int(ALLOW)}
    return {**base, **kw}


def _any_filter(**kw):
    base = {"resource_type_filter": 1, "resource_name_filter": None, "pattern_type_filter": 1,
            "principal_filter": None, "host_filter": None, "operation": 1, "permission_type": 1}
    return {**base, **kw}


@pytest.mark.parametrize("version", [1, 2, 3])
def test_create_describe_delete_acls(tmp_path, version):
    broker = _broker(tmp_path, **AUTHZ)
    created = _call("CreateAcls", broker, {"creations": [
        _creation(), _creation(resource_name="p-", resource_pattern_type=4, operation=int(Op.WRITE)),
        _creation(principal="nocolon"), _creation(resource_type=4, resource_name="other-cluster")]}, version)
    assert [(r.error_code, r.error_message) for r in created.results] == [
        (0, ""), (0, ""),
        (42, "Could not parse principal from `nocolon` (no colon is present separating the principal type from "
             "the principal name)"),
        (42, "The only valid name for the CLUSTER resource is kafka-cluster")]
    described = _call("DescribeAcls", broker, _any_filter(), version)
    assert (described.error_code, described.error_message) == (0, "")
    assert [(r.resource_name, r.pattern_type, [a.operation for a in r.acls]) for r in described.resources] == \
        [("p-", 4, [int(Op.WRITE)]), ("t", 3, [int(Op.READ)])]
    matched = _call("DescribeAcls", broker, _any_filter(resource_type_filter=2, resource_name_filter="p-x",
                                                        pattern_type_filter=2), version)
    assert [r.resource_name for r in matched.resources] == ["p-"]
    deleted = _call("DeleteAcls", broker, {"filters": [_any_filter(pattern_type_filter=4)]}, version)
    assert deleted.filter_results[0].error_code == 0
    assert [a.resource_name for a in deleted.filter_results[0].matching_acls] == ["p-"]
    assert [r.resource_name for r in _call("DescribeAcls", broker, _any_filter(), version).resources] == ["t"]


@pytest.mark.parametrize("element", [{"resource_pattern_type": 2}, {"resource_pattern_type": 1},
                                     {"resource_type": 1}, {"operation": 1}, {"permission_type": 1}])
def test_create_acls_with_an_any_element_fails_the_whole_request(tmp_path, element):
    """Kafka 4.3 cannot build such a binding (ResourcePattern/AccessControlEntry refuse ANY and MATCH): every
    creation of the request is UNKNOWN_SERVER_ERROR without a message, and none is stored."""
    broker = _broker(tmp_path, **AUTHZ)
    created = _call("CreateAcls", broker, {"creations": [_creation(), _creation(**element)]}, 3)
    assert [(r.error_code, r.error_message) for r in created.results] == [(-1, None), (-1, None)]
    assert _call("DescribeAcls", broker, _any_filter(), 3).resources == []


@pytest.mark.parametrize("api, body", [
    ("CreateAcls", {"creations": [_creation(operation=0)]}),
    ("CreateAcls", {"creations": [_creation(), _creation(resource_pattern_type=0)]}),
    ("DescribeAcls", _any_filter(pattern_type_filter=0)),
    ("DeleteAcls", {"filters": [_any_filter(), _any_filter(permission_type=0)]})])
def test_acl_requests_with_unknown_elements_close_the_connection(tmp_path, api, body):
    """Kafka 4.3 cannot parse them (the requests' validate: UNKNOWN elements), even from who may not alter
    ACLs: the connection is closed without an answer."""
    from broker.handlers.closing import CloseConnection

    broker = _broker(tmp_path, **AUTHZ)
    for principal in ("User:admin", "User:alice"):
        with pytest.raises(CloseConnection):
            _call(api, broker, body, 3, principal=principal)


def test_acl_requests_with_codes_kafka_does_not_know_are_answered(tmp_path):
    """Only an element sent as UNKNOWN (0) makes Kafka's request unparseable; other unknown codes
    (found by the request fuzzer, tests/integration/test_request_fuzz.py) read as UNKNOWN afterwards.
    Kafka 4.3.0 with StandardAuthorizer answers these (each checked against it): a creation INVALID_REQUEST
    with AclControlManager's message, a describe filter nothing, a delete filter INVALID_REQUEST."""
    broker = _broker(tmp_path, **AUTHZ)
    created = _call("CreateAcls", broker, {"creations": [_creation(), _creation(resource_pattern_type=9)]}, 3)
    assert [(r.error_code, r.error_message) for r in created.results] == [(0, ""), (42, "Invalid patternType UNKNOWN")]
    created = _call("CreateAcls", broker, {"creations": [_creation(resource_type=127)]}, 3)
    assert [(r.error_code, r.error_message) for r in created.results] == [(42, "Invalid resourceType UNKNOWN")]
    for flt in (_any_filter(resource_type_filter=127), _any_filter(pattern_type_filter=9), _any_filter(operation=-3)):
        described = _call("DescribeAcls", broker, flt, 3)
        assert (described.error_code, described.resources) == (0, [])
    deleted = _call("DeleteAcls", broker, {"filters": [_any_filter(permission_type=77), _any_filter(resource_type_filter=99)]}, 3)
    assert [(r.error_code, r.error_message) for r in deleted.filter_results] == [
        (42, "Unknown entryFilter."), (42, "Unknown patternFilter.")]
    # Without an authorizer: SECURITY_DISABLED, as for any other filter.
    plain = _broker(tmp_path / "plain")
    assert _call("DescribeAcls", plain, _any_filter(resource_type_filter=127), 3).error_code == 54


def test_acl_apis_need_cluster_permissions(tmp_path):
    broker = _broker(tmp_path, **AUTHZ)
    assert _call("DescribeAcls", broker, _any_filter(), 3, principal="User:alice").error_code == 31
    created = _call("CreateAcls", broker, {"creations": [_creation()]}, 3, principal="User:alice")
    assert [r.error_code for r in created.results] == [31]
    deleted = _call("DeleteAcls", broker, {"filters": [_any_filter()]}, 3, principal="User:alice")
    assert [r.error_code for r in deleted.filter_results] == [31]
    # ALTER on the cluster lets alice manage ACLs; DESCRIBE is implied by it.
    _call("CreateAcls", broker, {"creations": [_creation(resource_type=4, resource_name="kafka-cluster",
                                                         operation=int(Op.ALTER))]}, 3)
    assert _call("DescribeAcls", broker, _any_filter(), 3, principal="User:alice").error_code == 0


def test_acl_apis_without_an_authorizer_say_security_disabled(tmp_path):
    broker = _broker(tmp_path)
    described = _call("DescribeAcls", broker, _any_filter(), 3)
    # Kafka 4.3's messages, as kafka-acls.sh prints them: DescribeAcls and CreateAcls say "on the broker".
    assert described.error_code == 54 and described.error_message == "No Authorizer is configured on the broker"
    created = _call("CreateAcls", broker, {"creations": [_creation()]}, 3).results
    assert [(r.error_code, r.error_message) for r in created] == [(54, "No Authorizer is configured on the broker")]
    deleted = _call("DeleteAcls", broker, {"filters": [_any_filter()]}, 3).filter_results
    assert [(r.error_code, r.error_message) for r in deleted] == [(54, "No Authorizer is configured.")]
