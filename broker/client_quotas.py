"""Client quotas (KIP-546, KIP-55): their storage rules, the DescribeClientQuotas filter, and the
byte-rate throttling of produce and fetch requests.

Entities are user, client-id and ip (a null name is the default entity of its type); ip stands
alone. Validation and messages follow Kafka's controller (ClientQuotaControlManager) and its
broker image (ClientQuotasImage.describe). Quotas live in the metadata (the embedded file, or
ZooKeeper in cluster mode, where every broker follows the changes), so they survive a restart,
and take effect at once.

Throttling follows Kafka's ClientQuotaManager with its default quota callback: a request is
counted against the most specific quota that applies to its (user, client-id) for that quota
key, in this order:
  user + client-id > user + default client-id > user > default user + client-id >
  default user + default client-id > default user > client-id > default client-id.
The rate is measured over `quota.window.num` (11) windows of `quota.window.size.seconds` (1 s),
as Kafka's Rate (a young sensor counts as if the minimum span had passed), and a request that takes
it above the quota answers throttle_time_ms = (rate - quota) / quota * window span, at most the
whole span. Clients wait that long before their next request to this broker (KIP-219: Produce
v6+, Fetch v8+); unlike Kafka, the broker does not also mute the connection for that long. As in
Kafka, a consumer's fetch reads at most what its quota allows in a window, and a throttled fetch
is answered empty, its bytes not counted. request_percentage, controller_mutation_rate and
connection_creation_rate are stored and described but not enforced.
"""

from __future__ import annotations

import ipaddress
import socket
import time
from collections import deque

from kafka_wire.client_quotas import CLIENT_ID, ENTITY_TYPES, IP, IP_KEYS, USER, USER_CLIENT_KEYS
from kafka_wire.errors import ErrorCode

_MAX = {"SHORT": (1 << 15) - 1, "INT": (1 << 31) - 1, "LONG": float((1 << 63) - 1)}

QUOTA_WINDOW_NUM = 11
QUOTA_WINDOW_MS = 1000
# Sensors kept before idle ones are swept (one per quota-bearing user/client-id pair in use).
SENSOR_SWEEP_SIZE = 1024

Entity = tuple  # sorted ((entity type, name or None), ...)


class QuotaRequestError(Exception):
    """A request Kafka refuses as a whole or per entity: (error code, message)."""

    def __init__(self, error: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.error = error
        self.message = message


def entity_key(parts) -> Entity:
    return tuple(sorted(parts, key=lambda part: part[0]))


def entity_text(entity: Entity) -> str:
    """As Java's ClientQuotaEntity.toString: ClientQuotaEntity(entries={user=alice})."""
    return "ClientQuotaEntity(entries={" + ", ".join(f"{t}={n}" for t, n in entity) + "})"


# -- AlterClientQuotas -------------------------------------------------------------------------

def _valid_ip_entity(name: str | None) -> bool:
    if name is None:
        return True
    try:
        ipaddress.ip_address(name)
        return True
    except ValueError:
        pass
    try:  # Java's InetAddress.getByName resolves host names too
        socket.getaddrinfo(name, None)
        return True
    except (OSError, UnicodeError):
        return False


def validate_entity(parts: list[tuple[str, str | None]]) -> dict[str, str | None]:
    """Kafka's validateEntity and configKeysForEntityType; the valid keys for the entity."""
    if not parts:
        raise QuotaRequestError(ErrorCode.INVALID_REQUEST, "Invalid empty client quota entity")
    seen: dict[str, str | None] = {}
    for kind, name in parts:
        if kind in seen:
            raise QuotaRequestError(ErrorCode.INVALID_REQUEST,
                                    f"Invalid client quota entity, duplicate entity entry {kind}")
        if kind not in ENTITY_TYPES:
            raise QuotaRequestError(ErrorCode.INVALID_REQUEST, f"Unhandled client quota entity type: {kind}")
        seen[kind] = name
        if name is not None and name == "":
            raise QuotaRequestError(ErrorCode.INVALID_REQUEST, f"Empty {kind} not supported")
    if IP in seen:
        if USER in seen or CLIENT_ID in seen:
            # Kafka's message lacks the space after "should".
            raise QuotaRequestError(ErrorCode.INVALID_REQUEST, "Invalid quota entity combination, IP entity should"
                                    "not be combined with User or ClientId")
        if not _valid_ip_entity(seen[IP]):
            raise QuotaRequestError(ErrorCode.INVALID_REQUEST, f"{seen[IP]} is not a valid IP or resolvable host.")
        return IP_KEYS
    return USER_CLIENT_KEYS


def validate_value(valid_keys: dict[str, str], key: str, value: float) -> None:
    """Kafka's validateQuotaKeyValue."""
    kind = valid_keys.get(key)
    if kind is None:
        raise QuotaRequestError(ErrorCode.INVALID_REQUEST, f"Invalid configuration key {key}")
    if value <= 0.0:
        raise QuotaRequestError(ErrorCode.INVALID_REQUEST, f"Quota {key} must be greater than 0")
    if kind == "DOUBLE":
        return
    if value > _MAX[kind]:
        article = "an" if kind == "INT" else "a"
        raise QuotaRequestError(ErrorCode.INVALID_REQUEST, f"Proposed value for {key} is too large for {article} {kind}.")
    if abs(value % 1.0) > 1e-6:
        raise QuotaRequestError(ErrorCode.INVALID_REQUEST, f"{key} cannot be a fractional value.")


def plan_alterations(current: dict[Entity, dict[str, float]], entries) -> tuple[list, dict[Entity, dict]]:
    """Validate AlterClientQuotas entries as Kafka's controller does (ClientQuotaControlManager
    .alterClientQuotas). Returns one result per distinct entity, [(entity, error, message)] in
    request order (Kafka answers from a map keyed by entity: an entity named twice gets one
    answer, "Ignoring duplicate entity"), and the changes to store, entity -> {key: value, or None
    to remove}."""
    results: dict[Entity, tuple[ErrorCode, str | None]] = {}
    changes: dict[Entity, dict[str, float | None]] = {}
    for entry in entries:
        # The request's entity is a map: a type named twice keeps its last name.
        names = {e.entity_type: e.entity_name for e in entry.entity}
        entity = entity_key(names.items())
        alterations: dict[str, float | None] = {}
        for op in entry.ops:
            if op.key in alterations:
                results[entity] = (ErrorCode.INVALID_REQUEST, f"Duplicate quota key {op.key} not "
                                   f"updating quota for this entity {entity_text(entity)}")
            else:
                alterations[op.key] = None if op.remove else float(op.value)
        if entity in results:
            results[entity] = (ErrorCode.INVALID_REQUEST, f"Ignoring duplicate entity {entity_text(entity)}")
            continue
        try:
            valid_keys = validate_entity(list(names.items()))
            existing = current.get(entity, {})
            change: dict[str, float | None] = {}
            for key, value in alterations.items():
                if value is None:
                    if key in existing:
                        change[key] = None
                else:
                    validate_value(valid_keys, key, value)
                    if existing.get(key) != value:
                        change[key] = value
        except QuotaRequestError as exc:
            results[entity] = (exc.error, exc.message)
            continue
        if change:
            changes.setdefault(entity, {}).update(change)
        results[entity] = (ErrorCode.NONE, None)
    return [(entity, error, message) for entity, (error, message) in results.items()], changes


# -- DescribeClientQuotas ----------------------------------------------------------------------

MATCH_EXACT, MATCH_DEFAULT, MATCH_SPECIFIED = 0, 1, 2


def describe(quotas: dict[Entity, dict[str, float]], components, strict: bool) -> list[tuple[Entity, dict]]:
    """The entities a DescribeClientQuotas filter matches (Kafka's ClientQuotasImage.describe);
    raises QuotaRequestError for a filter Kafka refuses."""
    exact: dict[str, str | None] = {}
    typed: set[str] = set()
    for component in components:
        kind = component.entity_type
        if not kind:
            raise QuotaRequestError(ErrorCode.INVALID_REQUEST, "Invalid empty entity type.")
        if kind in exact or kind in typed:
            raise QuotaRequestError(ErrorCode.INVALID_REQUEST,
                                    f"Entity type {kind} cannot appear more than once in the filter.")
        if kind not in ENTITY_TYPES:
            raise QuotaRequestError(ErrorCode.UNSUPPORTED_VERSION, f"Unsupported entity type {kind}")
        if component.match_type == MATCH_EXACT:
            if component.match is None:
                raise QuotaRequestError(ErrorCode.INVALID_REQUEST,
                                        "Request specified MATCH_TYPE_EXACT, but set match string to null.")
            exact[kind] = component.match
        elif component.match_type == MATCH_DEFAULT:
            if component.match is not None:
                raise QuotaRequestError(ErrorCode.INVALID_REQUEST,
                                        "Request specified MATCH_TYPE_DEFAULT, but also specified a match string.")
            exact[kind] = None
        elif component.match_type == MATCH_SPECIFIED:
            if component.match is not None:
                raise QuotaRequestError(ErrorCode.INVALID_REQUEST,
                                        "Request specified MATCH_TYPE_SPECIFIED, but also specified a match string.")
            typed.add(kind)
        else:
            raise QuotaRequestError(ErrorCode.INVALID_REQUEST, f"Unknown match type {component.match_type}")
    if (IP in exact or IP in typed) and ({USER, CLIENT_ID} & (set(exact) | typed)):
        raise QuotaRequestError(ErrorCode.INVALID_REQUEST, "Invalid entity filter component combination. IP "
                                "filter component should not be used with user or clientId filter component.")
    found = []
    for entity, values in quotas.items():
        names = dict(entity)
        if strict and len(names) != len(exact) + len(typed):
            continue
        if any(kind not in names or names[kind] != name for kind, name in exact.items()):
            continue
        if any(kind not in names for kind in typed):
            continue
        found.append((entity, values))
    return found


# -- throttling --------------------------------------------------------------------------------

def quota_for(quotas: dict[Entity, dict[str, float]], key: str, user: str, client_id: str
              ) -> tuple[float, tuple[str, str]] | None:
    """(quota, sensor tags) for a (user, client-id) under Kafka's precedence, or None: unlimited.
    Clients counted together share the tags (all of a user's clients for a user-level quota)."""
    def get(*parts) -> float | None:
        return quotas.get(entity_key(parts), {}).get(key)

    candidates = [
        (((USER, user), (CLIENT_ID, client_id)), (user, client_id)),
        (((USER, user), (CLIENT_ID, None)), (user, client_id)),
        (((USER, user),), (user, "")),
        (((USER, None), (CLIENT_ID, client_id)), (user, client_id)),
        (((USER, None), (CLIENT_ID, None)), (user, client_id)),
        (((USER, None),), (user, "")),
        (((CLIENT_ID, client_id),), ("", client_id)),
        (((CLIENT_ID, None),), ("", client_id)),
    ]
    for parts, tags in candidates:
        value = get(*parts)
        if value is not None:
            return value, tags
    return None


class RateSensor:
    """Kafka's Rate over SampledStat windows: bytes per second over the last window.num windows."""

    def __init__(self, window_ms: int = QUOTA_WINDOW_MS, samples: int = QUOTA_WINDOW_NUM) -> None:
        self.window_ms = window_ms
        self.samples = samples
        self._windows: deque[list] = deque()  # [window start ms, total]

    def _purge(self, now_ms: float) -> None:
        expire_before = now_ms - self.samples * self.window_ms
        while self._windows and self._windows[0][0] <= expire_before:
            self._windows.popleft()

    def record(self, value: float, now_ms: float) -> None:
        self._purge(now_ms)
        if not self._windows or now_ms >= self._windows[-1][0] + self.window_ms:
            self._windows.append([now_ms, 0.0])
            if len(self._windows) > self.samples:
                self._windows.popleft()
        self._windows[-1][1] += value

    def window_span_ms(self, now_ms: float) -> float:
        oldest = self._windows[0][0] if self._windows else now_ms
        elapsed = now_ms - oldest
        full_windows = int(elapsed // self.window_ms)
        if full_windows < self.samples - 1:
            elapsed += (self.samples - 1 - full_windows) * self.window_ms
        return max(elapsed, 1.0)

    def idle(self, now_ms: float) -> bool:
        """Nothing recorded within the sampled span."""
        self._purge(now_ms)
        return not self._windows

    def rate(self, now_ms: float) -> float:
        self._purge(now_ms)
        return sum(total for _, total in self._windows) * 1000.0 / self.window_span_ms(now_ms)


class SharedRateSensor:
    """A RateSensor whose windows are the broker's, shared by its workers (broker/workers/
    connection_counts.py, SharedRateWindows): each operation runs on them under the table's lock.
    Local to this worker when the table has no free slot."""

    def __init__(self, table, name: str, now_ms: float) -> None:
        self._sensor = RateSensor()  # what the operations run on: the shared windows loaded, or its own
        self._table = table
        self._key = table.key(name)
        self._slot = table.slot(self._key, self._expired_before(now_ms))

    def _expired_before(self, now_ms: float) -> float:
        return now_ms - self._sensor.samples * self._sensor.window_ms

    def _on_shared(self, operation, now_ms: float, *args):
        sensor = self._sensor
        for _ in range(2):
            if self._slot is None:
                break

            def change(windows):
                sensor._windows = deque(windows)
                result = operation(sensor, *args, now_ms)
                windows[:] = sensor._windows
                return result

            done, result = self._table.update(self._slot, self._key, change)
            if done:
                return result
            # Another sensor took the slot after ours had expired: claim one again.
            self._slot = self._table.slot(self._key, self._expired_before(now_ms))
            sensor._windows = deque()
        return operation(sensor, *args, now_ms)

    def record(self, value: float, now_ms: float) -> None:
        self._on_shared(RateSensor.record, now_ms, value)

    def window_span_ms(self, now_ms: float) -> float:
        return self._on_shared(RateSensor.window_span_ms, now_ms)

    def idle(self, now_ms: float) -> bool:
        return self._on_shared(RateSensor.idle, now_ms)

    def rate(self, now_ms: float) -> float:
        return self._on_shared(RateSensor.rate, now_ms)


class ClientQuotaManager:
    """Byte-rate quotas of one kind (producer_byte_rate or consumer_byte_rate): records what each
    (user, client-id) sends or receives and answers how long it must wait."""

    def __init__(self, key: str, quotas_of, shared_windows=None) -> None:
        self.key = key
        self._quotas_of = quotas_of  # -> the current {entity: {key: value}}
        self._sensors: dict[tuple[tuple[str, str], float], RateSensor] = {}
        # With several workers, the windows every worker records in (SharedRateWindows).
        self._shared_windows = shared_windows

    def max_bytes_in_window(self, user: str, client_id: str) -> int | None:
        """What the quota allows in the sampled span (Kafka's getMaxValueInQuotaWindow), or None."""
        quotas = self._quotas_of()
        found = quota_for(quotas, self.key, user, client_id) if quotas else None
        if found is None:
            return None
        return int(found[0] * (QUOTA_WINDOW_NUM - 1) * QUOTA_WINDOW_MS / 1000)

    def record_and_get_throttle_ms(self, user: str, client_id: str, nbytes: int, now_ms: float | None = None,
                                   *, unrecord_if_throttled: bool = False) -> int:
        """Count nbytes; the throttle time when that takes the rate over the quota (then, with
        unrecord_if_throttled, the bytes are taken back: Kafka's unrecordQuotaSensor)."""
        quotas = self._quotas_of()
        if not quotas:  # the common case: no client quotas at all
            return 0
        found = quota_for(quotas, self.key, user, client_id)
        if found is None:
            return 0
        quota, tags = found
        now_ms = time.monotonic() * 1000 if now_ms is None else now_ms
        # A changed quota starts a fresh sensor, as Kafka re-creates the quota metric.
        sensor = self._sensors.get((tags, quota))
        if sensor is None:
            if len(self._sensors) >= SENSOR_SWEEP_SIZE:
                self._drop_idle_sensors(now_ms)
            if self._shared_windows is None:
                sensor = RateSensor()
            else:
                sensor = SharedRateSensor(self._shared_windows, f"{self.key} {tags!r} {quota!r}", now_ms)
            self._sensors[(tags, quota)] = sensor
        sensor.record(nbytes, now_ms)
        rate = sensor.rate(now_ms)
        if rate <= quota:
            return 0
        span = sensor.window_span_ms(now_ms)
        throttle = (rate - quota) / quota * span
        if unrecord_if_throttled:
            sensor.record(-nbytes, now_ms)
        return int(min(throttle, QUOTA_WINDOW_NUM * QUOTA_WINDOW_MS))

    def _drop_idle_sensors(self, now_ms: float) -> None:
        """Forget sensors with nothing in their windows (Kafka expires idle quota sensors too)."""
        for key, sensor in list(self._sensors.items()):
            if sensor.idle(now_ms):
                del self._sensors[key]


def user_of(principal: str) -> str:
    """The quota user of a principal: its name ("User:alice" -> "alice")."""
    return principal.split(":", 1)[1] if ":" in principal else principal


def managers(broker) -> dict[str, ClientQuotaManager]:
    """The broker's produce and fetch quota managers, made on first use."""
    found = getattr(broker, "client_quota_managers", None)
    if found is None:
        quotas_of = lambda: broker.metadata.client_quotas  # noqa: E731
        shared = getattr(getattr(broker, "workers", None), "rate_windows", None)
        found = {key: ClientQuotaManager(key, quotas_of, shared) for key in ("producer_byte_rate", "consumer_byte_rate")}
        broker.client_quota_managers = found
    return found


def produce_throttle_ms(broker, ctx, nbytes: int) -> int:
    """Count a produce request's bytes against its producer_byte_rate quota; the throttle time."""
    return managers(broker)["producer_byte_rate"].record_and_get_throttle_ms(
        user_of(ctx.principal), ctx.client_id or "", nbytes)


def fetch_throttle_ms(broker, ctx, nbytes: int) -> int:
    """Count a fetch response's bytes against its consumer_byte_rate quota; the throttle time.
    A throttled fetch is answered empty, so its bytes are not counted then."""
    return managers(broker)["consumer_byte_rate"].record_and_get_throttle_ms(
        user_of(ctx.principal), ctx.client_id or "", nbytes, unrecord_if_throttled=True)


def fetch_max_bytes(broker, ctx, max_bytes: int) -> int:
    """A consumer fetch's max_bytes, lowered to what its consumer_byte_rate quota allows in a
    window (KafkaApis.handleFetchRequest), so that one fetch can never be throttled forever."""
    allowed = managers(broker)["consumer_byte_rate"].max_bytes_in_window(user_of(ctx.principal), ctx.client_id or "")
    return max_bytes if allowed is None else min(max_bytes, allowed)
