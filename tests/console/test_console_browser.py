"""The console in a real browser: Debian's chromium driven by playwright-core (npm), both installed
by scripts/setup-browser.sh. tests/console/browser.js runs a scenario and prints what the page
showed; these tests create the data with a real Kafka client (librdkafka, confluent-kafka) and
check the page against it.

Screenshots for docs/console.md: KW_CONSOLE_SCREENSHOTS=docs .venv/bin/python -m pytest
tests/console/test_console_browser.py (writes docs/console-*.png).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import threading
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, AclBinding, AclOperation, AclPermissionType, ResourcePatternType, \
    ResourceType

from tests.conftest import missing_tool
from tests.console.conftest import (
    PASSWORDS,
    commit_as_group,
    create_topic,
    produce,
    sasl_config,
    share_group_holding_records,
)

pytestmark = pytest.mark.timeout(180)

HERE = Path(__file__).resolve().parent
PLAYWRIGHT_DIR = HERE.parent.parent / ".deps" / "playwright"


@pytest.fixture(scope="session")
def browser_env() -> dict:
    chromium = shutil.which("chromium")
    if not chromium:
        missing_tool("chromium (apt-get install chromium: scripts/setup-browser.sh)")
    if not (PLAYWRIGHT_DIR / "node_modules" / "playwright-core").is_dir() or not shutil.which("node"):
        missing_tool("playwright-core (npm, into .deps/playwright: scripts/setup-browser.sh)")
    return dict(os.environ, KW_CHROMIUM=chromium, KW_PLAYWRIGHT_DIR=str(PLAYWRIGHT_DIR))


def browse(env: dict, scenario: str, **args) -> dict:
    """Run one scenario of browser.js; what the page showed."""
    shots = os.environ.get("KW_CONSOLE_SCREENSHOTS")
    if shots:
        args["screenshots"] = str(Path(shots).resolve())
    done = subprocess.run(["node", str(HERE / "browser.js"), scenario, json.dumps(args)], env=env,
                          capture_output=True, text=True, timeout=150)
    assert done.returncode == 0, f"browser scenario {scenario} failed:\n{done.stderr}"
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result.pop("page_errors") == [], "the page threw"
    return result


def test_pages_render_what_a_client_created(browser_env, writable_console):
    admin = AdminClient({"bootstrap.servers": writable_console.bootstrap})
    create_topic(admin, "browser-orders", 2, {"retention.ms": "3600000"})
    produce(writable_console.bootstrap, "browser-orders",
            [(i % 2, f"order-{i}", json.dumps({"order": i, "total": i * 10}), [("source", b"shop")])
             for i in range(12)])
    commit_as_group(writable_console.bootstrap, "browser-billing", [("browser-orders", 0, 2), ("browser-orders", 1, 5)])

    shown = browse(browser_env, "pages", url=writable_console.url, topic="browser-orders", group="browser-billing")

    assert shown["overview_row"][:3] == ["browser-orders", "2", shown["overview_row"][2]]
    assert shown["overview_row"][2] != "—"  # a size
    assert shown["brokers"] == "1"
    assert shown["topic_title"] == "browser-orders"
    # partition, leader, replicas, isr, start, end, size
    assert [row[:6] for row in shown["partitions"]] == [["0", "1", "1", "1", "0", "6"], ["1", "1", "1", "1", "0", "6"]]
    assert shown["configs"]["retention.ms"] == ["3600000", "DYNAMIC_TOPIC_CONFIG"]
    assert shown["configs"]["cleanup.policy"] == ["delete", "DEFAULT_CONFIG"]
    # Partition 0 holds orders 0, 2, ..., 10 at offsets 0..5; the value shown as indented JSON.
    offsets = [row[0] for row in shown["messages_json"]]
    assert offsets == ["0", "1", "2", "3", "4", "5"]
    first = shown["messages_json"][0]
    assert first[2] == "order-0"
    assert json.loads(first[3]) == {"order": 0, "total": 0} and "\n" in first[3]
    assert first[4] == "source: shop"
    assert shown["messages_hex"][0][2] == " ".join(f"{b:02x}" for b in b"order-0")
    assert shown["read_on"] == ["2", "3"]
    assert shown["tailed"][0] == "6" and shown["tailed"][2:4] == ["tailed", "live"]
    # topic, partition, committed, end offset, lag (partition 0 has the tailed message too)
    assert shown["group_offsets"] == [["browser-orders", "0", "2", "7", "5"], ["browser-orders", "1", "5", "6", "1"]]
    assert shown["group_state"] == "Empty"


def test_a_share_groups_page_shows_its_share_partitions(browser_env, writable_console):
    consumer = share_group_holding_records(writable_console.bootstrap, "browser-share", "browser-share-group")
    try:
        shown = browse(browser_env, "share", url=writable_console.url, group="browser-share-group")
    finally:
        consumer.close()
    assert shown["group_state"] == "Stable"
    assert "Share-partitions" in shown["headings"] and "Committed offsets" not in shown["headings"]
    # topic, partition, start offset, end offset, in flight, lag
    assert shown["share_partitions"] == [["browser-share", "0", "2", "6", "4", "4"]]
    assert shown["reset_form"] == 0  # the consumer groups' reset form is not a share group's


def test_lag_chart_moves_while_a_consumer_lags(browser_env, writable_console):
    bootstrap = writable_console.bootstrap
    create_topic(AdminClient({"bootstrap.servers": bootstrap}), "browser-lagging", 1)
    produce(bootstrap, "browser-lagging", [(0, None, "first", None)])
    # A member that commits once and then stops consuming: its group's lag grows with every write.
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "browser-slow", "enable.auto.commit": False,
                         "auto.offset.reset": "earliest"})
    stop = threading.Event()
    try:
        consumer.subscribe(["browser-lagging"])
        message = None
        while message is None or message.error():
            message = consumer.poll(1)
        consumer.commit(message=message, asynchronous=False)

        def keep_producing():
            producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
            while not stop.is_set():
                producer.produce("browser-lagging", value=b"more")
                producer.flush(10)
                stop.wait(0.3)

        writer = threading.Thread(target=keep_producing, daemon=True)
        writer.start()
        shown = browse(browser_env, "lag", url=writable_console.url, group="browser-slow", topic="browser-lagging",
                       rises=3)
    finally:
        stop.set()
        consumer.close()
    lags = [s["last"] for s in shown["seen"]]
    rises = [b for a, b in zip(lags, lags[1:]) if b > a]
    assert len(rises) >= 3, lags
    assert int(shown["lag_total"]) > 0
    assert shown["rate"].endswith("/s")  # above zero: the scenario waited for it


def test_bad_input_shows_a_clear_message(browser_env, writable_console):
    create_topic(AdminClient({"bootstrap.servers": writable_console.bootstrap}), "browser-small", 1)
    produce(writable_console.bootstrap, "browser-small", [(0, "k", "v", None)] * 3)

    shown = browse(browser_env, "errors", url=writable_console.url, missing="no-such-topic", topic="browser-small",
                   past_end=999)

    assert shown["unknown_topic"] == "UNKNOWN_TOPIC_OR_PARTITION: Topic 'no-such-topic' does not exist"
    assert shown["past_end"] == ("OFFSET_OUT_OF_RANGE: Offset 999 is past the end of browser-small-0: its offsets "
                                 "run from 0 to 2 (log end offset 3)")
    assert shown["bad_timestamp"].startswith("INVALID_REQUEST: Malformed timestamp 'yesterday-ish'")
    # Looking at an unknown topic does not create it (as Metadata with auto-creation off).
    assert "no-such-topic" not in AdminClient({"bootstrap.servers": writable_console.bootstrap}).list_topics(
        timeout=30).topics


def test_login_acls_and_read_only_in_the_browser(browser_env, secure_console):
    admin = AdminClient(sasl_config(secure_console, "admin"))
    for name in ("browser-visible", "browser-hidden"):
        create_topic(admin, name, 1)
    acl = AclBinding(ResourceType.TOPIC, "browser-visible", ResourcePatternType.LITERAL, "User:alice", "*",
                     AclOperation.DESCRIBE, AclPermissionType.ALLOW)
    for future in admin.create_acls([acl]).values():
        future.result(30)

    shown = browse(browser_env, "login", url=secure_console.url, user="alice", password=PASSWORDS["alice"],
                   forbidden="browser-hidden")

    assert shown["mode"] == "read-only"
    assert shown["wrong_password"].startswith("SASL_AUTHENTICATION_FAILED: Authentication failed")
    assert shown["who"].startswith("signed in as alice")
    # Metadata hides what alice may not describe (other tests grant her other topics of this broker).
    assert "browser-visible" in shown["topics"] and "browser-hidden" not in shown["topics"]
    assert shown["create_form"] is False
    assert shown["write"]["status"] == 403 and shown["write"]["body"]["error"] == "READ_ONLY"
    assert shown["forbidden"].startswith("TOPIC_AUTHORIZATION_FAILED")
    assert "made-in-read-only" not in admin.list_topics(timeout=30).topics
