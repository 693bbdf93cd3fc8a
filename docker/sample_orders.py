"""Prints sample orders for the `orders` topic, one `customer|{json}` line each, for
`kafka-wire produce --key-separator '|'` (docker-compose.yml's orders-sample service).

    python docker/sample_orders.py 1000 | kafka-wire produce --bootstrap-server HOST:9092 \\
        --topic orders --key-separator '|'

The shape is what pipelines/orders.py reads: key = customer id, value = {"order_id", "amount_cents"}.
"""

from __future__ import annotations

import json
import sys

CUSTOMERS = 7


def sample_orders(count: int) -> list[str]:
    return [f"customer-{i % CUSTOMERS}|{json.dumps({'order_id': f'o-{i}', 'amount_cents': 100 + (i * 137) % 5000})}"
            for i in range(1, count + 1)]


if __name__ == "__main__":
    print("\n".join(sample_orders(int(sys.argv[1]) if len(sys.argv) > 1 else 100)))
