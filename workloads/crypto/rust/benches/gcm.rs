//! criterion's benchmark of the AES-256-GCM library calls one operation of testbed-crypto makes in
//! bench/crypto_throughput.py's two patterns, without the program around them (its dispatch, nonce
//! bookkeeping and per-operation clock reads): the reference its harness is held to.
//!
//!     cargo bench --bench gcm -- --noplot
//!
//! Timed with `iter_custom` on the process's CPU clock (CLOCK_PROCESS_CPUTIME_ID: all threads, as the
//! harness's cpu_ns), so a busy machine does not count. Buffer sizes: GCM_STREAM_BYTES (1 MiB) and
//! GCM_MESSAGE_BYTES (16 KiB). criterion writes each mean to target/criterion/gcm/<name>/new/estimates.json.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use ring::aead::{Aad, LessSafeKey, Nonce, UnboundKey, AES_256_GCM};
use ring::rand::{SecureRandom, SystemRandom};
use std::hint::black_box;
use std::time::Duration;

fn cpu_now() -> Duration {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime fills a timespec owned by this frame.
    unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut ts) };
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

fn size(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).filter(|&v| v > 0).unwrap_or(default)
}

fn random(n: usize) -> Vec<u8> {
    let mut b = vec![0u8; n];
    SystemRandom::new().fill(&mut b).expect("rng");
    b
}

fn nonce(prefix: &[u8], n: u64) -> Nonce {
    let mut b = [0u8; 12];
    b[..8].copy_from_slice(prefix);
    b[8..].copy_from_slice(&(n as u32).to_be_bytes());
    Nonce::assume_unique_for_key(b)
}

fn gcm(c: &mut Criterion) {
    let mut g = c.benchmark_group("gcm");
    let prefix = random(8);
    // the bulk pattern (--update-bytes): one key, the payload sealed in place in one reused buffer
    let stream = size("GCM_STREAM_BYTES", 1 << 20);
    let key = LessSafeKey::new(UnboundKey::new(&AES_256_GCM, &random(32)).expect("key"));
    let mut buf = random(stream);
    g.throughput(Throughput::Bytes(stream as u64));
    g.bench_function("stream", |b| {
        b.iter_custom(|iters| {
            let t0 = cpu_now();
            for n in 0..iters {
                let tag = key.seal_in_place_separate_tag(nonce(&prefix, n), Aad::empty(), &mut buf).expect("seal");
                black_box(tag);
            }
            cpu_now() - t0
        })
    });
    // the messages pattern: per message a new key (UnboundKey + LessSafeKey) and a sealed copy
    // (testbed-crypto's encrypt: ring_key, then ring_seal into a new Vec)
    let message = size("GCM_MESSAGE_BYTES", 16384);
    let raw = random(32);
    let pt = random(message);
    g.throughput(Throughput::Bytes(message as u64));
    g.bench_function("messages", |b| {
        b.iter_custom(|iters| {
            let t0 = cpu_now();
            for n in 0..iters {
                let k = LessSafeKey::new(UnboundKey::new(&AES_256_GCM, &raw).expect("key"));
                let mut out = Vec::with_capacity(pt.len() + 16);
                out.extend_from_slice(&pt);
                k.seal_in_place_append_tag(nonce(&prefix, n), Aad::empty(), &mut out).expect("seal");
                black_box(out);
            }
            cpu_now() - t0
        })
    });
    g.finish();
}

criterion_group!(benches, gcm);
criterion_main!(benches);
