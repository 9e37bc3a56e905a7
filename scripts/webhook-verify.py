#!/usr/bin/env python3
"""Verifies one webhook delivery with the Standard Webhooks reference library
(`pip install standardwebhooks`), independently of the service's own code.

Input: the body on stdin; the headers as a JSON object in WEBHOOK_HEADERS
(webhook-id, webhook-timestamp, webhook-signature); the job's secret
(whsec_...) in WEBHOOK_SECRET. Exit 0 when the delivery verifies (and the
body is a board.changed event), 1 when it does not, 2 on bad input.

tests/it/watch.rs hands every delivery it receives to this script when
SBAPI_WEBHOOK_VERIFY_PYTHON names a Python with the library (.ci/run).
"""
import json
import os
import sys

from standardwebhooks.webhooks import Webhook, WebhookVerificationError


def main() -> int:
    secret = os.environ.get("WEBHOOK_SECRET", "")
    try:
        headers = json.loads(os.environ.get("WEBHOOK_HEADERS", ""))
    except ValueError:
        print("WEBHOOK_HEADERS is not JSON", file=sys.stderr)
        return 2
    body = sys.stdin.buffer.read()
    try:
        payload = Webhook(secret).verify(body, headers)
    except WebhookVerificationError as e:
        print(f"not verified: {e}", file=sys.stderr)
        return 1
    if not isinstance(payload, dict) or payload.get("type") != "board.changed":
        print(f"verified, but not a board.changed event: {payload!r}", file=sys.stderr)
        return 1
    print(f"verified {headers.get('webhook-id')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
