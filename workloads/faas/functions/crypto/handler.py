"""Run the crypto suite's Python implementation once per call.

Event: the ``run`` spec of workloads/crypto/CONTRACT.md, e.g. ``{"alg": "aes-gcm", "key_bits": 256,
"op": "encrypt", "payload_bytes": 4096, "iterations": 100}``, plus optional ``"key_service": URL``
(or ``true`` for the emulator's stand-in) and ``"key_id"``: the key is fetched over HTTP before the
run, as a function fetching its data key from a KMS would, and the fetch time is returned.
Deploy to a real platform with the ``testbed_crypto`` package (and ``cryptography``) vendored beside.
"""

import hashlib
import json
import os
import sys
import time
import urllib.request

try:
    import testbed_crypto
except ImportError:  # running from the repository: workloads/crypto/python
    sys.path.insert(
        0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "crypto", "python")
    )
    import testbed_crypto


def _fetch_key(url, key_id):
    if not url.startswith(("http://", "https://")):
        raise ValueError(f"key_service must be an http(s) URL, not {url!r}")
    t0 = time.perf_counter()
    with urllib.request.urlopen(f"{url.rstrip('/')}/keys/{key_id}", timeout=10) as resp:  # noqa: S310 - http(s) checked above
        key = bytes.fromhex(json.load(resp)["key_hex"])
    return time.perf_counter() - t0, hashlib.sha256(key).hexdigest()[:16]


def handler(event, context):
    spec = dict(event or {})
    service = spec.pop("key_service", None)
    key_id = str(spec.pop("key_id", "default"))
    out = {}
    if service:
        url = getattr(context, "key_service", "") if service is True else str(service)
        if not url:
            raise ValueError("key_service: true needs an emulator that offers /keys")
        out["key_fetch_s"], out["key_fingerprint"] = _fetch_key(url, key_id)
    out["crypto"] = testbed_crypto.run_spec(spec)
    return out
