"""`kafka-wire features describe|upgrade|downgrade|disable`: feature flags, as kafka-features.sh manages them.

    kafka-wire features describe --bootstrap-server localhost:9092 [--node-id 1]
    kafka-wire features upgrade --bootstrap-server localhost:9092 --feature transaction.version=2 [--dry-run]
    kafka-wire features downgrade --bootstrap-server localhost:9092 --feature transaction.version=1 [--unsafe]
    kafka-wire features disable --bootstrap-server localhost:9092 --feature group.version [--dry-run]

Kafka's FeatureCommand: `describe` reads a broker's ApiVersions (supported and finalized features,
their epoch) and prints kafka-features.sh's lines; the others send UpdateFeatures to the
controller (named in Metadata) and print one line per feature ("transaction.version was
downgraded to 1.", "Can not upgrade ... . <the broker's message>"), exit status 1 when one failed.
A downgrade is safe unless --unsafe; `disable` is a downgrade to 0. Levels are numbers
(kafka-features.sh names metadata.version's levels after releases; kafka-wire reports no
metadata.version).
"""

from __future__ import annotations

from kafka_wire.errors import ErrorCode

from ..tool_support import ToolError, add_connection_arguments, connect, reports_errors

UPGRADE, SAFE_DOWNGRADE, UNSAFE_DOWNGRADE = 1, 2, 3
SOFTWARE = {"client_software_name": "kafka-wire-features", "client_software_version": "1"}


@reports_errors
def describe(args) -> int:
    with connect(args) as cluster:
        client = cluster.broker(args.node_id) if args.node_id is not None else cluster.any_broker()
        version = client.version_for("ApiVersions")
        answer = client.call("ApiVersions", version, SOFTWARE if version >= 3 else {})
    finalized = {f.name: f.max_version_level for f in answer.finalized_features or []}
    epoch = answer.finalized_features_epoch if answer.finalized_features_epoch >= 0 else "-"
    for feature in sorted(answer.supported_features or [], key=lambda f: f.name):
        print(f"Feature: {feature.name:<40}  SupportedMinVersion: {feature.min_version:<15}  "
              f"SupportedMaxVersion: {feature.max_version:<15}  "
              f"FinalizedVersionLevel: {finalized.get(feature.name, 0):<15}  Epoch: {epoch}")
    return 0


def _updates(args, op: str) -> dict[str, int]:
    updates: dict[str, int] = {}
    for item in args.feature or []:
        if op == "disable":
            name, level = item, 0
        else:
            name, sep, text = item.partition("=")
            if not sep:
                raise ToolError(f"Can't parse feature=level string {item}: equals sign not found.")
            try:
                level = int(text.strip())
            except ValueError:
                raise ToolError(f"Can't parse feature=level string {item}: unable to parse {text.strip()} "
                                "as a short.") from None
            name = name.strip()
        if name in updates:
            raise ToolError(f"Feature {name} was specified more than once.")
        updates[name] = level
    if not updates:
        raise ToolError(f"You must specify at least one feature to {op}")
    return updates


def _update(args, op: str) -> int:
    updates = _updates(args, op)
    upgrade_type = UPGRADE if op == "upgrade" else UNSAFE_DOWNGRADE if args.unsafe else SAFE_DOWNGRADE
    with connect(args) as cluster:
        for attempt in range(2):
            controller = cluster.controller()
            version = controller.version_for("UpdateFeatures")
            if args.dry_run and version < 1:
                raise ToolError("the broker's UpdateFeatures v0 cannot validate only (--dry-run)")
            answer = controller.call("UpdateFeatures", version, {
                "timeout_ms": args.request_timeout_ms, "validate_only": args.dry_run,
                "feature_updates": [{"feature": name, "max_version_level": level, "upgrade_type": upgrade_type,
                                     "allow_downgrade": upgrade_type != UPGRADE}
                                    for name, level in updates.items()]})
            if answer.error_code != ErrorCode.NOT_CONTROLLER or attempt:
                break
            cluster.controller_id = -1  # the controller moved: ask Metadata again
    error = ErrorCode.from_code(answer.error_code)
    failures = {name: answer.error_message or error.message for name in updates} if error != ErrorCode.NONE else {
        r.feature: r.error_message for r in answer.results or [] if r.error_code}
    for name in sorted(updates):
        level = updates[name]
        what = f"disable {name}" if op == "disable" else f"{op} {name} to {level}"
        if name in failures:
            print(f"{'Can not' if args.dry_run else 'Could not'} {what}. {failures[name]}")
        else:
            done = "disabled." if op == "disable" else f"{op}d to {level}."
            print(f"{name} {'can be' if args.dry_run else 'was'} {done}")
    if failures:
        raise ToolError(f"{len(failures)} out of {len(updates)} operation(s) failed.")
    return 0


@reports_errors
def upgrade(args) -> int:
    return _update(args, "upgrade")


@reports_errors
def downgrade(args) -> int:
    return _update(args, "downgrade")


@reports_errors
def disable(args) -> int:
    return _update(args, "disable")


def register(subparsers) -> None:
    parser = subparsers.add_parser("features", help="describe, upgrade, downgrade or disable feature flags "
                                                    "(kafka-features.sh)")
    actions = parser.add_subparsers(dest="features_action", required=True)
    p = actions.add_parser("describe", help="supported and finalized features, their epoch")
    add_connection_arguments(p)
    p.add_argument("--node-id", type=int, help="the broker to ask (default: any)")
    p.set_defaults(func=describe)
    for name, func, helptext in (("upgrade", upgrade, "raise finalized levels"),
                                 ("downgrade", downgrade, "lower finalized levels"),
                                 ("disable", disable, "set features to level 0")):
        p = actions.add_parser(name, help=helptext)
        add_connection_arguments(p)
        p.add_argument("--feature", action="append", metavar="NAME" if name == "disable" else "NAME=LEVEL",
                       help="the feature (repeatable)")
        if name != "upgrade":
            p.add_argument("--unsafe", action="store_true", help="allow a downgrade that may lose metadata")
        p.add_argument("--dry-run", action="store_true", help="validate only")
        p.set_defaults(func=func)
