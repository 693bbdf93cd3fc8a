"""Data contracts as Confluent's Schema Registry defines them: a schema's `ruleSet`, and the metadata
and rule sets a config adds to every schema registered under it.

A rule set is `{"migrationRules": [rule], "domainRules": [rule], "encodingRules": [rule],
"enableAt": env}`; a rule `{"name", "doc", "kind", "mode", "type", "tags", "params", "expr",
"onSuccess", "onFailure", "disabled"}`. It is kept as Confluent keeps it: kind TRANSFORM and mode
WRITEREAD where a rule names none, tags sorted without repeats, params by name, `disabled` always
written, empty lists and absent fields left out; fields Confluent does not know are dropped.

Checks, as Confluent makes them (42210 when one fails): each rule has a name (a letter or `_`
first, then letters, digits, `_` or `-`, at most 256 characters), unique across the rule set, and
a type; migration rules are UPGRADE, DOWNGRADE or UPDOWN; domain and encoding rules WRITE, READ or
WRITEREAD; a comma in onSuccess/onFailure (one action per direction) only with WRITEREAD or UPDOWN.

Merging (registration, lookup): the config's `defaultMetadata` / `defaultRuleSet` under the
schema's own (or, without its own, the subject's latest version's), the config's
`overrideMetadata` / `overrideRuleSet` over both. Metadata merges key by key (tags, properties,
sensitive names); rule sets rule by rule: a rule of the newer set replaces the older set's rule of
the same name, the others stay ahead of it.
"""

from __future__ import annotations

from .guids import CONFLUENT_VERSION, metadata_arg

KINDS = ("TRANSFORM", "CONDITION")
MIGRATION_MODES = ("UPGRADE", "DOWNGRADE", "UPDOWN")
DOMAIN_MODES = ("WRITE", "READ", "WRITEREAD")
MODES = MIGRATION_MODES + DOMAIN_MODES
ENVIRONMENTS = ("ALL", "CLIENT", "GATEWAY", "SERVER", "NONE")
PHASES = ("migrationRules", "domainRules", "encodingRules")
NAME_MAX_LENGTH = 256
_TEXT_FIELDS = ("name", "doc", "kind", "mode", "type")
_ACTION_FIELDS = ("expr", "onSuccess", "onFailure")


class InvalidRuleSet(ValueError):
    """A rule set Confluent's registry refuses (42210), or one it cannot read (422)."""

    def __init__(self, message: str, unreadable: bool = False) -> None:
        super().__init__(message)
        self.unreadable = unreadable


def rule_set_arg(value) -> dict | None:
    """A request's `ruleSet`, read and checked; None where there is none."""
    rule_set = _read(value)
    if rule_set is not None:
        _check(rule_set)
    return rule_set


def stored_rule_set(value) -> dict | None:
    """The rule set of a `_schemas` record (or a config record) as written; None if unreadable."""
    try:
        return _read(value)
    except InvalidRuleSet:
        return None


def _read(value) -> dict | None:
    if value is None:
        return None
    if not isinstance(value, dict):
        raise InvalidRuleSet("ruleSet must be an object", unreadable=True)
    rule_set = {}
    for phase in PHASES:
        rules = value.get(phase)
        if rules is None:
            continue
        if not isinstance(rules, list):
            raise InvalidRuleSet(f"{phase} must be a list of rules", unreadable=True)
        if rules:
            rule_set[phase] = [_rule(rule) for rule in rules]
    enable_at = value.get("enableAt")
    if enable_at is not None:
        if enable_at not in ENVIRONMENTS:
            raise InvalidRuleSet(f"enableAt must be one of {', '.join(ENVIRONMENTS)}", unreadable=True)
        rule_set["enableAt"] = enable_at
    return rule_set


def _rule(value) -> dict:
    if not isinstance(value, dict):
        raise InvalidRuleSet("a rule must be an object", unreadable=True)
    for name in _TEXT_FIELDS + _ACTION_FIELDS:
        if value.get(name) is not None and not isinstance(value[name], str):
            raise InvalidRuleSet(f"rule field {name} must be a string", unreadable=True)
    kind = value.get("kind") or "TRANSFORM"
    mode = value.get("mode") or "WRITEREAD"
    if kind not in KINDS:
        raise InvalidRuleSet(f"rule kind must be one of {', '.join(KINDS)}", unreadable=True)
    if mode not in MODES:
        raise InvalidRuleSet(f"rule mode must be one of {', '.join(MODES)}", unreadable=True)
    tags, params, disabled = value.get("tags"), value.get("params"), value.get("disabled", False)
    if tags is not None and not (isinstance(tags, list) and all(isinstance(t, str) for t in tags)):
        raise InvalidRuleSet("rule tags must be a list of strings", unreadable=True)
    if params is not None and not (isinstance(params, dict) and all(isinstance(v, str) for v in params.values())):
        raise InvalidRuleSet("rule params must map names to strings", unreadable=True)
    if disabled is None:
        disabled = False
    if not isinstance(disabled, bool):
        raise InvalidRuleSet("rule disabled must be true or false", unreadable=True)
    rule = {}
    for name in ("name", "doc"):
        if value.get(name) is not None:
            rule[name] = value[name]
    rule["kind"], rule["mode"] = kind, mode
    if value.get("type") is not None:
        rule["type"] = value["type"]
    if tags:
        rule["tags"] = sorted(set(tags))
    if params:
        rule["params"] = {key: params[key] for key in sorted(params)}
    for name in _ACTION_FIELDS:
        if value.get(name):
            rule[name] = value[name]
    rule["disabled"] = disabled
    return rule


def _check(rule_set: dict) -> None:
    names: set[str] = set()
    for phase in PHASES:
        for rule in rule_set.get(phase, []):
            name = rule.get("name")
            if name in names:
                raise InvalidRuleSet(f"Found rule with duplicate name '{name}'")
            if name is not None:
                names.add(name)
            _check_name(name)
            if rule.get("type") is None:
                raise InvalidRuleSet("Missing rule type")
            for action in (rule.get("onSuccess"), rule.get("onFailure")):
                if action and "," in action and rule["mode"] not in ("WRITEREAD", "UPDOWN"):
                    raise InvalidRuleSet("Multiple actions only valid with WRITEREAD and UPDOWN")
            if phase == "migrationRules" and rule["mode"] not in MIGRATION_MODES:
                raise InvalidRuleSet("Migration rules can only be UPGRADE, DOWNGRADE, UPDOWN")
            if phase != "migrationRules" and rule["mode"] not in DOMAIN_MODES:
                kind = "Domain" if phase == "domainRules" else "Encoding"
                raise InvalidRuleSet(f"{kind} rules can only be WRITE, READ, WRITEREAD")


def _check_name(name: str | None) -> None:
    if name is None:
        raise InvalidRuleSet("Missing rule name")
    if not name:
        raise InvalidRuleSet("Empty rule name")
    if len(name) > NAME_MAX_LENGTH:
        raise InvalidRuleSet("Rule name too long")
    if not (name[0].isalpha() or name[0] == "_"):
        raise InvalidRuleSet(f"Illegal initial character in rule name: {name}")
    if not all(c.isalnum() or c in "_-" for c in name[1:]):
        raise InvalidRuleSet(f"Illegal character in rule name: {name}")


# -- merging ---------------------------------------------------------------------------------------

def merge_metadata(old: dict | None, new: dict | None) -> dict | None:
    """`new` over `old`, key by key (Confluent's Metadata.mergeMetadata)."""
    if old is None:
        return new
    if new is None:
        return old
    tags = {**old.get("tags", {}), **new.get("tags", {})}
    properties = {**old.get("properties", {}), **new.get("properties", {})}
    sensitive = [*old.get("sensitive", []), *new.get("sensitive", [])]
    return metadata_arg({"tags": tags, "properties": properties, "sensitive": sensitive})


def merge_rule_sets(old: dict | None, new: dict | None) -> dict | None:
    """`new` over `old`, rule by rule (Confluent's RuleSet.mergeRuleSets)."""
    if old is None:
        return new
    if new is None:
        return old
    merged = {}
    for phase in PHASES:
        old_rules, new_rules = old.get(phase, []), new.get(phase, [])
        replaced = {rule.get("name") for rule in new_rules}
        rules = [rule for rule in old_rules if rule.get("name") not in replaced] + new_rules if new_rules else old_rules
        if rules:
            merged[phase] = rules
    enable_at = new.get("enableAt", old.get("enableAt"))
    if enable_at is not None:
        merged["enableAt"] = enable_at
    return merged


def with_confluent_version(metadata: dict | None, version: int) -> dict:
    """The metadata with its `confluent:version` property set to `version`."""
    properties = {**(metadata or {}).get("properties", {}), CONFLUENT_VERSION: str(version)}
    return metadata_arg({**(metadata or {}), "properties": properties})


def confluent_version(metadata: dict | None) -> str | None:
    return (metadata or {}).get("properties", {}).get(CONFLUENT_VERSION)

