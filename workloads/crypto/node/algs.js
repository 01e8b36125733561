'use strict';
// The algorithms of CONTRACT.md on node:crypto (OpenSSL); Twofish from the twofish-ts package.

const crypto = require('node:crypto');
const twofish = require('twofish-ts');

const CIPHER_OPS = ['encrypt', 'decrypt'];
const ALGS = {
  'aes-gcm': { kind: 'cipher', keyBits: [128, 192, 256], ops: CIPHER_OPS, mode: 'GCM, 96-bit nonce, 128-bit tag', padding: 'none', block: 16 },
  'aes-ctr': { kind: 'cipher', keyBits: [128, 192, 256], ops: CIPHER_OPS, mode: 'CTR, 128-bit counter', padding: 'none', block: 16 },
  'aes-cbc': { kind: 'cipher', keyBits: [128, 192, 256], ops: CIPHER_OPS, mode: 'CBC', padding: 'PKCS#7', block: 16 },
  '3des-cbc': { kind: 'cipher', keyBits: [192, 128], ops: CIPHER_OPS, mode: 'EDE (192: 3 keys; 128: 2 keys, K1 K2 K1), CBC', padding: 'PKCS#7', block: 8 },
  'cast128-cbc': { kind: 'cipher', keyBits: [128], ops: CIPHER_OPS, mode: 'CBC', padding: 'PKCS#7', block: 8 },
  'blowfish-cbc': { kind: 'cipher', keyBits: [128, 256, 448, 64], ops: CIPHER_OPS, mode: 'CBC', padding: 'PKCS#7', block: 8 },
  'twofish-cbc': { kind: 'cipher', keyBits: [128, 192, 256], ops: CIPHER_OPS, mode: 'CBC', padding: 'PKCS#7', block: 16 },
  'hmac-sha256': { kind: 'mac', keyBits: [256], ops: ['mac'], mode: 'HMAC', padding: 'none', block: 0 },
  'hmac-sha384': { kind: 'mac', keyBits: [384], ops: ['mac'], mode: 'HMAC', padding: 'none', block: 0 },
  'ecdsa-p256': { kind: 'sign', keyBits: [256], ops: ['sign', 'verify'], mode: 'ECDSA with SHA-256, DER signature', padding: 'none', block: 0 },
  'ecdsa-p384': { kind: 'sign', keyBits: [384], ops: ['sign', 'verify'], mode: 'ECDSA with SHA-384, DER signature', padding: 'none', block: 0 },
  'rsa-oaep': {
    kind: 'hybrid', keyBits: [2048, 3072, 4096], ops: CIPHER_OPS,
    mode: 'RSA-OAEP(SHA-256, MGF1-SHA-256) wraps a 256-bit key; AES-256-GCM payload', padding: 'OAEP', block: 0,
  },
};

class Unsupported extends Error {}

/** OpenSSL cipher name of an algorithm and key size (Twofish is not in OpenSSL). */
function opensslName(name, keyBits) {
  switch (name) {
    case 'aes-gcm': return `aes-${keyBits}-gcm`;
    case 'aes-ctr': return `aes-${keyBits}-ctr`;
    case 'aes-cbc': return `aes-${keyBits}-cbc`;
    case '3des-cbc': return keyBits === 128 ? 'des-ede-cbc' : 'des-ede3-cbc';
    case 'cast128-cbc': return 'cast5-cbc';
    case 'blowfish-cbc': return 'bf-cbc';
    default: return null;
  }
}

/** Why this process cannot do an algorithm, or null. */
function unsupportedReason(name) {
  const ossl = opensslName(name, 128);
  if (ossl && !crypto.getCiphers().includes(ossl)) {
    return `${ossl} is not available in this Node's OpenSSL (run node with --openssl-legacy-provider)`;
  }
  if (ossl && (name === 'cast128-cbc' || name === 'blowfish-cbc')) {
    try {
      crypto.createCipheriv(ossl, Buffer.alloc(16), Buffer.alloc(8));
    } catch (err) {
      return `${ossl} needs the OpenSSL legacy provider (node --openssl-legacy-provider): ${err.message}`;
    }
  }
  return null;
}

function pkcs7(data, block) {
  const pad = block - (data.length % block);
  return Buffer.concat([data, Buffer.alloc(pad, pad)]);
}

/** Twofish CBC over the block function of twofish-ts; state carried in `prev`. */
class TwofishCbc {
  constructor(key, iv) {
    this.session = twofish.makeSession(new Uint8Array(key));
    this.prev = Buffer.from(iv);
  }

  encryptBlocks(data) {
    const out = Buffer.alloc(data.length);
    const x = Buffer.alloc(16);
    for (let off = 0; off < data.length; off += 16) {
      for (let i = 0; i < 16; i++) x[i] = data[off + i] ^ this.prev[i];
      twofish.encrypt(x, 0, out, off, this.session);
      this.prev = out.subarray(off, off + 16);
    }
    return out;
  }

  decryptBlocks(data) {
    const out = Buffer.alloc(data.length);
    for (let off = 0; off < data.length; off += 16) {
      twofish.decrypt(data, off, out, off, this.session);
      for (let i = 0; i < 16; i++) out[off + i] ^= this.prev[i];
      this.prev = data.subarray(off, off + 16);
    }
    return out;
  }
}

function unpad(out, block) {
  const pad = out.length ? out[out.length - 1] : 0;
  if (pad === 0 || pad > block || out.length % block !== 0) throw new Error('bad padding');
  for (let i = out.length - pad; i < out.length; i++) if (out[i] !== pad) throw new Error('bad padding');
  return out.subarray(0, out.length - pad);
}

/**
 * The library's output pieces of one encryption (update, final, and GCM's tag), not joined: what
 * a timed operation does (the reference does the same calls), so the harness adds no copy of its
 * own. `encrypt` joins them into ciphertext (|| tag).
 */
function encryptParts(name, key, iv, pt) {
  if (name === 'twofish-cbc') return [new TwofishCbc(key, iv).encryptBlocks(pkcs7(pt, 16))];
  const c = crypto.createCipheriv(opensslName(name, key.length * 8), key, iv);
  const parts = [c.update(pt), c.final()];
  if (name === 'aes-gcm') parts.push(c.getAuthTag());
  return parts;
}

function encrypt(name, key, iv, pt) {
  const parts = encryptParts(name, key, iv, pt);
  return parts.length === 1 ? parts[0] : Buffer.concat(parts);
}

/** The plaintext's pieces (update, final), not joined; see `encryptParts`. */
function decryptParts(name, key, iv, ct) {
  if (name === 'twofish-cbc') return [unpad(new TwofishCbc(key, iv).decryptBlocks(ct), 16)];
  const d = crypto.createDecipheriv(opensslName(name, key.length * 8), key, iv);
  let body = ct;
  if (name === 'aes-gcm') {
    d.setAuthTag(ct.subarray(ct.length - 16));
    body = ct.subarray(0, ct.length - 16);
  }
  return [d.update(body), d.final()];
}

function decrypt(name, key, iv, ct) {
  const parts = decryptParts(name, key, iv, ct);
  return parts.length === 1 ? parts[0] : Buffer.concat(parts);
}

/** Read `fd` in `chunk` blocks; GCM seals each chunk as its own message (CONTRACT.md). */
function streamEncrypt(name, key, iv, readChunk, chunk, sink) {
  const buf = Buffer.alloc(chunk);
  if (name === 'aes-gcm') {
    const nonce = Buffer.alloc(12);
    iv.copy(nonce, 0, 0, 8);
    for (let i = 0; ; i++) {
      const n = readChunk(buf);
      if (n > 0) {
        nonce.writeUInt32BE(i, 8);
        sink(encrypt(name, key, nonce, buf.subarray(0, n)));
      }
      if (n < chunk) return;
    }
  }
  if (name === 'twofish-cbc') {
    const cbc = new TwofishCbc(key, iv);
    for (;;) {
      const n = readChunk(buf);
      if (n < chunk) {
        sink(cbc.encryptBlocks(pkcs7(buf.subarray(0, n), 16)));
        return;
      }
      sink(cbc.encryptBlocks(buf));
    }
  }
  const c = crypto.createCipheriv(opensslName(name, key.length * 8), key, iv);
  for (;;) {
    const n = readChunk(buf);
    sink(c.update(buf.subarray(0, n)));
    if (n < chunk) {
      sink(c.final());
      return;
    }
  }
}

function hashOf(name) {
  return name.endsWith('384') ? 'sha384' : 'sha256';
}

function mac(name, key, msg) {
  return crypto.createHmac(hashOf(name), key).update(msg).digest();
}

function privateKey(der) {
  return crypto.createPrivateKey({ key: der, format: 'der', type: 'pkcs8' });
}

function publicKey(der) {
  return crypto.createPublicKey({ key: der, format: 'der', type: 'spki' });
}

function sign(name, key, msg) {
  return crypto.sign(hashOf(name), msg, { key, dsaEncoding: 'der' });
}

function verify(name, key, msg, sig) {
  return crypto.verify(hashOf(name), msg, { key, dsaEncoding: 'der' }, sig);
}

const OAEP = { padding: crypto.constants.RSA_PKCS1_OAEP_PADDING, oaepHash: 'sha256' };

function wrap(pub, dataKey) {
  return crypto.publicEncrypt({ key: pub, ...OAEP }, dataKey);
}

function unwrap(priv, wrapped) {
  return crypto.privateDecrypt({ key: priv, ...OAEP }, wrapped);
}

/** Wrapped fresh data key || nonce || AES-256-GCM(payload). */
function hybridEncrypt(pub, pt) {
  const dataKey = crypto.randomBytes(32);
  const nonce = crypto.randomBytes(12);
  return Buffer.concat([wrap(pub, dataKey), nonce, encrypt('aes-gcm', dataKey, nonce, pt)]);
}

function hybridDecrypt(priv, modulusBytes, blob) {
  const dataKey = unwrap(priv, blob.subarray(0, modulusBytes));
  return decrypt('aes-gcm', dataKey, blob.subarray(modulusBytes, modulusBytes + 12), blob.subarray(modulusBytes + 12));
}

module.exports = {
  ALGS, Unsupported, unsupportedReason, encrypt, encryptParts, decrypt, decryptParts, streamEncrypt, mac, privateKey, publicKey, sign, verify,
  wrap, unwrap, hybridEncrypt, hybridDecrypt, hashOf,
};
