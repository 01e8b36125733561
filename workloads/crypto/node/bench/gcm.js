// Node's own kind of benchmark (the shape of node's benchmark/crypto/aes-gcm-throughput.js) of the
// AES-256-GCM node:crypto calls one operation of testbed-crypto makes in bench/crypto_throughput.py's
// two patterns, without the program around them (its dispatch, nonce bookkeeping and per-operation
// clock reads): the reference the Node harness is held to.
//
//   node workloads/crypto/node/bench/gcm.js [warm-up seconds] [measured seconds]
//
// A time-based warm-up, then measurement iterations of at least 0.5 s each; the figure is the
// process's CPU time (process.cpuUsage: all threads, as the harness's cpu_ns) per operation. Prints
// {"stream": {"bytes", "cpu_ns_per_op", "iterations"}, "messages": {...}, "runtime"}. Buffer sizes:
// GCM_STREAM_BYTES (1 MiB), GCM_UPDATE_BYTES (16 KiB), GCM_MESSAGE_BYTES (16 KiB).
'use strict';
const crypto = require('node:crypto');

const size = (name, dflt) => Number(process.env[name]) || dflt;
const STREAM = size('GCM_STREAM_BYTES', 1 << 20);
const UPDATE = size('GCM_UPDATE_BYTES', 16384);
const MESSAGE = size('GCM_MESSAGE_BYTES', 16384);
const prefix = crypto.randomBytes(8);
const nonce = Buffer.alloc(12);
prefix.copy(nonce);
let sink = 0;

function measure(op, warmS, measureS) {
  const now = () => Number(process.hrtime.bigint()) / 1e9;
  let n = 0;
  for (const end = now() + warmS; now() < end;) op(n++);
  let ops = 0;
  let cpu = 0;
  const stop = now() + measureS;
  do {
    const iterEnd = now() + 0.5;
    const c0 = process.cpuUsage();
    let k = 0;
    while (now() < iterEnd) {
      op(n++);
      k++;
    }
    const c = process.cpuUsage(c0);
    cpu += (c.user + c.system) * 1000;
    ops += k;
  } while (now() < stop);
  return { cpu_ns_per_op: cpu / ops, iterations: ops };
}

// the bulk pattern (--update-bytes): a cipher object per message fed UPDATE bytes per update()
const key = crypto.randomBytes(32);
const payload = crypto.randomBytes(STREAM);
function streamOp(n) {
  nonce.writeUInt32BE(n >>> 0, 8);
  const c = crypto.createCipheriv('aes-256-gcm', key, nonce);
  for (let off = 0; off < STREAM; off += UPDATE) c.update(payload.subarray(off, off + UPDATE));
  c.final();
  sink += c.getAuthTag().length;
}

// the messages pattern: a cipher object per message, update() of the whole message, final, tag
const pt = crypto.randomBytes(MESSAGE);
function messageOp(n) {
  nonce.writeUInt32BE(n >>> 0, 8);
  const c = crypto.createCipheriv('aes-256-gcm', key, nonce);
  sink += c.update(pt).length + c.final().length + c.getAuthTag().length;
}

const warmS = Number(process.argv[2] || 2);
const measureS = Number(process.argv[3] || 3);
const stream = measure(streamOp, warmS, measureS);
const messages = measure(messageOp, warmS, measureS);
console.log(JSON.stringify({
  runtime: `node ${process.version}`,
  stream: { bytes: STREAM, ...stream },
  messages: { bytes: MESSAGE, ...messages },
  sink: sink > 0,
}));
