"""ACLs with Apache Kafka's semantics (StandardAuthorizer), and the store CreateAcls writes to.

An ACL binding is a resource pattern (type, name, LITERAL or PREFIXED) plus an entry (principal,
host, operation, ALLOW or DENY). Deciding an action (principal, host, operation, resource):

- a super user (`super.users`, `User:alice;User:bob`) may do anything;
- the ACLs that apply are those whose pattern matches the resource: LITERAL with the same name or
  `*`, PREFIXED with a name the resource's starts with;
- a matching DENY wins over any ALLOW; an ALLOW for READ, WRITE, DELETE or ALTER also allows
  DESCRIBE, and ALTER_CONFIGS allows DESCRIBE_CONFIGS (ALLOW only: DENY READ does not deny DESCRIBE);
  ALL matches every operation; principal `User:*` and host `*` match everyone;
- when no ACL at all applies to the resource, `allow.everyone.if.no.acl.found` decides (default
  false: denied); when ACLs apply but none allows, the action is denied.

Handlers call it in one line:

    from ..security.authorizer import AclOperation, ResourceType
    if not broker.authorizer.authorize(ctx, AclOperation.WRITE, ResourceType.TOPIC, topic): ...
    readable = broker.authorizer.filter_authorized(ctx, AclOperation.READ, ResourceType.TOPIC, names)

With no `authorizer.class.name` the broker has an `AllowEveryone` authorizer: every check passes
and the ACL APIs answer SECURITY_DISABLED, as Kafka does without an authorizer.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import uuid
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from enum import IntEnum
from pathlib import Path

from kafka_wire.acls import (
    CLUSTER_NAME,
    SUPPORTED_OPERATIONS,
    WILDCARD,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
)

logger = logging.getLogger("kafka_wire.authorizer")

ACLS_FILE = "kafka-wire-acls.json"
WILDCARD_PRINCIPAL = "User:*"
ANONYMOUS = "User:ANONYMOUS"
UNKNOWN_CODE = 0  # every ACL enum's UNKNOWN

# The class names Kafka users put in authorizer.class.name; each turns ACL checks on.
KAFKA_AUTHORIZER_CLASSES = {
    "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
    "kafka.security.authorizer.AclAuthorizer",
    "kafka.security.auth.SimpleAclAuthorizer",
}


_IMPLIES_DESCRIBE = {AclOperation.DESCRIBE, AclOperation.READ, AclOperation.WRITE, AclOperation.DELETE,
                     AclOperation.ALTER}
_IMPLIES_DESCRIBE_CONFIGS = {AclOperation.DESCRIBE_CONFIGS, AclOperation.ALTER_CONFIGS}



class InvalidAcl(ValueError):
    """A binding or filter CreateAcls/DeleteAcls must refuse (INVALID_REQUEST); Kafka's message."""


def sent_unknown(*codes: int) -> bool:
    """Kafka's parse-time validation of DescribeAcls, CreateAcls and DeleteAcls requests: an enum
    sent as UNKNOWN (code 0) makes the request unparseable, and the connection is closed. Codes
    Kafka does not know at all pass that check (they read as UNKNOWN only afterwards), so the
    raw codes are checked, not the enums they map to."""
    return UNKNOWN_CODE in codes


@dataclass(frozen=True)
class AclBinding:
    """One ACL: a resource pattern and an access control entry."""

    resource_type: ResourceType
    resource_name: str
    pattern_type: PatternType
    principal: str
    host: str
    operation: AclOperation
    permission_type: AclPermissionType

    def validate(self) -> None:
        """Kafka's checks before storing a new ACL (AclControlManager.validateNewAcl)."""
        if self.resource_type in (ResourceType.UNKNOWN, ResourceType.ANY):
            raise InvalidAcl(f"Invalid resourceType {self.resource_type.name}")
        if self.pattern_type not in (PatternType.LITERAL, PatternType.PREFIXED):
            raise InvalidAcl(f"Invalid patternType {self.pattern_type.name}")
        if self.operation in (AclOperation.UNKNOWN, AclOperation.ANY):
            raise InvalidAcl(f"Invalid operation {self.operation.name}")
        if self.permission_type not in (AclPermissionType.ALLOW, AclPermissionType.DENY):
            raise InvalidAcl(f"Invalid permissionType {self.permission_type.name}")
        if not self.resource_name:
            raise InvalidAcl("Resource name should not be empty")
        if ":" not in self.principal:
            raise InvalidAcl(f"Could not parse principal from `{self.principal}` (no colon is present "
                             "separating the principal type from the principal name)")
        if self.resource_type == ResourceType.CLUSTER and self.resource_name != CLUSTER_NAME:
            raise InvalidAcl(f"The only valid name for the CLUSTER resource is {CLUSTER_NAME}")

    def unknown_elements(self) -> bool:
        """Kafka's AclBinding.isUnknown: such a binding makes CreateAcls unparseable."""
        return UNKNOWN_CODE in (self.resource_type, self.pattern_type, self.operation, self.permission_type)

    def to_json(self) -> dict:
        return {k: (v.name if isinstance(v, IntEnum) else v) for k, v in asdict(self).items()}

    @classmethod
    def from_json(cls, data: dict) -> AclBinding:
        return cls(ResourceType[data["resource_type"]], data["resource_name"], PatternType[data["pattern_type"]],
                   data["principal"], data["host"], AclOperation[data["operation"]],
                   AclPermissionType[data["permission_type"]])


@dataclass(frozen=True)
class AclBindingFilter:
    """DescribeAcls/DeleteAcls filters: None matches any string, ANY any enum value; pattern type
    MATCH selects every pattern that would apply to the named resource."""

    resource_type: ResourceType
    resource_name: str | None
    pattern_type: PatternType
    principal: str | None
    host: str | None
    operation: AclOperation
    permission_type: AclPermissionType

    @classmethod
    def from_request(cls, item) -> AclBindingFilter:
        """From a DescribeAcls request or a DeleteAcls filter (the same fields)."""
        return cls(from_code(ResourceType, item.resource_type_filter), item.resource_name_filter,
                   from_code(PatternType, item.pattern_type_filter), item.principal_filter, item.host_filter,
                   from_code(AclOperation, item.operation),
                   from_code(AclPermissionType, item.permission_type))

    def unknown_elements(self) -> bool:
        return UNKNOWN_CODE in (self.resource_type, self.pattern_type, self.operation, self.permission_type)

    def matches(self, acl: AclBinding) -> bool:
        if self.resource_type != ResourceType.ANY and self.resource_type != acl.resource_type:
            return False
        if self.pattern_type not in (PatternType.ANY, PatternType.MATCH) and self.pattern_type != acl.pattern_type:
            return False
        if self.resource_name is not None:
            if self.pattern_type in (PatternType.ANY, acl.pattern_type):
                if self.resource_name != acl.resource_name:
                    return False
            elif acl.pattern_type == PatternType.LITERAL:
                if self.resource_name != acl.resource_name and acl.resource_name != WILDCARD:
                    return False
            elif not self.resource_name.startswith(acl.resource_name):  # PREFIXED
                return False
        if self.principal is not None and self.principal != acl.principal:
            return False
        if self.host is not None and self.host != acl.host:
            return False
        if self.operation != AclOperation.ANY and self.operation != acl.operation:
            return False
        return self.permission_type == AclPermissionType.ANY or self.permission_type == acl.permission_type


def from_code(cls, code: int):
    """An enum member; codes Kafka does not define read as UNKNOWN, as fromCode does."""
    try:
        return cls(code)
    except ValueError:
        return cls(UNKNOWN_CODE)


def cluster_authorized_operations(authorizer, ctx) -> int:
    """The cluster's authorized operations as Metadata v8-10 and DescribeCluster answer them: Kafka
    (KafkaApis.handleTopicMetadataRequest, AuthHelper.computeDescribeClusterResponse) reveals them only
    to a principal that may DESCRIBE the cluster, and answers 0 to the others."""
    if not authorizer.authorize(ctx, AclOperation.DESCRIBE, ResourceType.CLUSTER, CLUSTER_NAME):
        return 0
    return authorizer.authorized_operations(ctx, ResourceType.CLUSTER, CLUSTER_NAME)


def parse_super_users(value: str | None) -> frozenset[str]:
    """`super.users`: principals separated by semicolons (User:alice;User:bob)."""
    return frozenset(p.strip() for p in (value or "").split(";") if p.strip())


def _principal(ctx) -> str:
    return getattr(ctx, "principal", None) or ANONYMOUS


def _host(ctx) -> str:
    peer = getattr(ctx, "peer", None)
    return str(peer[0]) if peer else ""


class AllowEveryone:
    """The authorizer of a broker without `authorizer.class.name`: nothing is checked."""

    enabled = False

    def authorize(self, ctx, operation: AclOperation, resource_type: ResourceType, name: str) -> bool:
        return True

    def filter_authorized(self, ctx, operation: AclOperation, resource_type: ResourceType,
                          names: Iterable[str]) -> set[str]:
        return set(names)

    def authorize_by_resource_type(self, ctx, operation: AclOperation, resource_type: ResourceType) -> bool:
        return True

    def authorized_operations(self, ctx, resource_type: ResourceType, name: str) -> int:
        """Without an authorizer Kafka reports every operation the resource type supports."""
        return _bits(SUPPORTED_OPERATIONS.get(resource_type, ()))


def _bits(operations: Iterable[AclOperation]) -> int:
    field = 0
    for op in operations:
        field |= 1 << int(op)
    return field if field < (1 << 31) else field - (1 << 32)


class StandardAuthorizer:
    """Kafka's StandardAuthorizer semantics over ACLs persisted in `<data dir>/kafka-wire-acls.json`."""

    enabled = True

    def __init__(self, data_dir: str | os.PathLike | None, super_users: Iterable[str] = (),
                 allow_everyone_if_no_acl_found: bool = False) -> None:
        self.path = Path(data_dir) / ACLS_FILE if data_dir is not None else None
        self.super_users = frozenset(super_users)
        self.allow_if_no_acl = allow_everyone_if_no_acl_found
        self._acls: dict[str, AclBinding] = {}  # id -> binding
        # Indexes: (type, name) -> literal ACLs; type -> prefixed ACLs.
        self._literal: dict[tuple[ResourceType, str], list[AclBinding]] = {}
        self._prefixed: dict[ResourceType, list[AclBinding]] = {}
        self._lock = threading.Lock()
        if self.path is not None and self.path.exists():
            data = json.loads(self.path.read_text())
            for acl_id, item in data.get("acls", {}).items():
                self._acls[acl_id] = AclBinding.from_json(item)
            self._reindex()

    # -- decisions -----------------------------------------------------------------------------

    def authorize(self, ctx, operation: AclOperation, resource_type: ResourceType, name: str) -> bool:
        return self.authorize_principal(_principal(ctx), _host(ctx), operation, resource_type, name)

    def authorize_principal(self, principal: str, host: str, operation: AclOperation,
                            resource_type: ResourceType, name: str) -> bool:
        if principal in self.super_users:
            return True
        principals = (principal, WILDCARD_PRINCIPAL)
        found_acl = False
        allowed = False
        for acl in self._applicable(resource_type, name):
            found_acl = True
            result = _acl_result(acl, operation, principals, host)
            if result is AclPermissionType.DENY:
                logger.debug("%s denied %s on %s:%s from %s by %s", principal, operation.name, resource_type.name,
                          name, host, acl)
                return False
            if result is AclPermissionType.ALLOW:
                allowed = True
        if allowed:
            return True
        return self.allow_if_no_acl and not found_acl

    def filter_authorized(self, ctx, operation: AclOperation, resource_type: ResourceType,
                          names: Iterable[str]) -> set[str]:
        principal, host = _principal(ctx), _host(ctx)
        return {n for n in set(names) if self.authorize_principal(principal, host, operation, resource_type, n)}

    def authorize_by_resource_type(self, ctx, operation: AclOperation, resource_type: ResourceType) -> bool:
        """Whether the principal may do `operation` on at least one resource of the type (Kafka's
        Authorizer.authorizeByResourceType: InitProducerId without IDEMPOTENT_WRITE asks whether
        the producer may write to some topic). An ALLOW counts unless a DENY on the same literal
        name, on a prefix of it, or on everything (LITERAL `*`) overrides it."""
        principal, host = _principal(ctx), _host(ctx)
        # A name nobody would use: super users, and allow.everyone.if.no.acl.found with no ACLs.
        if self.authorize_principal(principal, host, operation, resource_type, "hardcode"):
            return True
        principals = (principal, WILDCARD_PRINCIPAL)
        deny = {PatternType.LITERAL: set(), PatternType.PREFIXED: set()}
        allow = {PatternType.LITERAL: set(), PatternType.PREFIXED: set()}
        for acl in self._acls.values():
            if acl.resource_type != resource_type or acl.principal not in principals:
                continue
            if acl.host not in (WILDCARD, host):
                continue
            if acl.operation not in (operation, AclOperation.ALL):
                continue
            target = deny if acl.permission_type == AclPermissionType.DENY else allow
            target[acl.pattern_type].add(acl.resource_name)
        if WILDCARD in deny[PatternType.LITERAL]:
            return False
        for name in allow[PatternType.LITERAL]:
            if name == WILDCARD:
                return True
            if name not in deny[PatternType.LITERAL] and not any(name.startswith(p) for p in deny[PatternType.PREFIXED]):
                return True
        for prefix in allow[PatternType.PREFIXED]:
            if not any(prefix.startswith(p) for p in deny[PatternType.PREFIXED]):
                return True
        return False

    def authorized_operations(self, ctx, resource_type: ResourceType, name: str) -> int:
        """Kafka's authorized-operations bit field (bit n set: operation code n is allowed)."""
        principal, host = _principal(ctx), _host(ctx)
        return _bits(op for op in SUPPORTED_OPERATIONS.get(resource_type, ())
                     if self.authorize_principal(principal, host, op, resource_type, name))

    def _applicable(self, resource_type: ResourceType, name: str) -> list[AclBinding]:
        acls = list(self._literal.get((resource_type, name), ()))
        if name != WILDCARD:
            acls += self._literal.get((resource_type, WILDCARD), ())
        acls += [acl for acl in self._prefixed.get(resource_type, ()) if name.startswith(acl.resource_name)]
        return acls

    # -- the ACL store ---------------------------------------------------------------------------

    def acls(self, flt: AclBindingFilter | None = None) -> list[AclBinding]:
        return [acl for acl in self._acls.values() if flt is None or flt.matches(acl)]

    def create(self, bindings: list[AclBinding]) -> None:
        """Add validated bindings (already present ones stay once) and persist."""
        with self._lock:
            existing = set(self._acls.values())
            for binding in bindings:
                if binding not in existing:
                    self._acls[str(uuid.uuid4())] = binding
                    existing.add(binding)
            self._commit()

    def delete(self, filters: list[AclBindingFilter]) -> list[list[AclBinding]]:
        """Remove what each filter matches; per filter, the bindings it removed."""
        with self._lock:
            results = []
            for flt in filters:
                matched = [(acl_id, acl) for acl_id, acl in self._acls.items() if flt.matches(acl)]
                for acl_id, _ in matched:
                    del self._acls[acl_id]
                results.append([acl for _, acl in matched])
            self._commit()
            return results

    def _commit(self) -> None:
        self._reindex()
        if self.path is None:
            return
        data = {"version": 1, "acls": {acl_id: acl.to_json() for acl_id, acl in self._acls.items()}}
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(self.path.name + ".tmp")
        with open(tmp, "w") as f:
            json.dump(data, f, indent=1)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.path)

    def _reindex(self) -> None:
        literal: dict[tuple[ResourceType, str], list[AclBinding]] = {}
        prefixed: dict[ResourceType, list[AclBinding]] = {}
        for acl in self._acls.values():
            if acl.pattern_type == PatternType.LITERAL:
                literal.setdefault((acl.resource_type, acl.resource_name), []).append(acl)
            else:
                prefixed.setdefault(acl.resource_type, []).append(acl)
        self._literal, self._prefixed = literal, prefixed


def _acl_result(acl: AclBinding, operation: AclOperation, principals: tuple[str, str],
                host: str) -> AclPermissionType | None:
    """ALLOW or DENY when the ACL applies to this principal, host and operation; else None."""
    if acl.principal not in principals:
        return None
    if acl.host != WILDCARD and acl.host != host:
        return None
    if acl.operation != AclOperation.ALL:
        if acl.permission_type == AclPermissionType.ALLOW:
            if operation == AclOperation.DESCRIBE:
                if acl.operation not in _IMPLIES_DESCRIBE:
                    return None
            elif operation == AclOperation.DESCRIBE_CONFIGS:
                if acl.operation not in _IMPLIES_DESCRIBE_CONFIGS:
                    return None
            elif operation != acl.operation:
                return None
        elif operation != acl.operation:
            return None
    return acl.permission_type


# ConfigResource types in DescribeConfigs/AlterConfigs/IncrementalAlterConfigs.
CONFIG_TOPIC, CONFIG_BROKER, CONFIG_BROKER_LOGGER, CONFIG_GROUP = 2, 4, 8, 32


def config_resource_error(authorizer, ctx, operation: AclOperation, resource_type: int, name: str):
    """Kafka's check for one config resource: a topic's configs need `operation` (DESCRIBE_CONFIGS,
    ALTER_CONFIGS) on the topic (TOPIC_AUTHORIZATION_FAILED), a group's on the group
    (GROUP_AUTHORIZATION_FAILED), a broker's and its loggers' on the cluster
    (CLUSTER_AUTHORIZATION_FAILED). Returns the ErrorCode, or None when allowed."""
    from kafka_wire.errors import ErrorCode

    if resource_type == CONFIG_TOPIC:
        if not authorizer.authorize(ctx, operation, ResourceType.TOPIC, name):
            return ErrorCode.TOPIC_AUTHORIZATION_FAILED
    elif resource_type == CONFIG_GROUP:
        if not authorizer.authorize(ctx, operation, ResourceType.GROUP, name):
            return ErrorCode.GROUP_AUTHORIZATION_FAILED
    elif resource_type in (CONFIG_BROKER, CONFIG_BROKER_LOGGER):
        if not authorizer.authorize(ctx, operation, ResourceType.CLUSTER, CLUSTER_NAME):
            return ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    return None


def build_authorizer(config, data_dir: str | os.PathLike):
    """The authorizer `authorizer.class.name` asks for: Kafka's class names turn ACLs on."""
    class_name = (config.get("authorizer.class.name") or "").strip()
    if not class_name:
        return AllowEveryone()
    if class_name not in KAFKA_AUTHORIZER_CLASSES:
        from ..config import ConfigError

        raise ConfigError(f"Invalid value {class_name} for configuration authorizer.class.name: kafka-wire "
                          f"provides Kafka's ACL authorizer as {sorted(KAFKA_AUTHORIZER_CLASSES)[0]}")
    return StandardAuthorizer(data_dir, parse_super_users(config.get("super.users")),
                              bool(config.get("allow.everyone.if.no.acl.found")))
