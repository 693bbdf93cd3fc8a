"""Schema exporters' definitions (registry/exporters.py): what a request may say and Confluent's error
codes for what it may not, which subjects an exporter takes and where it puts them on the
destination for each contextType, the `_schema_exporters` records replayed, and who may call
/exporters under ACLs."""

from __future__ import annotations

import json

import pytest

from registry.acls import needed
from registry.api import RegistryError
from registry.exporters import (
    PAUSED,
    STARTING,
    Exporter,
    ExportersState,
    ExporterStatus,
    exporter_key,
    parse_exporter,
    state_key,
    state_value,
)

URL = {"schema.registry.url": "http://dest:8081"}


def test_a_minimal_exporter_takes_confluents_defaults():
    exporter = parse_exporter({"name": "e", "config": URL})
    assert exporter.body() == {"name": "e", "subjects": ["*"], "subjectRenameFormat": None, "contextType": "AUTO",
                               "context": None, "config": URL}


@pytest.mark.parametrize("body, code", [
    ({"config": URL}, 40950),
    ({"name": "", "config": URL}, 40950),
    ({"name": 7, "config": URL}, 40950),
    ({"name": "has space", "config": URL}, 40950),
    ({"name": "e"}, 40951),
    ({"name": "e", "config": None}, 40951),
    ({"name": "e", "config": {}}, 40951),
    ({"name": "e", "config": {"schema.registry.url": "dest:8081"}}, 40951),
    ({"name": "e", "config": {"schema.registry.url": "http://a:1,ftp://b"}}, 40951),
    ({"name": "e", "config": {"schema.registry.url": ["http://a:1"]}}, 40951),
    ({"name": "e", "subjects": "orders-value", "config": URL}, 40952),
    ({"name": "e", "subjects": [], "config": URL}, 40952),
    ({"name": "e", "subjects": ["a", ""], "config": URL}, 40952),
    ({"name": "e", "contextType": "LATER", "config": URL}, 422),
    ({"name": "e", "contextType": "CUSTOM", "config": URL}, 422),  # CUSTOM without its context
    ({"name": "e", "context": ":.bad:", "contextType": "CUSTOM", "config": URL}, 422),
    ({"name": "e", "subjectRenameFormat": 3, "config": URL}, 422),
    ([], 422),
])
def test_what_a_creation_may_not_say(body, code):
    with pytest.raises(RegistryError) as caught:
        parse_exporter(body)
    assert caught.value.error_code == code
    assert caught.value.status == (409 if code != 422 else 422)


def test_an_update_changes_what_it_names_only():
    previous = parse_exporter({"name": "e", "subjects": ["a"], "subjectRenameFormat": "x.${subject}", "config": URL})
    updated = parse_exporter({"contextType": "custom", "context": ".c"}, "e", previous)
    assert (updated.subjects, updated.subject_rename_format, updated.context_type, updated.context,
            updated.config) == (["a"], "x.${subject}", "CUSTOM", ".c", URL)
    assert previous.context_type == "AUTO"  # (not changed in place)
    assert parse_exporter({"config": {**URL, "basic.auth.user.info": "u:p"}}, "e", previous).config["basic.auth.user.info"] == "u:p"


@pytest.mark.parametrize("subjects, subject, taken", [
    (["*"], "orders-value", True),
    (["*"], ":.ctx:orders-value", False),  # `*`: the default context's
    ([":*:"], ":.ctx:orders-value", True),
    ([":*:"], "orders-value", True),
    ([":.ctx:*"], ":.ctx:orders-value", True),
    ([":.ctx:*"], "orders-value", False),
    (["orders-*"], "orders-value", True),
    (["orders-*"], "payments-value", False),
    (["orders-value"], "orders-value", True),
    (["orders-value"], "orders-value2", False),
    ([":.ctx:orders-value"], ":.ctx:orders-value", True),
    ([":*:orders-value"], ":.a:orders-value", True),
])
def test_which_subjects_an_exporter_takes(subjects, subject, taken):
    assert Exporter("e", subjects=subjects).matches(subject) is taken


@pytest.mark.parametrize("context_type, context, subject, destination", [
    ("AUTO", None, "orders-value", ":.src:orders-value"),
    ("AUTO", None, ":.team:orders-value", ":.src.team:orders-value"),
    ("CUSTOM", "linked", "orders-value", ":.linked:orders-value"),
    ("CUSTOM", ".linked", ":.team:orders-value", ":.linked.team:orders-value"),
    ("NONE", None, "orders-value", "orders-value"),
    ("NONE", None, ":.team:orders-value", ":.team:orders-value"),
    ("DEFAULT", None, ":.team:orders-value", "orders-value"),
])
def test_where_the_subjects_go(context_type, context, subject, destination):
    exporter = Exporter("e", context_type=context_type, context=context)
    assert exporter.destination_subject(subject, ".src") == destination


def test_subject_rename_format():
    exporter = Exporter("e", subject_rename_format="dc_${subject}", context_type="NONE")
    assert exporter.destination_subject("orders", ".src") == "dc_orders"
    assert exporter.destination_subject(":.team:orders", ".src") == ":.team:dc_orders"


def test_the_records_replay_into_exporters_and_their_progress():
    state = ExportersState()
    exporter = parse_exporter({"name": "e", "subjects": ["a"], "config": URL})
    state.apply(exporter_key("e"), json.dumps(exporter.body()).encode())
    assert state.statuses["e"].state == STARTING and state.statuses["e"].offset == -1
    state.apply(state_key("e"), state_value(ExporterStatus("RUNNING", 41, 1000)))
    assert (state.statuses["e"].state, state.statuses["e"].offset, state.statuses["e"].ts) == (STARTING, 41, 1000)
    state.apply(state_key("e"), state_value(ExporterStatus(PAUSED, 42, 2000)))
    assert state.statuses["e"].state == PAUSED
    assert json.loads(exporter_key("e")) == {"keytype": "EXPORTER", "name": "e", "magic": 0}
    # What it does not understand is skipped, not fatal
    for key, value in ((b"not json", b"{}"), (b'{"keytype":"EXPORTER"}', b"{}"),
                       (exporter_key("bad"), b'{"config": 1}'), (state_key("ghost"), b'{"state":"RUNNING"}'),
                       (None, None)):
        state.apply(key, value)
    assert list(state.exporters) == ["e"] and "ghost" not in state.statuses
    state.apply(exporter_key("e"), None)
    assert state.exporters == {} and state.statuses == {}


def test_exporters_are_a_super_users_under_acls():
    assert needed("GET", ["exporters"]).acl is None
    assert needed("POST", ["exporters"]).operation == "EXPORTER_WRITE"
    assert needed("GET", ["exporters", "e", "status"]).operation == "EXPORTER_READ"
    assert needed("PUT", ["exporters", "e", "pause"]).acl is None
