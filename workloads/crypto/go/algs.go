package main

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/des"
	"crypto/ecdsa"
	"crypto/hmac"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/x509"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"

	"golang.org/x/crypto/blowfish"
	"golang.org/x/crypto/cast5"
	"golang.org/x/crypto/twofish"
)

const xcryptoVersion = "v0.58.0"

type alg struct {
	name, kind    string // kind: cipher | mac | sign | hybrid
	keyBits       []int
	ops           []string
	mode, padding string
	block         int
}

var cipherOps = []string{"encrypt", "decrypt"}

var algs = []alg{
	{"aes-gcm", "cipher", []int{128, 192, 256}, cipherOps, "GCM, 96-bit nonce, 128-bit tag", "none", 16},
	{"aes-ctr", "cipher", []int{128, 192, 256}, cipherOps, "CTR, 128-bit counter", "none", 16},
	{"aes-cbc", "cipher", []int{128, 192, 256}, cipherOps, "CBC", "PKCS#7", 16},
	{"3des-cbc", "cipher", []int{192, 128}, cipherOps, "EDE (192: 3 keys; 128: 2 keys, K1 K2 K1), CBC", "PKCS#7", 8},
	{"cast128-cbc", "cipher", []int{128}, cipherOps, "CBC", "PKCS#7", 8},
	{"blowfish-cbc", "cipher", []int{128, 256, 448, 64}, cipherOps, "CBC", "PKCS#7", 8},
	{"twofish-cbc", "cipher", []int{128, 192, 256}, cipherOps, "CBC", "PKCS#7", 16},
	{"hmac-sha256", "mac", []int{256}, []string{"mac"}, "HMAC", "none", 0},
	{"hmac-sha384", "mac", []int{384}, []string{"mac"}, "HMAC", "none", 0},
	{"ecdsa-p256", "sign", []int{256}, []string{"sign", "verify"}, "ECDSA with SHA-256, DER signature", "none", 0},
	{"ecdsa-p384", "sign", []int{384}, []string{"sign", "verify"}, "ECDSA with SHA-384, DER signature", "none", 0},
	{"rsa-oaep", "hybrid", []int{2048, 3072, 4096}, cipherOps,
		"RSA-OAEP(SHA-256, MGF1-SHA-256) wraps a 256-bit key; AES-256-GCM payload", "OAEP", 0},
}

func algByName(name string) (alg, bool) {
	for _, a := range algs {
		if a.name == name {
			return a, true
		}
	}
	return alg{}, false
}

func randBytes(n int) []byte {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return b
}

func newBlock(name string, key []byte) (cipher.Block, error) {
	switch name {
	case "aes-gcm", "aes-ctr", "aes-cbc":
		return aes.NewCipher(key)
	case "3des-cbc":
		if len(key) == 16 { // two-key 3DES: K1 K2 K1
			key = append(append([]byte{}, key...), key[:8]...)
		}
		return des.NewTripleDESCipher(key)
	case "cast128-cbc":
		return cast5.NewCipher(key)
	case "blowfish-cbc":
		return blowfish.NewCipher(key)
	case "twofish-cbc":
		return twofish.NewCipher(key)
	}
	return nil, fmt.Errorf("no block cipher %s", name)
}

func pkcs7(data []byte, block int) []byte {
	pad := block - len(data)%block
	out := make([]byte, len(data), len(data)+pad)
	copy(out, data)
	return append(out, bytes.Repeat([]byte{byte(pad)}, pad)...)
}

func encrypt(name string, key, iv, pt []byte) ([]byte, error) {
	b, err := newBlock(name, key)
	if err != nil {
		return nil, err
	}
	switch name {
	case "aes-gcm":
		g, err := cipher.NewGCM(b)
		if err != nil {
			return nil, err
		}
		return g.Seal(nil, iv, pt, nil), nil
	case "aes-ctr":
		out := make([]byte, len(pt))
		cipher.NewCTR(b, iv).XORKeyStream(out, pt)
		return out, nil
	}
	out := pkcs7(pt, b.BlockSize())
	cipher.NewCBCEncrypter(b, iv).CryptBlocks(out, out)
	return out, nil
}

func decrypt(name string, key, iv, ct []byte) ([]byte, error) {
	b, err := newBlock(name, key)
	if err != nil {
		return nil, err
	}
	switch name {
	case "aes-gcm":
		g, err := cipher.NewGCM(b)
		if err != nil {
			return nil, err
		}
		return g.Open(nil, iv, ct, nil)
	case "aes-ctr":
		out := make([]byte, len(ct))
		cipher.NewCTR(b, iv).XORKeyStream(out, ct)
		return out, nil
	}
	bs := b.BlockSize()
	if len(ct) == 0 || len(ct)%bs != 0 {
		return nil, errors.New("ciphertext is not whole blocks")
	}
	out := make([]byte, len(ct))
	cipher.NewCBCDecrypter(b, iv).CryptBlocks(out, ct)
	pad := int(out[len(out)-1])
	if pad == 0 || pad > bs || !bytes.Equal(out[len(out)-pad:], bytes.Repeat([]byte{byte(pad)}, pad)) {
		return nil, errors.New("bad padding")
	}
	return out[:len(out)-pad], nil
}

// streamEncrypt encrypts src chunk by chunk; GCM seals every chunk as its own message.
func streamEncrypt(name string, key, iv []byte, src io.Reader, chunk int, sink func([]byte)) error {
	b, err := newBlock(name, key)
	if err != nil {
		return err
	}
	buf := make([]byte, chunk)
	var g cipher.AEAD
	var ctr cipher.Stream
	var cbc cipher.BlockMode
	switch name {
	case "aes-gcm":
		if g, err = cipher.NewGCM(b); err != nil {
			return err
		}
	case "aes-ctr":
		ctr = cipher.NewCTR(b, iv)
	default:
		cbc = cipher.NewCBCEncrypter(b, iv)
	}
	nonce := make([]byte, 12)
	copy(nonce, iv[:8])
	var out []byte
	for i := uint32(0); ; i++ {
		n, err := io.ReadFull(src, buf)
		last := errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
		if err != nil && !last {
			return err
		}
		data := buf[:n]
		switch {
		case g != nil:
			if n > 0 {
				binary.BigEndian.PutUint32(nonce[8:], i)
				out = g.Seal(out[:0], nonce, data, nil)
				sink(out)
			}
		case ctr != nil:
			ctr.XORKeyStream(data, data)
			sink(data)
		default:
			if last {
				data = pkcs7(data, b.BlockSize())
			}
			cbc.CryptBlocks(data, data)
			sink(data)
		}
		if last {
			return nil
		}
	}
}

func hashFor(name string) func() hash.Hash {
	if name == "hmac-sha384" || name == "ecdsa-p384" {
		return sha512.New384
	}
	return sha256.New
}

func mac(name string, key, msg []byte) []byte {
	h := hmac.New(hashFor(name), key)
	h.Write(msg)
	return h.Sum(nil)
}

func digest(name string, msg []byte) []byte {
	h := hashFor(name)()
	h.Write(msg)
	return h.Sum(nil)
}

func parseKeys(privHex, pubHex string) (any, any, error) {
	pd, err := unhex(privHex)
	if err != nil {
		return nil, nil, err
	}
	qd, err := unhex(pubHex)
	if err != nil {
		return nil, nil, err
	}
	priv, err := x509.ParsePKCS8PrivateKey(pd)
	if err != nil {
		return nil, nil, err
	}
	pub, err := x509.ParsePKIXPublicKey(qd)
	return priv, pub, err
}

func wrap(pub *rsa.PublicKey, dataKey []byte) ([]byte, error) {
	return rsa.EncryptOAEP(sha256.New(), rand.Reader, pub, dataKey, nil)
}

func unwrap(priv *rsa.PrivateKey, wrapped []byte) ([]byte, error) {
	return rsa.DecryptOAEP(sha256.New(), nil, priv, wrapped, nil)
}

// hybridEncrypt: wrapped fresh data key || nonce || AES-256-GCM(payload).
func hybridEncrypt(pub *rsa.PublicKey, pt []byte) ([]byte, error) {
	dataKey, nonce := randBytes(32), randBytes(12)
	w, err := wrap(pub, dataKey)
	if err != nil {
		return nil, err
	}
	ct, err := encrypt("aes-gcm", dataKey, nonce, pt)
	if err != nil {
		return nil, err
	}
	return append(append(w, nonce...), ct...), nil
}

func hybridDecrypt(priv *rsa.PrivateKey, blob []byte) ([]byte, error) {
	k := priv.Size()
	dataKey, err := unwrap(priv, blob[:k])
	if err != nil {
		return nil, err
	}
	return decrypt("aes-gcm", dataKey, blob[k:k+12], blob[k+12:])
}

// makeOp prepares keys and data (untimed) and returns one operation as a function of its number.
func makeOp(a alg, s spec, payload []byte, vecs []vector) (func(int) error, error) {
	key := randBytes(s.keyBits / 8)
	prefix := randBytes(8)
	var priv, pub any
	if a.kind == "sign" || a.kind == "hybrid" {
		found := false
		for _, v := range vecs {
			if v.Alg == a.name && (v.KeyBits == 0 || v.KeyBits == s.keyBits) {
				var err error
				if priv, pub, err = parseKeys(v.PrivateKey, v.PublicKey); err != nil {
					return nil, err
				}
				found = true
				break
			}
		}
		if !found {
			return nil, usageErr("no vector with a %d-bit key for %s", s.keyBits, a.name)
		}
	}
	ivFor := func(n int) []byte {
		switch a.name {
		case "aes-gcm":
			return binary.BigEndian.AppendUint32(append([]byte{}, prefix...), uint32(n))
		case "aes-ctr":
			return append(binary.BigEndian.AppendUint32(append([]byte{}, prefix...), uint32(n)), 0, 0, 0, 0)
		}
		return randBytes(a.block)
	}
	openStream := func(f func(*os.File) error) error {
		fh, err := os.Open(s.stream)
		if err != nil {
			return err
		}
		defer fh.Close()
		return f(fh)
	}
	switch a.kind {
	case "cipher":
		if s.stream != "" {
			return func(int) error {
				return openStream(func(fh *os.File) error {
					return streamEncrypt(a.name, key, randBytes(a.block), fh, s.chunk, discard)
				})
			}, nil
		}
		if s.op == "encrypt" {
			return func(n int) error { _, err := encrypt(a.name, key, ivFor(n), payload); return err }, nil
		}
		iv0 := ivFor(0)
		ct, err := encrypt(a.name, key, iv0, payload)
		if err != nil {
			return nil, err
		}
		return func(int) error { _, err := decrypt(a.name, key, iv0, ct); return err }, nil
	case "mac":
		if s.stream != "" {
			return func(int) error {
				return openStream(func(fh *os.File) error {
					h := hmac.New(hashFor(a.name), key)
					_, err := io.CopyBuffer(h, fh, make([]byte, s.chunk))
					h.Sum(nil)
					return err
				})
			}, nil
		}
		return func(int) error { mac(a.name, key, payload); return nil }, nil
	case "sign":
		if s.stream != "" {
			return nil, usageErr("ecdsa takes --payload-bytes or --input, not --stream")
		}
		pk, ok := priv.(*ecdsa.PrivateKey)
		if !ok {
			return nil, usageErr("vector key of %s is not an ECDSA key", a.name)
		}
		if s.op == "sign" {
			return func(int) error { _, err := ecdsa.SignASN1(rand.Reader, pk, digest(a.name, payload)); return err }, nil
		}
		sig, err := ecdsa.SignASN1(rand.Reader, pk, digest(a.name, payload))
		if err != nil {
			return nil, err
		}
		qk := pub.(*ecdsa.PublicKey)
		return func(int) error {
			if !ecdsa.VerifyASN1(qk, digest(a.name, payload), sig) {
				return &codedError{exitVector, "own signature failed to verify"}
			}
			return nil
		}, nil
	}
	pk, ok := priv.(*rsa.PrivateKey)
	if !ok {
		return nil, usageErr("vector key of rsa-oaep is not an RSA key")
	}
	if s.stream != "" {
		return func(int) error {
			dataKey := randBytes(32)
			if _, err := wrap(&pk.PublicKey, dataKey); err != nil {
				return err
			}
			return openStream(func(fh *os.File) error {
				return streamEncrypt("aes-gcm", dataKey, randBytes(12), fh, s.chunk, discard)
			})
		}, nil
	}
	if s.op == "encrypt" {
		return func(int) error { _, err := hybridEncrypt(&pk.PublicKey, payload); return err }, nil
	}
	blob, err := hybridEncrypt(&pk.PublicKey, payload)
	if err != nil {
		return nil, err
	}
	return func(int) error { _, err := hybridDecrypt(pk, blob); return err }, nil
}
