#!/usr/bin/env node
'use strict';
// testbed-crypto: the Node.js implementation of workloads/crypto/CONTRACT.md.

const crypto = require('node:crypto');
const fs = require('node:fs');
const A = require('./algs');

class Fail extends Error {
  constructor(code, message) {
    super(message);
    this.code = code;
  }
}

const USAGE = 'usage: main.js info | check --vectors FILE | run --alg NAME [--key-bits N] [--op OP] '
  + '(--payload-bytes N | --input FILE | --stream FILE) [--chunk-bytes N] --iterations N [--warmup N] [--warmup-s S] [--tolerance F] --vectors FILE';

function library() {
  const tf = require('twofish-ts/package.json').version;
  return `node:crypto (OpenSSL ${process.versions.openssl}) + twofish-ts ${tf}`;
}

function parseFlags(args) {
  const out = {};
  for (let i = 0; i < args.length; i++) {
    if (args[i] === '-h' || args[i] === '--help') {
      process.stderr.write(`${USAGE}\n`);
      process.exit(0);
    }
    if (!args[i].startsWith('--') || i + 1 >= args.length) throw new Fail(2, `expected --flag value, got ${args[i]}`);
    out[args[i].slice(2)] = args[++i];
  }
  return out;
}

function intFlag(flags, name, dflt) {
  if (flags[name] === undefined) {
    if (dflt === undefined) throw new Fail(2, `--${name} is required`);
    return dflt;
  }
  if (!/^-?\d+$/.test(flags[name])) throw new Fail(2, `--${name} must be an integer, got ${flags[name]}`);
  return Number(flags[name]);
}

function loadVectors(path) {
  if (!path) throw new Fail(2, '--vectors is required');
  return JSON.parse(fs.readFileSync(path, 'utf8')).vectors;
}

const hx = (v, k) => Buffer.from(v[k], 'hex');

function checkOne(v, produced) {
  const p = [];
  const a = A.ALGS[v.alg];
  if (!a) return [`unknown alg ${v.alg}`];
  if (a.kind === 'cipher') {
    const [key, iv, pt, ct] = [hx(v, 'key'), hx(v, 'iv'), hx(v, 'plaintext'), hx(v, 'ciphertext')];
    let got;
    if (v.chunk_bytes) {
      const parts = [];
      let off = 0;
      const read = (buf) => {
        const n = pt.copy(buf, 0, off, Math.min(pt.length, off + buf.length));
        off += n;
        return n;
      };
      A.streamEncrypt(v.alg, key, iv, read, v.chunk_bytes, (b) => parts.push(Buffer.from(b)));
      got = Buffer.concat(parts);
    } else {
      got = A.encrypt(v.alg, key, iv, pt);
      let back = null;
      try {
        back = A.decrypt(v.alg, key, iv, ct);
      } catch (err) {
        p.push(`decryption failed: ${err.message}`);
      }
      if (back && !back.equals(pt)) p.push('decryption differs');
    }
    if (!got.equals(ct)) p.push(`ciphertext differs: got ${got.toString('hex').slice(0, 32)}...`);
  } else if (a.kind === 'mac') {
    if (!A.mac(v.alg, hx(v, 'key'), hx(v, 'message')).equals(hx(v, 'mac'))) p.push('mac differs');
  } else if (a.kind === 'sign') {
    const sk = A.privateKey(hx(v, 'private_key'));
    const pk = A.publicKey(hx(v, 'public_key'));
    const msg = hx(v, 'message');
    const sig = hx(v, 'signature');
    if (!A.verify(v.alg, pk, msg, sig)) p.push('given signature does not verify');
    if (A.verify(v.alg, pk, Buffer.concat([msg, Buffer.from('x')]), sig)) p.push('signature verifies a different message');
    const own = A.sign(v.alg, sk, msg);
    if (!A.verify(v.alg, pk, msg, own)) p.push('own signature does not verify');
    produced.signature = own.toString('hex');
  } else {
    const sk = A.privateKey(hx(v, 'private_key'));
    const pk = A.publicKey(hx(v, 'public_key'));
    const dataKey = hx(v, 'data_key');
    if (!A.unwrap(sk, hx(v, 'wrapped_key')).equals(dataKey)) p.push('unwrapped data key differs');
    if (!A.encrypt('aes-gcm', dataKey, hx(v, 'iv'), hx(v, 'plaintext')).equals(hx(v, 'ciphertext'))) {
      p.push('payload ciphertext differs');
    }
    const own = A.wrap(pk, dataKey);
    if (!A.unwrap(sk, own).equals(dataKey)) p.push('own wrapped key does not unwrap');
    produced.wrapped_key = own.toString('hex');
  }
  return p;
}

function check(vectors, only) {
  const results = [];
  const unsupported = [];
  for (const v of vectors) {
    if (only && v.alg !== only) continue;
    // an algorithm of the contract this program does not do (rsa-raw: Python only) is unsupported
    const reason = A.ALGS[v.alg] ? A.unsupportedReason(v.alg) : `${v.alg} is not implemented in Node.js`;
    if (reason) {
      unsupported.push({ id: v.id, reason });
      continue;
    }
    const produced = {};
    let problems;
    try {
      problems = checkOne(v, produced);
    } catch (err) {
      problems = [`${err.name}: ${err.message}`];
    }
    results.push({ id: v.id, ok: problems.length === 0, error: problems.length ? problems.join('; ') : null, produced });
  }
  const passed = results.filter((r) => r.ok).length;
  return { language: 'node', results, passed, failed: results.length - passed, unsupported };
}

/** The IV of operation `n`: GCM and CTR write prefix || counter into `into` (reused: the cipher
 * copies it), the other modes draw a random one. */
function ivFor(name, prefix, block, n, into) {
  if (name === 'aes-gcm' || name === 'aes-ctr') {
    const iv = into || Buffer.alloc(name === 'aes-gcm' ? 12 : 16);
    prefix.copy(iv, 0);
    iv.writeUInt32BE(n >>> 0, 8);
    return iv;
  }
  return crypto.randomBytes(block);
}

function fileReader(path, fn) {
  const fd = fs.openSync(path, 'r');
  try {
    return fn((buf) => {
      let n = 0;
      while (n < buf.length) {
        const k = fs.readSync(fd, buf, n, buf.length - n, null);
        if (k === 0) break;
        n += k;
      }
      return n;
    });
  } finally {
    fs.closeSync(fd);
  }
}

function makeOp(name, a, op, keyBits, payload, stream, chunk, vectors) {
  const key = crypto.randomBytes(keyBits / 8);
  const prefix = crypto.randomBytes(8);
  const none = () => {};
  let sk = null;
  let pk = null;
  if (a.kind === 'sign' || a.kind === 'hybrid') {
    const v = vectors.find((x) => x.alg === name && (x.key_bits === undefined || x.key_bits === keyBits));
    if (!v) throw new Fail(2, `no vector with a ${keyBits}-bit key for ${name}`);
    sk = A.privateKey(hx(v, 'private_key'));
    pk = A.publicKey(hx(v, 'public_key'));
  }
  if (a.kind === 'cipher') {
    if (stream) return () => fileReader(stream, (read) => A.streamEncrypt(name, key, crypto.randomBytes(a.block), read, chunk, none));
    // the library's calls only: the output pieces are not joined, GCM and CTR reuse one IV buffer
    const iv = Buffer.alloc(name === 'aes-gcm' ? 12 : 16);
    if (op === 'encrypt') return (n) => A.encryptParts(name, key, ivFor(name, prefix, a.block, n, iv), payload);
    const iv0 = ivFor(name, prefix, a.block, 0);
    const ct = A.encrypt(name, key, iv0, payload);
    return () => A.decryptParts(name, key, iv0, ct);
  }
  if (a.kind === 'mac') {
    if (stream) {
      return () => fileReader(stream, (read) => {
        const h = crypto.createHmac(A.hashOf(name), key);
        const buf = Buffer.alloc(chunk);
        for (let n = read(buf); n > 0; n = read(buf)) h.update(buf.subarray(0, n));
        return h.digest();
      });
    }
    return () => A.mac(name, key, payload);
  }
  if (a.kind === 'sign') {
    if (stream) throw new Fail(2, 'ecdsa takes --payload-bytes or --input, not --stream');
    if (op === 'sign') return () => A.sign(name, sk, payload);
    const sig = A.sign(name, sk, payload);
    return () => {
      if (!A.verify(name, pk, payload, sig)) throw new Fail(3, 'own signature failed to verify');
    };
  }
  if (stream) {
    return () => {
      const dataKey = crypto.randomBytes(32);
      A.wrap(pk, dataKey);
      fileReader(stream, (read) => A.streamEncrypt('aes-gcm', dataKey, crypto.randomBytes(12), read, chunk, none));
    };
  }
  if (op === 'encrypt') return () => A.hybridEncrypt(pk, payload);
  const blob = A.hybridEncrypt(pk, payload);
  return () => A.hybridDecrypt(sk, keyBits / 8, blob);
}

/** One GCM message per operation, streamed through one cipher object `update` bytes at a time. */
function bulkGcm(keyBits, payload, update) {
  const key = crypto.randomBytes(keyBits / 8);
  const nonce = Buffer.alloc(12);
  crypto.randomBytes(8).copy(nonce);
  return (n) => {
    nonce.writeUInt32BE(n >>> 0, 8);
    const c = crypto.createCipheriv(`aes-${keyBits}-gcm`, key, nonce);
    for (let off = 0; off < payload.length; off += update) c.update(payload.subarray(off, off + update));
    c.final();
    return c.getAuthTag();
  };
}

function floatFlag(flags, name, dflt) {
  const v = flags[name] === undefined ? dflt : Number(flags[name]);
  if (!Number.isFinite(v) || v < 0 || (name === 'tolerance' && (v <= 0 || v >= 1))) {
    throw new Fail(2, `--${name}: a number (warmup-s >= 0, tolerance in (0, 1)), got ${flags[name]}`);
  }
  return v;
}

/** Time-based warm-up (CONTRACT.md): batches of >= 10 ms until 3 successive per-op means agree. */
function steadyWarmup(doOp, first, seconds, tolerance) {
  if (seconds <= 0) return { ops: 0, ns: 0, steady: null, batches: [] };
  const clock = process.hrtime.bigint;
  const start = clock();
  const limit = BigInt(Math.round(seconds * 1e9));
  const batch = limit / 50n > 10000000n ? limit / 50n : 10000000n;
  let n = first;
  let size = 1;
  const means = [];
  for (;;) {
    const t = clock();
    for (let i = 0; i < size; i++) doOp(n++);
    const took = clock() - t;
    if (took < batch) {
      size *= 2;
      continue;
    }
    means.push(Number(took) / size);
    const last = means.slice(-3).sort((x, y) => x - y);
    const now = clock();
    // at least half of the time (JIT tiers), then 3 agreeing batches
    const ok = last.length === 3 && last[2] - last[0] <= tolerance * last[1] && now - start >= limit / 2n;
    if (ok || now - start >= limit) return { ops: n - first, ns: Number(now - start), steady: ok, batches: means.map(Math.round) };
  }
}

function run(flags) {
  const name = flags.alg;
  const a = A.ALGS[name];
  if (!a) throw new Fail(2, `unknown or missing --alg ${name}`);
  const reason = A.unsupportedReason(name);
  if (reason) throw new Fail(4, reason);
  const keyBits = intFlag(flags, 'key-bits', a.keyBits[0]);
  if (!a.keyBits.includes(keyBits)) throw new Fail(2, `${name} takes key_bits ${a.keyBits}, got ${keyBits}`);
  const op = flags.op || a.ops[0];
  if (!a.ops.includes(op)) throw new Fail(2, `${name} takes op ${a.ops}, got ${op}`);
  const iterations = intFlag(flags, 'iterations');
  let warmup = intFlag(flags, 'warmup', 0);
  const chunk = intFlag(flags, 'chunk-bytes', 1 << 20);
  if (iterations < 1 || warmup < 0 || chunk < 16 || chunk % 16) {
    throw new Fail(2, 'iterations >= 1, warmup >= 0, chunk_bytes a positive multiple of 16');
  }
  const given = ['payload-bytes', 'input', 'stream'].filter((k) => flags[k] !== undefined);
  if (given.length !== 1) throw new Fail(2, 'give exactly one of --payload-bytes, --input, --stream');
  let payload = null;
  let size;
  const stream = flags.stream || null;
  if (given[0] === 'payload-bytes') {
    payload = crypto.randomBytes(intFlag(flags, 'payload-bytes'));
    size = payload.length;
  } else if (given[0] === 'input') {
    payload = fs.readFileSync(flags.input);
    size = payload.length;
  } else {
    if (op !== 'encrypt' && op !== 'mac') throw new Fail(2, '--stream takes op encrypt or mac');
    size = fs.statSync(stream).size;
  }
  const vectors = loadVectors(flags.vectors);
  const report = check(vectors, name);
  if (report.failed > 0 || report.results.length === 0) {
    const bad = report.results.find((r) => !r.ok);
    throw new Fail(3, `vector check failed before timing: ${bad ? `${bad.id}: ${bad.error}` : 'no vector for this algorithm'}`);
  }
  const update = intFlag(flags, 'update-bytes', 0);
  if (update > 0 && (name !== 'aes-gcm' || op !== 'encrypt' || !payload || update % 16)) {
    throw new Fail(2, 'update-bytes: aes-gcm encrypt of an in-memory payload, a multiple of 16');
  }
  const doOp = update > 0 ? bulkGcm(keyBits, payload, update) : makeOp(name, a, op, keyBits, payload, stream, chunk, vectors);
  const clock = process.hrtime.bigint;
  const t0 = clock();
  doOp(0);
  const cold = Number(clock() - t0);
  for (let i = 0; i < warmup; i++) doOp(1 + i);
  const st = steadyWarmup(doOp, 1 + warmup, floatFlag(flags, 'warmup-s', 0), floatFlag(flags, 'tolerance', 0.05));
  warmup += st.ops;
  const times = [];
  const w0 = clock(); // the wall window encloses the CPU window
  const c0 = process.cpuUsage();
  for (let i = 0; i < iterations; i++) {
    const t = clock();
    doOp(1 + warmup + i);
    times.push(Number(clock() - t));
  }
  const c1 = process.cpuUsage(c0);
  const wall = Number(clock() - w0);
  const total = process.cpuUsage();
  return {
    contract: 2, language: 'node', runtime: `node ${process.version}`, library: library(),
    alg: name, key_bits: keyBits, op, mode: a.mode, padding: a.padding,
    payload_bytes: size, input: stream ? 'stream' : 'memory', update_bytes: update, iterations, warmup,
    vectors: { checked: report.results.length, passed: report.passed },
    cold_ns: cold, times_ns: times, wall_ns: wall,
    warmup_ns: st.ns, steady: st.steady, warmup_batches_ns: st.batches,
    cpu_user_ns: c1.user * 1000, cpu_sys_ns: c1.system * 1000, cpu_ns: (c1.user + c1.system) * 1000,
    process_cpu_ns: (total.user + total.system) * 1000,
  };
}

function main(argv) {
  let out;
  let code = 0;
  try {
    const [cmd, ...rest] = argv;
    if (cmd === '-h' || cmd === '--help') {
      process.stderr.write(`${USAGE}\n`);
      return 0;
    }
    const flags = parseFlags(rest);
    if (cmd === 'info') {
      const names = Object.keys(A.ALGS);
      const unsupported = {};
      for (const n of names) {
        const r = A.unsupportedReason(n);
        if (r) unsupported[n] = r;
      }
      out = {
        language: 'node', runtime: `node ${process.version}`, library: library(),
        algorithms: names.filter((n) => !unsupported[n]), unsupported,
      };
    } else if (cmd === 'check') {
      out = check(loadVectors(flags.vectors), null);
      code = out.failed > 0 ? 3 : 0;
    } else if (cmd === 'run') {
      out = run(flags);
    } else {
      throw new Fail(2, 'missing or unknown subcommand: info, check or run');
    }
  } catch (err) {
    out = { error: err instanceof Fail ? err.message : `${err.name}: ${err.message}` };
    code = err instanceof Fail ? err.code : 1;
  }
  process.stdout.write(`${JSON.stringify(out)}\n`);
  return code;
}

process.exitCode = main(process.argv.slice(2));
