//! testbed-crypto: the Rust implementation of workloads/crypto/CONTRACT.md (RustCrypto crates).

mod algs;

use algs::{alg_by_name, rand_bytes, Alg, EcKey, ALGS};
use serde_json::{json, Map, Value};
use std::collections::HashMap;
use std::fs::File;
use std::time::Instant;

const LIBRARY: &str = "ring 0.17 (AES-128/256-GCM) + RustCrypto (aes 0.8 with AES-NI, aes-gcm 0.10 for AES-192-GCM, p256/p384 0.13, rsa 0.9, twofish 0.7, ...)";

/// An error with the contract's exit code.
struct Fail(i32, String);

type Res<T> = Result<T, Fail>;

fn usage(msg: impl Into<String>) -> Fail {
    Fail(2, msg.into())
}

fn other(msg: impl Into<String>) -> Fail {
    Fail(1, msg.into())
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (out, code) = match dispatch(&args) {
        Ok((v, code)) => (v, code),
        Err(Fail(code, msg)) => (json!({ "error": msg }), code),
    };
    println!("{out}");
    std::process::exit(code);
}

fn dispatch(args: &[String]) -> Res<(Value, i32)> {
    let cmd = args.first().map(String::as_str).unwrap_or("");
    let flags = parse_flags(&args[args.len().min(1)..])?;
    match cmd {
        "info" => Ok((json!({
            "language": "rust", "runtime": runtime(), "library": LIBRARY,
            "algorithms": ALGS.iter().map(|a| a.name).collect::<Vec<_>>(), "unsupported": {},
        }), 0)),
        "check" => {
            let vecs = load_vectors(flags.get("vectors"))?;
            let report = check_vectors(&vecs, None);
            let code = if report["failed"].as_u64().unwrap_or(0) > 0 { 3 } else { 0 };
            Ok((report, code))
        }
        "run" => Ok((run(&flags)?, 0)),
        "-h" | "--help" => {
            eprintln!("usage: testbed-crypto info | check --vectors FILE | run --alg NAME ... (see CONTRACT.md)");
            std::process::exit(0);
        }
        _ => Err(usage("missing or unknown subcommand: info, check or run")),
    }
}

fn runtime() -> String {
    option_env!("RUSTC_VERSION_TEXT").unwrap_or("rustc (release build)").to_string()
}

fn parse_flags(args: &[String]) -> Res<HashMap<String, String>> {
    let mut out = HashMap::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        if a == "-h" || a == "--help" {
            eprintln!("flags: --alg --key-bits --op --payload-bytes --input --stream --chunk-bytes --iterations --warmup --vectors");
            std::process::exit(0);
        }
        let name = a.strip_prefix("--").ok_or_else(|| usage(format!("unexpected argument {a}")))?;
        let value = it.next().ok_or_else(|| usage(format!("--{name} needs a value")))?;
        out.insert(name.to_string(), value.clone());
    }
    Ok(out)
}

fn int_flag(flags: &HashMap<String, String>, name: &str, default: Option<i64>) -> Res<Option<i64>> {
    match flags.get(name) {
        None => Ok(default),
        Some(v) => v.parse::<i64>().map(Some).map_err(|_| usage(format!("--{name} must be an integer, got {v}"))),
    }
}

fn load_vectors(path: Option<&String>) -> Res<Vec<Value>> {
    let path = path.ok_or_else(|| usage("--vectors is required"))?;
    let text = std::fs::read_to_string(path).map_err(|e| other(format!("{path}: {e}")))?;
    let doc: Value = serde_json::from_str(&text).map_err(|e| other(format!("{path}: {e}")))?;
    doc["vectors"].as_array().cloned().ok_or_else(|| other(format!("{path}: no vectors list")))
}

fn hx(v: &Value, key: &str) -> Result<Vec<u8>, String> {
    hex::decode(v[key].as_str().unwrap_or("")).map_err(|_| format!("{key} is not hex"))
}

/// One vector: problems found (empty when it passes) and what this implementation produced.
fn check_one(v: &Value) -> Result<(Vec<String>, Map<String, Value>), String> {
    let mut p = Vec::new();
    let mut produced = Map::new();
    let name = v["alg"].as_str().unwrap_or("");
    let a = alg_by_name(name).ok_or(format!("unknown alg {name}"))?;
    match a.kind {
        "cipher" => {
            let (key, iv, pt, ct) = (hx(v, "key")?, hx(v, "iv")?, hx(v, "plaintext")?, hx(v, "ciphertext")?);
            let got = if let Some(chunk) = v["chunk_bytes"].as_u64() {
                let mut out = Vec::new();
                algs::stream_encrypt(name, &key, &iv, &mut &pt[..], chunk as usize, &mut |b| out.extend_from_slice(b))?;
                out
            } else {
                if algs::decrypt(name, &key, &iv, &ct).ok().as_deref() != Some(&pt[..]) {
                    p.push("decryption differs".to_string());
                }
                algs::encrypt(name, &key, &iv, &pt)?
            };
            if got != ct {
                p.push(format!("ciphertext differs: got {}...", &hex::encode(&got)[..32.min(2 * got.len())]));
            }
        }
        "mac" => {
            if algs::mac(name, &hx(v, "key")?, &hx(v, "message")?)? != hx(v, "mac")? {
                p.push("mac differs".to_string());
            }
        }
        "sign" => {
            let k = EcKey::load(name, &hx(v, "private_key")?, &hx(v, "public_key")?)?;
            let (msg, sig) = (hx(v, "message")?, hx(v, "signature")?);
            if !k.verify(&msg, &sig) {
                p.push("given signature does not verify".to_string());
            }
            let mut other_msg = msg.clone();
            other_msg.push(b'x');
            if k.verify(&other_msg, &sig) {
                p.push("signature verifies a different message".to_string());
            }
            let own = k.sign(&msg);
            if !k.verify(&msg, &own) {
                p.push("own signature does not verify".to_string());
            }
            produced.insert("signature".into(), Value::String(hex::encode(own)));
        }
        _ => {
            let (private, public) = algs::rsa_keys(&hx(v, "private_key")?, &hx(v, "public_key")?)?;
            let data_key = hx(v, "data_key")?;
            if algs::unwrap(&private, &hx(v, "wrapped_key")?).ok() != Some(data_key.clone()) {
                p.push("unwrapped data key differs".to_string());
            }
            if algs::encrypt("aes-gcm", &data_key, &hx(v, "iv")?, &hx(v, "plaintext")?)? != hx(v, "ciphertext")? {
                p.push("payload ciphertext differs".to_string());
            }
            let own = algs::wrap(&public, &data_key)?;
            if algs::unwrap(&private, &own).ok() != Some(data_key) {
                p.push("own wrapped key does not unwrap".to_string());
            }
            produced.insert("wrapped_key".into(), Value::String(hex::encode(own)));
        }
    }
    Ok((p, produced))
}

fn check_vectors(vecs: &[Value], only: Option<&str>) -> Value {
    let mut results = Vec::new();
    let mut unsupported = Vec::new();
    let mut passed = 0;
    for v in vecs {
        if only.is_some_and(|o| v["alg"].as_str() != Some(o)) {
            continue;
        }
        let name = v["alg"].as_str().unwrap_or("");
        if alg_by_name(name).is_none() {
            // an algorithm of the contract this program does not do
            unsupported.push(json!({"id": v["id"], "reason": format!("{name} is not implemented in Rust")}));
            continue;
        }
        let (problems, produced) = check_one(v).unwrap_or_else(|err| (vec![err], Map::new()));
        if problems.is_empty() {
            passed += 1;
        }
        results.push(json!({
            "id": v["id"], "ok": problems.is_empty(),
            "error": if problems.is_empty() { Value::Null } else { Value::String(problems.join("; ")) },
            "produced": produced,
        }));
    }
    let failed = results.len() - passed;
    json!({"language": "rust", "results": results, "passed": passed, "failed": failed, "unsupported": unsupported})
}

fn rusage() -> (i64, i64) {
    // SAFETY: getrusage fills a zeroed struct owned by this frame.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) } != 0 {
        return (0, 0);
    }
    let ns = |t: libc::timeval| t.tv_sec * 1_000_000_000 + t.tv_usec * 1000;
    (ns(ru.ru_utime), ns(ru.ru_stime))
}

type Op = Box<dyn FnMut(u32) -> Result<(), String>>;

fn make_op(a: &'static Alg, op: &str, key_bits: usize, payload: Option<Vec<u8>>, stream: Option<String>,
           chunk: usize, vecs: &[Value]) -> Res<Op> {
    let name = a.name;
    let key = rand_bytes(key_bits / 8);
    let prefix = rand_bytes(8);
    let block = a.block;
    let iv_for = move |n: u32| -> Vec<u8> {
        match name {
            "aes-gcm" => [&prefix[..], &n.to_be_bytes()].concat(),
            "aes-ctr" => [&prefix[..], &n.to_be_bytes(), &[0u8; 4]].concat(),
            _ => rand_bytes(block),
        }
    };
    let vec = vecs.iter().find(|v| {
        v["alg"].as_str() == Some(name) && v["key_bits"].as_u64().is_none_or(|b| b as usize == key_bits)
    });
    let keys = || -> Res<(Vec<u8>, Vec<u8>)> {
        let v = vec.ok_or_else(|| usage(format!("no vector with a {key_bits}-bit key for {name}")))?;
        Ok((hx(v, "private_key").map_err(other)?, hx(v, "public_key").map_err(other)?))
    };
    let open = |path: &str| File::open(path).map_err(|e| format!("{path}: {e}"));
    match a.kind {
        "cipher" => {
            if let Some(path) = stream {
                return Ok(Box::new(move |_| {
                    let mut f = std::io::BufReader::with_capacity(chunk, open(&path)?);
                    algs::stream_encrypt(name, &key, &rand_bytes(block), &mut f, chunk, &mut |_| {})
                }));
            }
            let data = payload.unwrap_or_default();
            if op == "encrypt" {
                return Ok(Box::new(move |n| algs::encrypt(name, &key, &iv_for(n), &data).map(|_| ())));
            }
            let iv0 = iv_for(0);
            let ct = algs::encrypt(name, &key, &iv0, &data).map_err(other)?;
            Ok(Box::new(move |_| algs::decrypt(name, &key, &iv0, &ct).map(|_| ())))
        }
        "mac" => {
            if let Some(path) = stream {
                return Ok(Box::new(move |_| {
                    let mut f = open(&path)?;
                    algs::stream_mac(name, &key, &mut f, chunk).map(|_| ())
                }));
            }
            let data = payload.unwrap_or_default();
            Ok(Box::new(move |_| algs::mac(name, &key, &data).map(|_| ())))
        }
        "sign" => {
            if stream.is_some() {
                return Err(usage("ecdsa takes --payload-bytes or --input, not --stream"));
            }
            let (p, q) = keys()?;
            let k = EcKey::load(name, &p, &q).map_err(other)?;
            let data = payload.unwrap_or_default();
            if op == "sign" {
                return Ok(Box::new(move |_| {
                    k.sign(&data);
                    Ok(())
                }));
            }
            let sig = k.sign(&data);
            Ok(Box::new(move |_| if k.verify(&data, &sig) { Ok(()) } else { Err("own signature failed".into()) }))
        }
        _ => {
            let (p, q) = keys()?;
            let (private, public) = algs::rsa_keys(&p, &q).map_err(other)?;
            if let Some(path) = stream {
                return Ok(Box::new(move |_| {
                    let data_key = rand_bytes(32);
                    algs::wrap(&public, &data_key)?;
                    let mut f = std::io::BufReader::with_capacity(chunk, open(&path)?);
                    algs::stream_encrypt("aes-gcm", &data_key, &rand_bytes(12), &mut f, chunk, &mut |_| {})
                }));
            }
            let data = payload.unwrap_or_default();
            if op == "encrypt" {
                return Ok(Box::new(move |_| algs::hybrid_encrypt(&public, &data).map(|_| ())));
            }
            let blob = algs::hybrid_encrypt(&public, &data).map_err(other)?;
            Ok(Box::new(move |_| algs::hybrid_decrypt(&private, &blob).map(|_| ())))
        }
    }
}

fn run(flags: &HashMap<String, String>) -> Res<Value> {
    let name = flags.get("alg").ok_or_else(|| usage("--alg is required"))?;
    let a = alg_by_name(name).ok_or_else(|| usage(format!("unknown alg {name}")))?;
    let key_bits = int_flag(flags, "key-bits", Some(a.key_bits[0] as i64))?.unwrap_or(0);
    if !a.key_bits.iter().any(|&b| b as i64 == key_bits) {
        return Err(usage(format!("{name} takes key_bits {:?}, got {key_bits}", a.key_bits)));
    }
    let op = flags.get("op").map(String::as_str).unwrap_or(a.ops[0]).to_string();
    if !a.ops.contains(&op.as_str()) {
        return Err(usage(format!("{name} takes op {:?}, got {op}", a.ops)));
    }
    let iterations = int_flag(flags, "iterations", None)?.ok_or_else(|| usage("--iterations is required"))?;
    let warmup = int_flag(flags, "warmup", Some(0))?.unwrap_or(0);
    let float = |k: &str, d: f64| flags.get(k).map_or(Ok(d), |v| v.parse::<f64>().map_err(|_| usage(format!("--{k}: a number"))));
    let (warmup_s, tolerance) = (float("warmup-s", 0.0)?, float("tolerance", 0.05)?);
    if warmup_s < 0.0 || tolerance <= 0.0 || tolerance >= 1.0 {
        return Err(usage("warmup-s must be >= 0 and tolerance in (0, 1)"));
    }
    let chunk = int_flag(flags, "chunk-bytes", Some(1 << 20))?.unwrap_or(0);
    if iterations < 1 || warmup < 0 || chunk < 16 || chunk % 16 != 0 {
        return Err(usage("iterations >= 1, warmup >= 0, chunk_bytes a positive multiple of 16"));
    }
    let given: Vec<&str> = ["payload-bytes", "input", "stream"].into_iter().filter(|k| flags.contains_key(*k)).collect();
    if given.len() != 1 {
        return Err(usage("give exactly one of --payload-bytes, --input, --stream"));
    }
    let (payload, stream, size) = match given[0] {
        "payload-bytes" => {
            let n = int_flag(flags, "payload-bytes", None)?.unwrap_or(-1);
            if n < 0 {
                return Err(usage("--payload-bytes must be >= 0"));
            }
            (Some(rand_bytes(n as usize)), None, n as u64)
        }
        "input" => {
            let data = std::fs::read(&flags["input"]).map_err(|e| other(format!("{}: {e}", flags["input"])))?;
            let n = data.len() as u64;
            (Some(data), None, n)
        }
        _ => {
            if op != "encrypt" && op != "mac" {
                return Err(usage("--stream takes op encrypt or mac"));
            }
            let path = flags["stream"].clone();
            let n = std::fs::metadata(&path).map_err(|e| other(format!("{path}: {e}")))?.len();
            (None, Some(path), n)
        }
    };
    let vecs = load_vectors(flags.get("vectors"))?;
    let report = check_vectors(&vecs, Some(name));
    let results = report["results"].as_array().cloned().unwrap_or_default();
    if report["failed"].as_u64() != Some(0) || results.is_empty() {
        let why = results.iter().find(|r| r["ok"] == Value::Bool(false))
            .map(|r| format!("{}: {}", r["id"].as_str().unwrap_or(""), r["error"].as_str().unwrap_or("")))
            .unwrap_or_else(|| "no vector for this algorithm".into());
        return Err(Fail(3, format!("vector check failed before timing: {why}")));
    }
    let update = int_flag(flags, "update-bytes", Some(0))?.unwrap_or(0);
    let mut do_op = if update > 0 {
        if name != "aes-gcm" || op != "encrypt" || payload.is_none() || update % 16 != 0 || key_bits == 192 {
            return Err(usage("update-bytes: aes-gcm (128/256) encrypt of an in-memory payload, a multiple of 16"));
        }
        bulk_gcm(payload.unwrap_or_default(), key_bits as usize)?
    } else {
        make_op(a, &op, key_bits as usize, payload, stream.clone(), chunk as usize, &vecs)?
    };
    let t0 = Instant::now();
    do_op(0).map_err(other)?;
    let cold = t0.elapsed().as_nanos() as u64;
    for i in 0..warmup {
        do_op(1 + i as u32).map_err(other)?;
    }
    let st = steady_warmup(&mut do_op, 1 + warmup as u32, warmup_s, tolerance)?;
    let warmup = warmup + st.0 as i64;
    let mut times = Vec::with_capacity(iterations as usize);
    let w0 = Instant::now(); // the wall window encloses the CPU window
    let (u0, s0) = rusage();
    for i in 0..iterations {
        let t = Instant::now();
        do_op((1 + warmup + i) as u32).map_err(other)?;
        times.push(t.elapsed().as_nanos() as u64);
    }
    let (u1, s1) = rusage();
    let wall = w0.elapsed().as_nanos() as u64;
    Ok(json!({
        "contract": 2, "language": "rust", "runtime": runtime(), "library": LIBRARY,
        "backend": if name == "aes-gcm" || name == "rsa-oaep" { algs::gcm_backend(key_bits as usize) } else { "RustCrypto" },
        "warmup_ns": st.1, "steady": st.2, "warmup_batches_ns": st.3,
        "alg": name, "key_bits": key_bits, "op": op, "mode": a.mode, "padding": a.padding,
        "payload_bytes": size, "input": if stream.is_some() { "stream" } else { "memory" },
        "update_bytes": update,
        "iterations": iterations, "warmup": warmup,
        "vectors": {"checked": results.len(), "passed": report["passed"]},
        "cold_ns": cold, "times_ns": times, "wall_ns": wall,
        "cpu_user_ns": u1 - u0, "cpu_sys_ns": s1 - s0, "cpu_ns": (u1 - u0) + (s1 - s0),
        "process_cpu_ns": u1 + s1,
    }))
}

/// Time-based warm-up (CONTRACT.md): batches of >= 10 ms until 3 successive per-op means agree within
/// `tolerance` of their median, or `seconds` are up. (ops, ns, steady or null, per-batch means).
fn steady_warmup(
    do_op: &mut dyn FnMut(u32) -> Result<(), String>, first: u32, seconds: f64, tolerance: f64,
) -> Res<(u64, u64, Value, Vec<u64>)> {
    if seconds <= 0.0 {
        return Ok((0, 0, Value::Null, vec![]));
    }
    let start = Instant::now();
    let limit = std::time::Duration::from_secs_f64(seconds);
    let batch = std::cmp::max(std::time::Duration::from_millis(10), limit / 50);
    let (mut n, mut size, mut means) = (first, 1u32, Vec::new());
    loop {
        let t = Instant::now();
        for _ in 0..size {
            do_op(n).map_err(other)?;
            n += 1;
        }
        let took = t.elapsed();
        if took < batch {
            size *= 2;
            continue;
        }
        means.push(took.as_nanos() as u64 / size as u64);
        let k = means.len();
        let ok = k >= 3 && {
            let mut last = means[k - 3..].to_vec();
            last.sort_unstable();
            (last[2] - last[0]) as f64 <= tolerance * last[1] as f64
        };
        let ok = ok && start.elapsed() >= limit / 2; // at least half of the time (JIT tiers, caches)
        if ok || start.elapsed() >= limit {
            return Ok(((n - first) as u64, start.elapsed().as_nanos() as u64, Value::Bool(ok), means));
        }
    }
}

/// One GCM message per operation, sealed in place in one reused buffer with ring (CONTRACT.md
/// `--update-bytes`; ring has no incremental GCM, so the whole payload is one seal call).
fn bulk_gcm(payload: Vec<u8>, key_bits: usize) -> Res<Op> {
    use ring::aead::{Aad, LessSafeKey, Nonce, UnboundKey, AES_128_GCM, AES_256_GCM};
    let alg = if key_bits == 128 { &AES_128_GCM } else { &AES_256_GCM };
    let key = LessSafeKey::new(UnboundKey::new(alg, &rand_bytes(key_bits / 8)).map_err(|_| other("bad key"))?);
    let prefix = rand_bytes(8);
    let mut buf = payload;
    Ok(Box::new(move |n: u32| {
        let mut nonce = [0u8; 12];
        nonce[..8].copy_from_slice(&prefix);
        nonce[8..].copy_from_slice(&n.to_be_bytes());
        let tag = key
            .seal_in_place_separate_tag(Nonce::assume_unique_for_key(nonce), Aad::empty(), &mut buf)
            .map_err(|_| "seal failed".to_string())?;
        let _ = std::hint::black_box(tag);
        Ok(())
    }))
}
