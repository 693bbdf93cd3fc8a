"""`kafka-wire users add|delete|list`: SCRAM users, in a broker's data directory or over the wire.

    kafka-wire users add alice --config server.properties          # asks for the password
    kafka-wire users add alice --password-stdin --set log.dirs=/var/lib/kafka-wire < pw.txt
    kafka-wire users list --data-dir /var/lib/kafka-wire
    kafka-wire users delete alice --mechanism SCRAM-SHA-512 --data-dir /var/lib/kafka-wire
    kafka-wire users add bob --password pw --bootstrap-server admin-host:9092   # AlterUserScramCredentials

Offline, the tool edits the credential store in the first of the broker's `log.dirs` (a running
broker picks the change up at the next login); with --bootstrap-server it asks a broker with
AlterUserScramCredentials / DescribeUserScramCredentials, as `kafka-configs.sh --entity-type users`
does. Passwords are stored only as SCRAM credentials (salt, iterations, StoredKey, ServerKey), one
per mechanism; PLAIN logins are checked against them too. `add` creates credentials for both
SCRAM mechanisms unless --mechanism narrows it.
"""

from __future__ import annotations

import getpass
import secrets
import sys

from kafka_wire.sasl import SCRAM_MECHANISMS

from ..tool_support import ToolError, add_command_config_argument, client_security
from client import KafkaError, WireClient

DEFAULT_ITERATIONS = 4096


def _data_dir(args) -> str:
    if args.data_dir:
        return args.data_dir
    from broker.config import BrokerConfig

    return BrokerConfig.load(args.config, args.set).log_dirs[0]


def _password(args) -> str:
    if args.password is not None:
        return args.password
    if args.password_stdin:
        return sys.stdin.readline().rstrip("\r\n")
    first = getpass.getpass(f"Password for {args.name}: ")
    if first != getpass.getpass("Again: "):
        raise ValueError("the passwords differ")
    return first


def _mechanisms(args) -> list:
    names = args.mechanism or list(SCRAM_MECHANISMS)
    unknown = [n for n in names if n not in SCRAM_MECHANISMS]
    if unknown:
        raise ValueError(f"unknown SCRAM mechanism {unknown[0]} (known: {', '.join(SCRAM_MECHANISMS)})")
    return [SCRAM_MECHANISMS[n] for n in names]


def _wire_call(args, api: str, body: dict):
    with WireClient(args.bootstrap_server, security=client_security(args)) as client:
        return client.call(api, 0, body)


def _report_results(results) -> int:
    status = 0
    for result in results:
        if result.error_code:
            from kafka_wire.errors import ErrorCode

            print(f"Error for user {result.user}: {ErrorCode.from_code(result.error_code).name}: "
                  f"{result.error_message}", file=sys.stderr)
            status = 1
    return status


def add(args) -> int:
    password = _password(args)
    if not password:
        raise ValueError("the password must not be empty")
    mechanisms = _mechanisms(args)
    if args.bootstrap_server:
        upsertions = []
        for m in mechanisms:
            salt = secrets.token_bytes(32)
            upsertions.append({"name": args.name, "mechanism": m.wire_type, "iterations": args.iterations,
                               "salt": salt, "salted_password": m.salted_password(password, salt, args.iterations)})
        # One user per request: Kafka refuses to alter a user twice in one request.
        status = 0
        for upsertion in upsertions:
            response = _wire_call(args, "AlterUserScramCredentials", {"deletions": [], "upsertions": [upsertion]})
            status |= _report_results(response.results)
        if status == 0:
            print(f"Set {', '.join(m.name for m in mechanisms)} credentials for user {args.name}")
        return status
    from broker.security.credentials import CredentialStore

    store = CredentialStore(_data_dir(args))
    for m in mechanisms:
        if not m.min_iterations <= args.iterations <= m.max_iterations:
            raise ValueError(f"--iterations must be between {m.min_iterations} and {m.max_iterations}")
        store.set_password(args.name, password, m, args.iterations)
    print(f"Set {', '.join(m.name for m in mechanisms)} credentials for user {args.name} in {store.path}")
    return 0


def delete(args) -> int:
    mechanisms = _mechanisms(args)
    if args.bootstrap_server:
        if not args.mechanism:
            # Only the credentials the user has: deleting a missing one is RESOURCE_NOT_FOUND.
            described = _wire_call(args, "DescribeUserScramCredentials", {"users": [{"name": args.name}]})
            if described.error_code or described.results[0].error_code:
                return _report_results(described.results) or 1
            has = {c.mechanism for c in described.results[0].credential_infos}
            mechanisms = [m for m in mechanisms if m.wire_type in has]
        status = 0
        for m in mechanisms:
            response = _wire_call(args, "AlterUserScramCredentials",
                                  {"deletions": [{"name": args.name, "mechanism": m.wire_type}], "upsertions": []})
            status |= _report_results(response.results)
        return status
    from broker.security.credentials import CredentialStore

    store = CredentialStore(_data_dir(args))
    removed = [m.name for m in mechanisms if store.delete(args.name, m)]
    if not removed:
        print(f"Error: user {args.name} has no {' or '.join(m.name for m in mechanisms)} credentials",
              file=sys.stderr)
        return 1
    print(f"Deleted {', '.join(removed)} credentials of user {args.name}")
    return 0


def list_users(args) -> int:
    if args.bootstrap_server:
        response = _wire_call(args, "DescribeUserScramCredentials", {"users": None})
        if response.error_code:
            from kafka_wire.errors import ErrorCode

            print(f"Error: {ErrorCode.from_code(response.error_code).name}: {response.error_message}",
                  file=sys.stderr)
            return 1
        by_type = {m.wire_type: m.name for m in SCRAM_MECHANISMS.values()}
        users = {r.user: {by_type.get(c.mechanism, str(c.mechanism)): c.iterations for c in r.credential_infos}
                 for r in response.results if not r.error_code}
    else:
        from broker.security.credentials import CredentialStore

        users = CredentialStore(_data_dir(args)).users()
    for user, mechanisms in sorted(users.items()):
        described = ", ".join(f"{name}=[iterations={iterations}]" for name, iterations in mechanisms.items())
        print(f"SCRAM credential configs for user-principal '{user}' are {described}")
    return 0


def _run(action):
    def run(args) -> int:
        try:
            return action(args)
        except (ValueError, OSError, KafkaError, ToolError) as error:
            print(f"Error: {error}", file=sys.stderr)
            return 1

    return run


def register(subparsers) -> None:
    parser = subparsers.add_parser("users", help="manage SCRAM users (credential store or over the wire)")
    actions = parser.add_subparsers(dest="action", required=True)

    def common(sub) -> None:
        where = sub.add_mutually_exclusive_group()
        where.add_argument("--data-dir", help="the broker's data directory (its first log.dirs entry)")
        where.add_argument("--config", help="the broker's server.properties (its log.dirs is used)")
        where.add_argument("--bootstrap-server", metavar="HOST:PORT",
                           help="change a running broker over the wire (AlterUserScramCredentials)")
        add_command_config_argument(sub)
        sub.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                         help="broker property overrides, e.g. --set log.dirs=/data (with --config or alone)")

    add_parser = actions.add_parser("add", help="create or replace a user's credentials")
    add_parser.add_argument("name")
    secret = add_parser.add_mutually_exclusive_group()
    secret.add_argument("--password", help="the password (visible in the process list: prefer the prompt)")
    secret.add_argument("--password-stdin", action="store_true", help="read the password from stdin")
    add_parser.add_argument("--mechanism", action="append", choices=sorted(SCRAM_MECHANISMS),
                            help="SCRAM mechanism (repeatable; default: all)")
    add_parser.add_argument("--iterations", type=int, default=DEFAULT_ITERATIONS,
                            help=f"PBKDF2 iterations (default {DEFAULT_ITERATIONS})")
    common(add_parser)
    add_parser.set_defaults(func=_run(add))

    delete_parser = actions.add_parser("delete", help="remove a user's credentials")
    delete_parser.add_argument("name")
    delete_parser.add_argument("--mechanism", action="append", choices=sorted(SCRAM_MECHANISMS),
                               help="SCRAM mechanism (repeatable; default: all)")
    common(delete_parser)
    delete_parser.set_defaults(func=_run(delete))

    list_parser = actions.add_parser("list", help="list users and their SCRAM mechanisms")
    common(list_parser)
    list_parser.set_defaults(func=_run(list_users))
