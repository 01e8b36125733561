// testbed-kms: the key-service part of workloads/crypto/CONTRACT.md in Node.js (@aws-sdk/client-kms).
// Each call to the key service is timed alone (round trip); local AES-256-GCM (node:crypto) apart.
'use strict';
const crypto = require('node:crypto');
const {
  KMSClient, GenerateDataKeyCommand, EncryptCommand, DecryptCommand, SignCommand, VerifyCommand,
  GenerateMacCommand, VerifyMacCommand,
} = require('@aws-sdk/client-kms');
const sdkVersion = require('@aws-sdk/client-kms/package.json').version;

function fail(code, msg) {
  console.log(JSON.stringify({ error: msg }));
  process.exit(code);
}

function parse(argv) {
  if (argv[0] === '-h' || argv[0] === '--help') {
    process.stderr.write('usage: main.js run --endpoint URL --region R --key-id ID --key-spec SPEC --usage USAGE --iterations N --payload-bytes N\n');
    process.exit(0);
  }
  if (argv[0] !== 'run') fail(2, 'missing or unknown subcommand: run');
  const f = { region: 'us-east-1', iterations: '30', 'payload-bytes': '4096' };
  for (let i = 1; i < argv.length; i += 2) {
    if (!argv[i].startsWith('--') || i + 1 >= argv.length) fail(2, `bad argument ${argv[i]}`);
    f[argv[i].slice(2)] = argv[i + 1];
  }
  for (const need of ['endpoint', 'key-id', 'key-spec', 'usage']) if (!f[need]) fail(2, `--${need} is required`);
  return f;
}

class Job {
  constructor(client, f) {
    this.c = client; this.key = f['key-id']; this.spec = f['key-spec'];
    this.payload = crypto.randomBytes(Number(f['payload-bytes']));
    this.prefix = crypto.randomBytes(8); this.t = {};
  }
  add(name, t0) { (this.t[name] ||= []).push(Number(process.hrtime.bigint() - t0)); }
  async timed(name, cmd) { const t0 = process.hrtime.bigint(); const o = await this.c.send(cmd); this.add(name, t0); return o; }

  async envelope(i) {
    let dk; let wrapped; let alg;
    if (this.spec === 'SYMMETRIC_DEFAULT') {
      const o = await this.timed('generate_data_key', new GenerateDataKeyCommand({ KeyId: this.key, KeySpec: 'AES_256' }));
      dk = Buffer.from(o.Plaintext); wrapped = o.CiphertextBlob;
    } else {
      dk = crypto.randomBytes(32); alg = 'RSAES_OAEP_SHA_256';
      const o = await this.timed('encrypt', new EncryptCommand({ KeyId: this.key, Plaintext: dk, EncryptionAlgorithm: alg }));
      wrapped = o.CiphertextBlob;
    }
    const nonce = Buffer.alloc(12); this.prefix.copy(nonce); nonce.writeUInt32BE(i, 8);
    let t0 = process.hrtime.bigint();
    const enc = crypto.createCipheriv('aes-256-gcm', dk, nonce);
    const ct = Buffer.concat([enc.update(this.payload), enc.final()]); const tag = enc.getAuthTag();
    this.add('local_encrypt', t0);
    const o = await this.timed('decrypt', new DecryptCommand({ KeyId: this.key, CiphertextBlob: wrapped, EncryptionAlgorithm: alg }));
    t0 = process.hrtime.bigint();
    const dec = crypto.createDecipheriv('aes-256-gcm', Buffer.from(o.Plaintext), nonce); dec.setAuthTag(tag);
    const back = Buffer.concat([dec.update(ct), dec.final()]);
    this.add('local_decrypt', t0);
    if (!back.equals(this.payload)) fail(1, 'envelope round trip returned a different payload');
  }

  async sign() {
    const alg = { ECC_NIST_P256: 'ECDSA_SHA_256', ECC_NIST_P384: 'ECDSA_SHA_384' }[this.spec] || 'RSASSA_PSS_SHA_256';
    const base = { KeyId: this.key, Message: this.payload, MessageType: 'RAW', SigningAlgorithm: alg };
    const o = await this.timed('sign', new SignCommand(base));
    const v = await this.timed('verify', new VerifyCommand({ ...base, Signature: o.Signature }));
    if (!v.SignatureValid) fail(1, 'key service did not verify its own signature');
  }

  async mac() {
    const base = { KeyId: this.key, Message: this.payload, MacAlgorithm: this.spec === 'HMAC_384' ? 'HMAC_SHA_384' : 'HMAC_SHA_256' };
    const o = await this.timed('generate_mac', new GenerateMacCommand(base));
    const v = await this.timed('verify_mac', new VerifyMacCommand({ ...base, Mac: o.Mac }));
    if (!v.MacValid) fail(1, 'key service did not verify its own MAC');
  }
}

async function main() {
  const f = parse(process.argv.slice(2));
  const t0 = process.hrtime.bigint();
  const client = new KMSClient({
    region: f.region, endpoint: f.endpoint,
    credentials: { accessKeyId: process.env.AWS_ACCESS_KEY_ID || 'testing', secretAccessKey: process.env.AWS_SECRET_ACCESS_KEY || 'testing' },
  });
  const job = new Job(client, f);
  job.add('client_init', t0);
  const n = Number(f.iterations);
  for (let i = 0; i < n; i++) {
    if (f.usage === 'ENCRYPT_DECRYPT') await job.envelope(i);
    else if (f.usage === 'SIGN_VERIFY') await job.sign();
    else if (f.usage === 'GENERATE_VERIFY_MAC') await job.mac();
    else fail(2, `unknown --usage ${f.usage}`);
  }
  console.log(JSON.stringify({
    contract: 1, language: 'node', runtime: `node ${process.version}`,
    library: `@aws-sdk/client-kms ${sdkVersion}; local AES-256-GCM: node:crypto (OpenSSL ${process.versions.openssl})`,
    key_spec: f['key-spec'], usage: f.usage, payload_bytes: job.payload.length, iterations: n, times_ns: job.t,
  }));
}

main().catch((e) => fail(1, `${e.name || 'Error'}: ${e.message}`.split('\n')[0]));
