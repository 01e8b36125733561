//! The algorithms of CONTRACT.md on RustCrypto crates.

use aes::cipher::{
    block_padding::Pkcs7, generic_array::GenericArray, BlockCipher, BlockDecryptMut, BlockEncryptMut,
    InnerIvInit, KeyInit, KeyIvInit, StreamCipher,
};
use aes::{Aes128, Aes192, Aes256};
use aes_gcm::aead::{Aead, Payload};
use aes_gcm::{AesGcm, Nonce};
use hmac::{Hmac, Mac};
use rand::RngCore;
use rsa::pkcs8::{DecodePrivateKey, DecodePublicKey};
use rsa::{Oaep, RsaPrivateKey, RsaPublicKey};
use sha2::{Sha256, Sha384};
use std::io::Read;

pub struct Alg {
    pub name: &'static str,
    pub kind: &'static str, // cipher | mac | sign | hybrid
    pub key_bits: &'static [u32],
    pub ops: &'static [&'static str],
    pub mode: &'static str,
    pub padding: &'static str,
    pub block: usize,
}

const CIPHER_OPS: &[&str] = &["encrypt", "decrypt"];

pub const ALGS: &[Alg] = &[
    Alg { name: "aes-gcm", kind: "cipher", key_bits: &[128, 192, 256], ops: CIPHER_OPS,
          mode: "GCM, 96-bit nonce, 128-bit tag", padding: "none", block: 16 },
    Alg { name: "aes-ctr", kind: "cipher", key_bits: &[128, 192, 256], ops: CIPHER_OPS,
          mode: "CTR, 128-bit counter", padding: "none", block: 16 },
    Alg { name: "aes-cbc", kind: "cipher", key_bits: &[128, 192, 256], ops: CIPHER_OPS,
          mode: "CBC", padding: "PKCS#7", block: 16 },
    Alg { name: "3des-cbc", kind: "cipher", key_bits: &[192, 128], ops: CIPHER_OPS,
          mode: "EDE (192: 3 keys; 128: 2 keys, K1 K2 K1), CBC", padding: "PKCS#7", block: 8 },
    Alg { name: "cast128-cbc", kind: "cipher", key_bits: &[128], ops: CIPHER_OPS,
          mode: "CBC", padding: "PKCS#7", block: 8 },
    Alg { name: "blowfish-cbc", kind: "cipher", key_bits: &[128, 256, 448, 64], ops: CIPHER_OPS,
          mode: "CBC", padding: "PKCS#7", block: 8 },
    Alg { name: "twofish-cbc", kind: "cipher", key_bits: &[128, 192, 256], ops: CIPHER_OPS,
          mode: "CBC", padding: "PKCS#7", block: 16 },
    Alg { name: "hmac-sha256", kind: "mac", key_bits: &[256], ops: &["mac"], mode: "HMAC", padding: "none", block: 0 },
    Alg { name: "hmac-sha384", kind: "mac", key_bits: &[384], ops: &["mac"], mode: "HMAC", padding: "none", block: 0 },
    Alg { name: "ecdsa-p256", kind: "sign", key_bits: &[256], ops: &["sign", "verify"],
          mode: "ECDSA with SHA-256, DER signature (RFC 6979 nonces)", padding: "none", block: 0 },
    Alg { name: "ecdsa-p384", kind: "sign", key_bits: &[384], ops: &["sign", "verify"],
          mode: "ECDSA with SHA-384, DER signature (RFC 6979 nonces)", padding: "none", block: 0 },
    Alg { name: "rsa-oaep", kind: "hybrid", key_bits: &[2048, 3072, 4096], ops: CIPHER_OPS,
          mode: "RSA-OAEP(SHA-256, MGF1-SHA-256) wraps a 256-bit key; AES-256-GCM payload", padding: "OAEP",
          block: 0 },
];

pub fn alg_by_name(name: &str) -> Option<&'static Alg> {
    ALGS.iter().find(|a| a.name == name)
}

pub fn rand_bytes(n: usize) -> Vec<u8> {
    let mut b = vec![0u8; n];
    rand::rngs::OsRng.fill_bytes(&mut b);
    b
}

type R<T> = Result<T, String>;

fn e<E: std::fmt::Debug>(err: E) -> String {
    format!("{err:?}")
}

fn cbc_enc<C: BlockEncryptMut + BlockCipher + KeyInit>(key: &[u8], iv: &[u8], pt: &[u8]) -> R<Vec<u8>> {
    let c = C::new_from_slice(key).map_err(e)?;
    let enc = cbc::Encryptor::<C>::inner_iv_slice_init(c, iv).map_err(e)?;
    Ok(enc.encrypt_padded_vec_mut::<Pkcs7>(pt))
}

fn cbc_dec<C: BlockDecryptMut + BlockCipher + KeyInit>(key: &[u8], iv: &[u8], ct: &[u8]) -> R<Vec<u8>> {
    let c = C::new_from_slice(key).map_err(e)?;
    let dec = cbc::Decryptor::<C>::inner_iv_slice_init(c, iv).map_err(e)?;
    dec.decrypt_padded_vec_mut::<Pkcs7>(ct).map_err(|_| "bad padding".to_string())
}

/// CBC over a reader: full chunks through the running state, PKCS#7 on the last one.
fn cbc_stream<C: BlockEncryptMut + BlockCipher + KeyInit>(
    key: &[u8], iv: &[u8], src: &mut dyn Read, chunk: usize, sink: &mut dyn FnMut(&[u8]),
) -> R<()> {
    let c = C::new_from_slice(key).map_err(e)?;
    let mut enc = cbc::Encryptor::<C>::inner_iv_slice_init(c, iv).map_err(e)?;
    let bs = C::block_size();
    let mut buf = vec![0u8; chunk + bs];
    loop {
        let n = read_full(src, &mut buf[..chunk])?;
        if n < chunk {
            let out = enc.encrypt_padded_mut::<Pkcs7>(&mut buf, n).map_err(e)?;
            sink(out);
            return Ok(());
        }
        for b in buf[..chunk].chunks_exact_mut(bs) {
            enc.encrypt_block_mut(GenericArray::from_mut_slice(b));
        }
        sink(&buf[..chunk]);
    }
}

fn read_full(src: &mut dyn Read, buf: &mut [u8]) -> R<usize> {
    let mut n = 0;
    while n < buf.len() {
        let k = src.read(&mut buf[n..]).map_err(|x| x.to_string())?;
        if k == 0 {
            break;
        }
        n += k;
    }
    Ok(n)
}

macro_rules! by_aes {
    ($bits:expr, $f:ident, $($arg:expr),*) => {
        match $bits {
            128 => $f::<Aes128>($($arg),*),
            192 => $f::<Aes192>($($arg),*),
            256 => $f::<Aes256>($($arg),*),
            _ => Err("AES takes 128, 192 or 256-bit keys".to_string()),
        }
    };
}

fn gcm_seal<C>(key: &[u8], iv: &[u8], pt: &[u8]) -> R<Vec<u8>>
where C: BlockCipher + aes::cipher::BlockSizeUser<BlockSize = aes::cipher::consts::U16> + aes::cipher::BlockEncrypt + KeyInit {
    let g = AesGcm::<C, aes::cipher::consts::U12>::new_from_slice(key).map_err(e)?;
    g.encrypt(Nonce::from_slice(iv), Payload { msg: pt, aad: b"" }).map_err(e)
}

fn gcm_open<C>(key: &[u8], iv: &[u8], ct: &[u8]) -> R<Vec<u8>>
where C: BlockCipher + aes::cipher::BlockSizeUser<BlockSize = aes::cipher::consts::U16> + aes::cipher::BlockEncrypt + KeyInit {
    let g = AesGcm::<C, aes::cipher::consts::U12>::new_from_slice(key).map_err(e)?;
    g.decrypt(Nonce::from_slice(iv), Payload { msg: ct, aad: b"" }).map_err(|_| "bad tag".to_string())
}

fn ctr_apply<C>(key: &[u8], iv: &[u8], data: &[u8]) -> R<Vec<u8>>
where C: BlockEncryptMut + BlockCipher + KeyInit + aes::cipher::BlockSizeUser<BlockSize = aes::cipher::consts::U16> {
    let mut c = ctr::Ctr128BE::<C>::new_from_slices(key, iv).map_err(e)?;
    let mut out = data.to_vec();
    c.apply_keystream(&mut out);
    Ok(out)
}

fn ctr_stream<C>(key: &[u8], iv: &[u8], src: &mut dyn Read, chunk: usize, sink: &mut dyn FnMut(&[u8])) -> R<()>
where C: BlockEncryptMut + BlockCipher + KeyInit + aes::cipher::BlockSizeUser<BlockSize = aes::cipher::consts::U16> {
    let mut c = ctr::Ctr128BE::<C>::new_from_slices(key, iv).map_err(e)?;
    let mut buf = vec![0u8; chunk];
    loop {
        let n = read_full(src, &mut buf)?;
        c.apply_keystream(&mut buf[..n]);
        sink(&buf[..n]);
        if n < chunk {
            return Ok(());
        }
    }
}

fn gcm_stream<C>(key: &[u8], iv: &[u8], src: &mut dyn Read, chunk: usize, sink: &mut dyn FnMut(&[u8])) -> R<()>
where C: BlockCipher + aes::cipher::BlockSizeUser<BlockSize = aes::cipher::consts::U16> + aes::cipher::BlockEncrypt + KeyInit {
    let g = AesGcm::<C, aes::cipher::consts::U12>::new_from_slice(key).map_err(e)?;
    let mut buf = vec![0u8; chunk];
    let mut nonce = [0u8; 12];
    nonce[..8].copy_from_slice(&iv[..8]);
    let mut i: u32 = 0;
    loop {
        let n = read_full(src, &mut buf)?;
        if n > 0 {
            nonce[8..].copy_from_slice(&i.to_be_bytes());
            let out = g.encrypt(Nonce::from_slice(&nonce), Payload { msg: &buf[..n], aad: b"" }).map_err(e)?;
            sink(&out);
        }
        if n < chunk {
            return Ok(());
        }
        i += 1;
    }
}

/// AES-128/256-GCM on ring (BoringSSL's AES-NI/CLMUL assembly); ring has no AES-192.
fn ring_key(key: &[u8]) -> Option<ring::aead::LessSafeKey> {
    let alg = match key.len() {
        16 => &ring::aead::AES_128_GCM,
        32 => &ring::aead::AES_256_GCM,
        _ => return None,
    };
    Some(ring::aead::LessSafeKey::new(ring::aead::UnboundKey::new(alg, key).ok()?))
}

fn ring_nonce(iv: &[u8]) -> R<ring::aead::Nonce> {
    ring::aead::Nonce::try_assume_unique_for_key(iv).map_err(|_| "GCM takes a 96-bit nonce".to_string())
}

fn ring_seal(k: &ring::aead::LessSafeKey, iv: &[u8], pt: &[u8]) -> R<Vec<u8>> {
    let mut out = Vec::with_capacity(pt.len() + 16);
    out.extend_from_slice(pt);
    k.seal_in_place_append_tag(ring_nonce(iv)?, ring::aead::Aad::empty(), &mut out).map_err(e)?;
    Ok(out)
}

fn ring_open(k: &ring::aead::LessSafeKey, iv: &[u8], ct: &[u8]) -> R<Vec<u8>> {
    let mut buf = ct.to_vec();
    let n = k.open_in_place(ring_nonce(iv)?, ring::aead::Aad::empty(), &mut buf).map_err(|_| "bad tag".to_string())?.len();
    buf.truncate(n);
    Ok(buf)
}

fn ring_stream(k: &ring::aead::LessSafeKey, iv: &[u8], src: &mut dyn Read, chunk: usize, sink: &mut dyn FnMut(&[u8])) -> R<()> {
    let mut buf = vec![0u8; chunk];
    let mut out = Vec::with_capacity(chunk + 16);
    let mut nonce = [0u8; 12];
    nonce[..8].copy_from_slice(&iv[..8]);
    let mut i: u32 = 0;
    loop {
        let n = read_full(src, &mut buf)?;
        if n > 0 {
            nonce[8..].copy_from_slice(&i.to_be_bytes());
            out.clear();
            out.extend_from_slice(&buf[..n]);
            k.seal_in_place_append_tag(ring_nonce(&nonce)?, ring::aead::Aad::empty(), &mut out).map_err(e)?;
            sink(&out);
        }
        if n < chunk {
            return Ok(());
        }
        i += 1;
    }
}

/// Which implementation serves AES-GCM at a key size (stated in the record).
pub fn gcm_backend(bits: usize) -> &'static str {
    if bits == 192 { "RustCrypto aes-gcm 0.10 (ring has no AES-192)" } else { "ring 0.17" }
}

pub fn encrypt(name: &str, key: &[u8], iv: &[u8], pt: &[u8]) -> R<Vec<u8>> {
    let bits = key.len() * 8;
    if name == "aes-gcm" {
        if let Some(k) = ring_key(key) {
            return ring_seal(&k, iv, pt);
        }
    }
    match name {
        "aes-gcm" => by_aes!(bits, gcm_seal, key, iv, pt),
        "aes-ctr" => by_aes!(bits, ctr_apply, key, iv, pt),
        "aes-cbc" => by_aes!(bits, cbc_enc, key, iv, pt),
        "3des-cbc" if key.len() == 16 => cbc_enc::<des::TdesEde2>(key, iv, pt),
        "3des-cbc" => cbc_enc::<des::TdesEde3>(key, iv, pt),
        "cast128-cbc" => cbc_enc::<cast5::Cast5>(key, iv, pt),
        "blowfish-cbc" => cbc_enc::<blowfish::Blowfish>(key, iv, pt),
        "twofish-cbc" => cbc_enc::<twofish::Twofish>(key, iv, pt),
        _ => Err(format!("no cipher {name}")),
    }
}

pub fn decrypt(name: &str, key: &[u8], iv: &[u8], ct: &[u8]) -> R<Vec<u8>> {
    let bits = key.len() * 8;
    if name == "aes-gcm" {
        if let Some(k) = ring_key(key) {
            return ring_open(&k, iv, ct);
        }
    }
    match name {
        "aes-gcm" => by_aes!(bits, gcm_open, key, iv, ct),
        "aes-ctr" => by_aes!(bits, ctr_apply, key, iv, ct),
        "aes-cbc" => by_aes!(bits, cbc_dec, key, iv, ct),
        "3des-cbc" if key.len() == 16 => cbc_dec::<des::TdesEde2>(key, iv, ct),
        "3des-cbc" => cbc_dec::<des::TdesEde3>(key, iv, ct),
        "cast128-cbc" => cbc_dec::<cast5::Cast5>(key, iv, ct),
        "blowfish-cbc" => cbc_dec::<blowfish::Blowfish>(key, iv, ct),
        "twofish-cbc" => cbc_dec::<twofish::Twofish>(key, iv, ct),
        _ => Err(format!("no cipher {name}")),
    }
}

pub fn stream_encrypt(
    name: &str, key: &[u8], iv: &[u8], src: &mut dyn Read, chunk: usize, sink: &mut dyn FnMut(&[u8]),
) -> R<()> {
    let bits = key.len() * 8;
    if name == "aes-gcm" {
        if let Some(k) = ring_key(key) {
            return ring_stream(&k, iv, src, chunk, sink);
        }
    }
    match name {
        "aes-gcm" => by_aes!(bits, gcm_stream, key, iv, src, chunk, sink),
        "aes-ctr" => by_aes!(bits, ctr_stream, key, iv, src, chunk, sink),
        "aes-cbc" => by_aes!(bits, cbc_stream, key, iv, src, chunk, sink),
        "3des-cbc" if key.len() == 16 => cbc_stream::<des::TdesEde2>(key, iv, src, chunk, sink),
        "3des-cbc" => cbc_stream::<des::TdesEde3>(key, iv, src, chunk, sink),
        "cast128-cbc" => cbc_stream::<cast5::Cast5>(key, iv, src, chunk, sink),
        "blowfish-cbc" => cbc_stream::<blowfish::Blowfish>(key, iv, src, chunk, sink),
        "twofish-cbc" => cbc_stream::<twofish::Twofish>(key, iv, src, chunk, sink),
        _ => Err(format!("no cipher {name}")),
    }
}

pub fn mac(name: &str, key: &[u8], msg: &[u8]) -> R<Vec<u8>> {
    if name == "hmac-sha384" {
        let mut m = <Hmac<Sha384> as Mac>::new_from_slice(key).map_err(e)?;
        m.update(msg);
        return Ok(m.finalize().into_bytes().to_vec());
    }
    let mut m = <Hmac<Sha256> as Mac>::new_from_slice(key).map_err(e)?;
    m.update(msg);
    Ok(m.finalize().into_bytes().to_vec())
}

pub fn stream_mac(name: &str, key: &[u8], src: &mut dyn Read, chunk: usize) -> R<Vec<u8>> {
    let mut buf = vec![0u8; chunk];
    macro_rules! run {
        ($h:ty) => {{
            let mut m = <Hmac<$h> as Mac>::new_from_slice(key).map_err(e)?;
            loop {
                let n = read_full(src, &mut buf)?;
                m.update(&buf[..n]);
                if n < chunk {
                    break;
                }
            }
            Ok(m.finalize().into_bytes().to_vec())
        }};
    }
    if name == "hmac-sha384" { run!(Sha384) } else { run!(Sha256) }
}

/// ECDSA keys of one curve.
pub enum EcKey {
    P256(p256::ecdsa::SigningKey, p256::ecdsa::VerifyingKey),
    P384(p384::ecdsa::SigningKey, p384::ecdsa::VerifyingKey),
}

impl EcKey {
    pub fn load(name: &str, private_der: &[u8], public_der: &[u8]) -> R<EcKey> {
        if name == "ecdsa-p384" {
            return Ok(EcKey::P384(
                p384::ecdsa::SigningKey::from_pkcs8_der(private_der).map_err(e)?,
                p384::ecdsa::VerifyingKey::from_public_key_der(public_der).map_err(e)?,
            ));
        }
        Ok(EcKey::P256(
            p256::ecdsa::SigningKey::from_pkcs8_der(private_der).map_err(e)?,
            p256::ecdsa::VerifyingKey::from_public_key_der(public_der).map_err(e)?,
        ))
    }

    pub fn sign(&self, msg: &[u8]) -> Vec<u8> {
        use p256::ecdsa::signature::Signer;
        match self {
            EcKey::P256(sk, _) => {
                let s: p256::ecdsa::Signature = sk.sign(msg);
                s.to_der().as_bytes().to_vec()
            }
            EcKey::P384(sk, _) => {
                let s: p384::ecdsa::Signature = sk.sign(msg);
                s.to_der().as_bytes().to_vec()
            }
        }
    }

    pub fn verify(&self, msg: &[u8], sig: &[u8]) -> bool {
        use p256::ecdsa::signature::Verifier;
        match self {
            EcKey::P256(_, vk) => p256::ecdsa::Signature::from_der(sig).map(|s| vk.verify(msg, &s).is_ok()).unwrap_or(false),
            EcKey::P384(_, vk) => p384::ecdsa::Signature::from_der(sig).map(|s| vk.verify(msg, &s).is_ok()).unwrap_or(false),
        }
    }
}

pub fn rsa_keys(private_der: &[u8], public_der: &[u8]) -> R<(RsaPrivateKey, RsaPublicKey)> {
    Ok((
        RsaPrivateKey::from_pkcs8_der(private_der).map_err(e)?,
        RsaPublicKey::from_public_key_der(public_der).map_err(e)?,
    ))
}

pub fn wrap(public: &RsaPublicKey, data_key: &[u8]) -> R<Vec<u8>> {
    public.encrypt(&mut rand::rngs::OsRng, Oaep::new::<Sha256>(), data_key).map_err(e)
}

pub fn unwrap(private: &RsaPrivateKey, wrapped: &[u8]) -> R<Vec<u8>> {
    private.decrypt(Oaep::new::<Sha256>(), wrapped).map_err(e)
}

/// Wrapped fresh data key || nonce || AES-256-GCM(payload).
pub fn hybrid_encrypt(public: &RsaPublicKey, pt: &[u8]) -> R<Vec<u8>> {
    let data_key = rand_bytes(32);
    let nonce = rand_bytes(12);
    let mut out = wrap(public, &data_key)?;
    out.extend_from_slice(&nonce);
    out.extend_from_slice(&encrypt("aes-gcm", &data_key, &nonce, pt)?);
    Ok(out)
}

pub fn hybrid_decrypt(private: &RsaPrivateKey, blob: &[u8]) -> R<Vec<u8>> {
    use rsa::traits::PublicKeyParts;
    let k = private.size();
    let data_key = unwrap(private, &blob[..k])?;
    decrypt("aes-gcm", &data_key, &blob[k..k + 12], &blob[k + 12..])
}
