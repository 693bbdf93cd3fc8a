"""What `kafka-wire serve` imports before its listener is up (start-to-ready, issue 17).

Importing the crc32c package reads its version through importlib.metadata (which pulls in email,
zipfile and csv): about a fifth of the broker's CPU until ready. kafka_wire.records imports it on
the first CRC instead; these tests keep it that way and check the CRC is still right.
"""

from __future__ import annotations

import json
import subprocess
import sys

from testing.broker_process import REPO_ROOT

_REPORT_IMPORTS = """
import json, sys
import cli.main, cli.commands.serve, broker.node, broker.server
print(json.dumps(sorted(sys.modules)))
"""


def _modules_imported_by_serve() -> set[str]:
    done = subprocess.run([sys.executable, "-c", _REPORT_IMPORTS], cwd=REPO_ROOT, capture_output=True, text=True,
                          timeout=120, check=True)
    return set(json.loads(done.stdout))


def test_serve_imports_neither_crc32c_nor_importlib_metadata():
    modules = _modules_imported_by_serve()
    assert "broker.handlers.p00_produce" in modules  # the broker's own modules are there
    assert "crc32c" not in modules
    assert "importlib.metadata" not in modules


def test_crc_is_crc32c_on_first_and_later_calls():
    # CRC-32C check value of "123456789" (RFC 3720 appendix B.4).
    done = subprocess.run([sys.executable, "-c", "from kafka_wire import records\n"
                           "print(records.crc32c(b'123456789'), records.crc32c(memoryview(b'123456789')))"],
                          cwd=REPO_ROOT, capture_output=True, text=True, timeout=120, check=True)
    assert done.stdout.split() == [str(0xE3069283)] * 2
