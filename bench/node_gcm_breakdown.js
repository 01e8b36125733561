// Where a node:crypto AES-256-GCM update of 16 KiB spends its CPU (bench/crypto_throughput.py
// prints it beside openssl speed): the fixed cost of a call (16-byte update), a fresh 16 KiB output
// Buffer (every update() allocates one: Node has no update-into API), and the rest (the cipher).
// Prints JSON: microseconds of CPU per call, median of 3 rounds, and Node's bundled OpenSSL version.
"use strict";
const crypto = require("node:crypto");

const key = crypto.randomBytes(32);
const iv = crypto.randomBytes(12);
const big = crypto.randomBytes(16384);
const small = crypto.randomBytes(16);

function perCall(fn, n) {
  for (let i = 0; i < n / 10; i++) fn();
  const c0 = process.cpuUsage();
  for (let i = 0; i < n; i++) fn();
  const c = process.cpuUsage(c0);
  return (c.user + c.system) / n;
}

const rounds = {};
for (let round = 0; round < 3; round++) {
  const cipher = crypto.createCipheriv("aes-256-gcm", key, iv);
  const r = {
    update_16k_us: perCall(() => cipher.update(big), 20000),
    update_16b_us: perCall(() => cipher.update(small), 200000),
    alloc_16k_us: perCall(() => Buffer.allocUnsafeSlow(16384).fill(0, 0, 1), 200000),
  };
  for (const k of Object.keys(r)) (rounds[k] = rounds[k] || []).push(r[k]);
}
const median = (a) => a.slice().sort((x, y) => x - y)[Math.floor(a.length / 2)];
const out = { openssl: process.versions.openssl };
for (const k of Object.keys(rounds)) out[k] = median(rounds[k]);
console.log(JSON.stringify(out));
