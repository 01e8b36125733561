"""pyperf's benchmark of the AES-256-GCM library calls one operation of testbed_crypto makes in
bench/crypto_throughput.py's two patterns, without the harness around them (its dispatch, nonce
bookkeeping and per-operation clock reads): the reference the Python harness is held to.

- ``gcm-stream``: one GCM message per operation through one ``Cipher(...).encryptor()``, the payload
  fed ``GCM_UPDATE_BYTES`` (16 KiB) per ``update_into`` into one reused buffer, then ``finalize``
  (testbed_crypto's ``--update-bytes`` path), payload ``GCM_STREAM_BYTES`` (1 MiB);
- ``gcm-messages``: ``AESGCM(key).encrypt(nonce, payload, None)`` per message of
  ``GCM_MESSAGE_BYTES`` (16 KiB): a new context each, as the harness's ``encrypt``.

Timed with ``bench_time_func`` on the process's CPU clock (``time.process_time_ns``: all threads,
as the harness's ``cpu_ns``), so a busy machine does not count; pyperf's worker processes,
calibration and warm-ups as usual. Run: ``python gcm_pyperf.py -o out.json [pyperf options]``.
"""

from __future__ import annotations

import os
import time

import pyperf
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM


def _size(name: str, default: int) -> int:
    return int(os.environ.get(name) or default)


STREAM, UPDATE, MESSAGE = (
    _size("GCM_STREAM_BYTES", 1 << 20),
    _size("GCM_UPDATE_BYTES", 16384),
    _size("GCM_MESSAGE_BYTES", 16384),
)
KEY, PREFIX = os.urandom(32), os.urandom(8)


def stream(loops: int) -> float:
    payload = memoryview(os.urandom(STREAM))
    out = bytearray(UPDATE + 15)
    key, prefix, clock = KEY, PREFIX, time.process_time_ns
    t0 = clock()
    for n in range(loops):
        enc = Cipher(algorithms.AES(key), modes.GCM(prefix + n.to_bytes(4, "big"))).encryptor()
        for off in range(0, STREAM, UPDATE):
            enc.update_into(payload[off : off + UPDATE], out)
        enc.finalize()
    return (clock() - t0) / 1e9


def messages(loops: int) -> float:
    payload = os.urandom(MESSAGE)
    key, prefix, clock = KEY, PREFIX, time.process_time_ns
    t0 = clock()
    for n in range(loops):
        AESGCM(key).encrypt(prefix + n.to_bytes(4, "big"), payload, None)
    return (clock() - t0) / 1e9


if __name__ == "__main__":
    runner = pyperf.Runner()
    runner.metadata["description"] = "AES-256-GCM library calls of testbed_crypto (CPU time)"
    runner.bench_time_func("gcm-stream", stream, metadata={"payload_bytes": STREAM})
    runner.bench_time_func("gcm-messages", messages, metadata={"payload_bytes": MESSAGE})
