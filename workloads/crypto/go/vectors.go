package main

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/rand"
	"crypto/rsa"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"strings"
)

type vector struct {
	ID         string `json:"id"`
	Alg        string `json:"alg"`
	KeyBits    int    `json:"key_bits"`
	Key        string `json:"key"`
	IV         string `json:"iv"`
	Plaintext  string `json:"plaintext"`
	Ciphertext string `json:"ciphertext"`
	ChunkBytes int    `json:"chunk_bytes"`
	Message    string `json:"message"`
	Mac        string `json:"mac"`
	PrivateKey string `json:"private_key"`
	PublicKey  string `json:"public_key"`
	Signature  string `json:"signature"`
	DataKey    string `json:"data_key"`
	WrappedKey string `json:"wrapped_key"`
}

func loadVectors(path string) ([]vector, error) {
	if path == "" {
		return nil, usageErr("--vectors is required")
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var doc struct {
		Vectors []vector `json:"vectors"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	return doc.Vectors, nil
}

func unhex(s string) ([]byte, error) { return hex.DecodeString(s) }

func mustHex(s string, problems *[]string, field string) []byte {
	b, err := unhex(s)
	if err != nil {
		*problems = append(*problems, field+" is not hex")
	}
	return b
}

// checkOne runs one vector; it returns the problems found and what it produced itself.
func checkOne(v vector) ([]string, map[string]string) {
	var p []string
	produced := map[string]string{}
	a, ok := algByName(v.Alg)
	if !ok {
		return []string{"unknown alg " + v.Alg}, produced
	}
	switch a.kind {
	case "cipher":
		key, iv := mustHex(v.Key, &p, "key"), mustHex(v.IV, &p, "iv")
		pt, ct := mustHex(v.Plaintext, &p, "plaintext"), mustHex(v.Ciphertext, &p, "ciphertext")
		if len(p) > 0 {
			return p, produced
		}
		var got []byte
		var err error
		if v.ChunkBytes > 0 {
			var out bytes.Buffer
			err = streamEncrypt(a.name, key, iv, bytes.NewReader(pt), v.ChunkBytes,
				func(b []byte) { out.Write(b) })
			got = out.Bytes()
		} else {
			got, err = encrypt(a.name, key, iv, pt)
			if err == nil {
				back, derr := decrypt(a.name, key, iv, ct)
				if derr != nil || !bytes.Equal(back, pt) {
					p = append(p, "decryption differs")
				}
			}
		}
		if err != nil {
			return append(p, err.Error()), produced
		}
		if !bytes.Equal(got, ct) {
			p = append(p, "ciphertext differs: got "+hex.EncodeToString(got)[:min(32, 2*len(got))]+"...")
		}
	case "mac":
		got := mac(a.name, mustHex(v.Key, &p, "key"), mustHex(v.Message, &p, "message"))
		if !bytes.Equal(got, mustHex(v.Mac, &p, "mac")) {
			p = append(p, "mac differs")
		}
	case "sign":
		priv, pub, err := parseKeys(v.PrivateKey, v.PublicKey)
		if err != nil {
			return []string{err.Error()}, produced
		}
		pk, ok1 := priv.(*ecdsa.PrivateKey)
		qk, ok2 := pub.(*ecdsa.PublicKey)
		if !ok1 || !ok2 {
			return []string{"keys are not ECDSA keys"}, produced
		}
		msg, sig := mustHex(v.Message, &p, "message"), mustHex(v.Signature, &p, "signature")
		if !ecdsa.VerifyASN1(qk, digest(a.name, msg), sig) {
			p = append(p, "given signature does not verify")
		}
		if ecdsa.VerifyASN1(qk, digest(a.name, append(append([]byte{}, msg...), 'x')), sig) {
			p = append(p, "signature verifies a different message")
		}
		own, err := ecdsa.SignASN1(rand.Reader, pk, digest(a.name, msg))
		if err != nil || !ecdsa.VerifyASN1(qk, digest(a.name, msg), own) {
			p = append(p, "own signature does not verify")
		}
		produced["signature"] = hex.EncodeToString(own)
	case "hybrid":
		priv, _, err := parseKeys(v.PrivateKey, v.PublicKey)
		if err != nil {
			return []string{err.Error()}, produced
		}
		pk, ok := priv.(*rsa.PrivateKey)
		if !ok {
			return []string{"key is not an RSA key"}, produced
		}
		dataKey := mustHex(v.DataKey, &p, "data_key")
		got, err := unwrap(pk, mustHex(v.WrappedKey, &p, "wrapped_key"))
		if err != nil || !bytes.Equal(got, dataKey) {
			p = append(p, "unwrapped data key differs")
		}
		ct, err := encrypt("aes-gcm", dataKey, mustHex(v.IV, &p, "iv"), mustHex(v.Plaintext, &p, "plaintext"))
		if err != nil || !bytes.Equal(ct, mustHex(v.Ciphertext, &p, "ciphertext")) {
			p = append(p, "payload ciphertext differs")
		}
		own, err := wrap(&pk.PublicKey, dataKey)
		if err == nil {
			back, uerr := unwrap(pk, own)
			if uerr != nil || !bytes.Equal(back, dataKey) {
				p = append(p, "own wrapped key does not unwrap")
			}
			produced["wrapped_key"] = hex.EncodeToString(own)
		} else {
			p = append(p, err.Error())
		}
	}
	return p, produced
}

func checkVectors(vecs []vector, only string) map[string]any {
	results := []map[string]any{}
	unsupported := []any{}
	passed := 0
	for _, v := range vecs {
		if only != "" && v.Alg != only {
			continue
		}
		if _, ok := algByName(v.Alg); !ok { // an algorithm of the contract this program does not do
			unsupported = append(unsupported, map[string]any{"id": v.ID, "reason": v.Alg + " is not implemented in Go"})
			continue
		}
		problems, produced := checkOne(v)
		var errv any
		if len(problems) > 0 {
			errv = strings.Join(problems, "; ")
		} else {
			passed++
		}
		results = append(results, map[string]any{"id": v.ID, "ok": len(problems) == 0, "error": errv,
			"produced": produced})
	}
	return map[string]any{"language": "go", "results": results, "passed": passed,
		"failed": len(results) - passed, "unsupported": unsupported}
}
