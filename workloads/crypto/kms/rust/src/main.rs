//! testbed-kms: the key-service part of workloads/crypto/CONTRACT.md in Rust (aws-sdk-kms).
//! Each call to the key service is timed alone (round trip); local AES-256-GCM apart.

use aws_sdk_kms::config::{BehaviorVersion, Credentials, Region};
use aws_sdk_kms::primitives::Blob;
use aws_smithy_http_client::tls::{rustls_provider::CryptoMode, Provider};
use aws_smithy_http_client::Builder;
use aws_sdk_kms::types::{DataKeySpec, EncryptionAlgorithmSpec, MacAlgorithmSpec, MessageType, SigningAlgorithmSpec};
use ring::aead::{Aad, LessSafeKey, Nonce, UnboundKey, AES_256_GCM};
use ring::rand::{SecureRandom, SystemRandom};
use serde_json::{json, Map, Value};
use std::collections::HashMap;
use std::time::Instant;

type Res<T> = Result<T, String>;

struct Timings(Map<String, Value>);

impl Timings {
    fn add(&mut self, name: &str, t0: Instant) {
        let ns = t0.elapsed().as_nanos() as u64;
        let list = self.0.entry(name.to_string()).or_insert_with(|| json!([]));
        list.as_array_mut().expect("list").push(json!(ns));
    }
}

fn flags() -> Res<HashMap<String, String>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.iter().any(|a| a == "-h" || a == "--help") {
        eprintln!("usage: testbed-kms run --endpoint URL --region R --key-id ID --key-spec SPEC --usage USAGE --iterations N --payload-bytes N");
        std::process::exit(0);
    }
    if args.first().map(String::as_str) != Some("run") {
        return Err("missing or unknown subcommand: run".into());
    }
    let mut out = HashMap::new();
    let mut it = args[1..].iter();
    while let Some(a) = it.next() {
        let name = a.strip_prefix("--").ok_or(format!("unexpected argument {a}"))?;
        let value = it.next().ok_or(format!("--{name} needs a value"))?;
        out.insert(name.to_string(), value.clone());
    }
    for need in ["endpoint", "key-id", "key-spec", "usage"] {
        if !out.contains_key(need) {
            return Err(format!("--{need} is required"));
        }
    }
    Ok(out)
}

fn gcm(key: &[u8], nonce: [u8; 12], buf: &mut Vec<u8>, seal: bool) -> Res<()> {
    let k = LessSafeKey::new(UnboundKey::new(&AES_256_GCM, key).map_err(|_| "bad data key")?);
    let n = Nonce::assume_unique_for_key(nonce);
    if seal {
        k.seal_in_place_append_tag(n, Aad::empty(), buf).map_err(|_| "seal failed".to_string())
    } else {
        let len = k.open_in_place(n, Aad::empty(), buf).map_err(|_| "open failed")?.len();
        buf.truncate(len);
        Ok(())
    }
}

fn blob(b: Option<&Blob>) -> Res<Vec<u8>> {
    b.map(|x| x.as_ref().to_vec()).ok_or_else(|| "key service answer lacks a field".to_string())
}

async fn envelope(c: &aws_sdk_kms::Client, key: &str, spec: &str, payload: &[u8], nonce: [u8; 12], t: &mut Timings) -> Res<()> {
    let e = |x: aws_sdk_kms::Error| x.to_string();
    let (dk, wrapped, alg) = if spec == "SYMMETRIC_DEFAULT" {
        let t0 = Instant::now();
        let o = c.generate_data_key().key_id(key).key_spec(DataKeySpec::Aes256).send().await.map_err(|x| e(x.into()))?;
        t.add("generate_data_key", t0);
        (blob(o.plaintext())?, blob(o.ciphertext_blob())?, None)
    } else {
        let mut dk = vec![0u8; 32];
        SystemRandom::new().fill(&mut dk).map_err(|_| "rng")?;
        let t0 = Instant::now();
        let o = c.encrypt().key_id(key).plaintext(Blob::new(dk.clone()))
            .encryption_algorithm(EncryptionAlgorithmSpec::RsaesOaepSha256).send().await.map_err(|x| e(x.into()))?;
        t.add("encrypt", t0);
        (dk, blob(o.ciphertext_blob())?, Some(EncryptionAlgorithmSpec::RsaesOaepSha256))
    };
    let mut buf = payload.to_vec();
    let t0 = Instant::now();
    gcm(&dk, nonce, &mut buf, true)?;
    t.add("local_encrypt", t0);
    let t0 = Instant::now();
    let o = c.decrypt().key_id(key).ciphertext_blob(Blob::new(wrapped)).set_encryption_algorithm(alg).send().await.map_err(|x| e(x.into()))?;
    t.add("decrypt", t0);
    let back = blob(o.plaintext())?;
    let t0 = Instant::now();
    gcm(&back, nonce, &mut buf, false)?;
    t.add("local_decrypt", t0);
    if buf != payload { return Err("envelope round trip returned a different payload".into()); }
    Ok(())
}

fn sign_alg(spec: &str) -> SigningAlgorithmSpec {
    match spec {
        "ECC_NIST_P256" => SigningAlgorithmSpec::EcdsaSha256,
        "ECC_NIST_P384" => SigningAlgorithmSpec::EcdsaSha384,
        _ => SigningAlgorithmSpec::RsassaPssSha256,
    }
}

async fn sign(c: &aws_sdk_kms::Client, key: &str, spec: &str, payload: &[u8], t: &mut Timings) -> Res<()> {
    let e = |x: aws_sdk_kms::Error| x.to_string();
    let t0 = Instant::now();
    let o = c.sign().key_id(key).message(Blob::new(payload)).message_type(MessageType::Raw)
        .signing_algorithm(sign_alg(spec)).send().await.map_err(|x| e(x.into()))?;
    t.add("sign", t0);
    let t0 = Instant::now();
    let v = c.verify().key_id(key).message(Blob::new(payload)).message_type(MessageType::Raw)
        .signature(Blob::new(blob(o.signature())?)).signing_algorithm(sign_alg(spec)).send().await.map_err(|x| e(x.into()))?;
    t.add("verify", t0);
    if !v.signature_valid() { return Err("key service did not verify its own signature".into()); }
    Ok(())
}

async fn mac(c: &aws_sdk_kms::Client, key: &str, spec: &str, payload: &[u8], t: &mut Timings) -> Res<()> {
    let e = |x: aws_sdk_kms::Error| x.to_string();
    let alg = if spec == "HMAC_384" { MacAlgorithmSpec::HmacSha384 } else { MacAlgorithmSpec::HmacSha256 };
    let t0 = Instant::now();
    let o = c.generate_mac().key_id(key).message(Blob::new(payload)).mac_algorithm(alg.clone()).send().await.map_err(|x| e(x.into()))?;
    t.add("generate_mac", t0);
    let t0 = Instant::now();
    let v = c.verify_mac().key_id(key).message(Blob::new(payload)).mac(Blob::new(blob(o.mac())?)).mac_algorithm(alg).send().await.map_err(|x| e(x.into()))?;
    t.add("verify_mac", t0);
    if !v.mac_valid() { return Err("key service did not verify its own MAC".into()); }
    Ok(())
}

async fn run(f: &HashMap<String, String>) -> Res<Value> {
    let iterations: u32 = f.get("iterations").map_or(Ok(30), |v| v.parse()).map_err(|_| "--iterations: an integer")?;
    let size: usize = f.get("payload-bytes").map_or(Ok(4096), |v| v.parse()).map_err(|_| "--payload-bytes: an integer")?;
    let (key, spec, usage) = (&f["key-id"], f["key-spec"].as_str(), f["usage"].as_str());
    let mut payload = vec![0u8; size];
    SystemRandom::new().fill(&mut payload).map_err(|_| "rng")?;
    let mut t = Timings(Map::new());
    let t0 = Instant::now();
    let creds = Credentials::new(
        std::env::var("AWS_ACCESS_KEY_ID").unwrap_or_else(|_| "testing".into()),
        std::env::var("AWS_SECRET_ACCESS_KEY").unwrap_or_else(|_| "testing".into()),
        std::env::var("AWS_SESSION_TOKEN").ok(), None, "environment");
    let region = f.get("region").cloned().unwrap_or_else(|| "us-east-1".into());
    let conf = aws_sdk_kms::Config::builder().behavior_version(BehaviorVersion::latest())
        .region(Region::new(region)).endpoint_url(&f["endpoint"]).credentials_provider(creds)
        .http_client(Builder::new().tls_provider(Provider::Rustls(CryptoMode::Ring)).build_https()).build();
    let client = aws_sdk_kms::Client::from_conf(conf);
    t.add("client_init", t0);
    let mut prefix = [0u8; 8];
    SystemRandom::new().fill(&mut prefix).map_err(|_| "rng")?;
    for i in 0..iterations {
        let mut nonce = [0u8; 12];
        nonce[..8].copy_from_slice(&prefix);
        nonce[8..].copy_from_slice(&i.to_be_bytes());
        match usage {
            "ENCRYPT_DECRYPT" => envelope(&client, key, spec, &payload, nonce, &mut t).await?,
            "SIGN_VERIFY" => sign(&client, key, spec, &payload, &mut t).await?,
            "GENERATE_VERIFY_MAC" => mac(&client, key, spec, &payload, &mut t).await?,
            _ => return Err(format!("unknown --usage {usage}")),
        }
    }
    Ok(json!({"contract": 1, "language": "rust", "runtime": option_env!("RUSTC_VERSION_TEXT").unwrap_or("rustc"),
        "library": "aws-sdk-kms 1 (AWS SDK for Rust); local AES-256-GCM: ring 0.17",
        "key_spec": spec, "usage": usage, "payload_bytes": size, "iterations": iterations, "times_ns": Value::Object(t.0)}))
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let res = match flags() { Ok(f) => run(&f).await.map_err(|e| (1, e)), Err(e) => Err((2, e)) };
    match res {
        Ok(v) => println!("{v}"),
        Err((code, msg)) => {
            println!("{}", json!({"error": msg}));
            std::process::exit(code);
        }
    }
}
