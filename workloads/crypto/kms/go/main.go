// testbed-kms: the key-service part of workloads/crypto/CONTRACT.md in Go (aws-sdk-go-v2).
// Each call to the key service is timed alone (round trip); local AES-256-GCM apart.
package main

import (
	"bytes"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"runtime"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/aws/aws-sdk-go-v2/service/kms/types"
)

type timings map[string][]int64

func (t timings) add(name string, t0 time.Time) { t[name] = append(t[name], time.Since(t0).Nanoseconds()) }

type job struct {
	c           *kms.Client
	key, spec   string
	payload     []byte
	t           timings
	ctx         context.Context
	noncePrefix []byte
}

func gcm(key []byte) (cipher.AEAD, error) {
	b, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(b)
}

func (j *job) envelope(i uint32) error {
	var dk, wrapped []byte
	var alg types.EncryptionAlgorithmSpec
	if j.spec == "SYMMETRIC_DEFAULT" {
		t0 := time.Now()
		o, err := j.c.GenerateDataKey(j.ctx, &kms.GenerateDataKeyInput{KeyId: &j.key, KeySpec: types.DataKeySpecAes256})
		if err != nil {
			return err
		}
		j.t.add("generate_data_key", t0)
		dk, wrapped = o.Plaintext, o.CiphertextBlob
	} else {
		dk = make([]byte, 32)
		if _, err := rand.Read(dk); err != nil {
			return err
		}
		alg = types.EncryptionAlgorithmSpecRsaesOaepSha256
		t0 := time.Now()
		o, err := j.c.Encrypt(j.ctx, &kms.EncryptInput{KeyId: &j.key, Plaintext: dk, EncryptionAlgorithm: alg})
		if err != nil {
			return err
		}
		j.t.add("encrypt", t0)
		wrapped = o.CiphertextBlob
	}
	nonce := binary.BigEndian.AppendUint32(append([]byte{}, j.noncePrefix...), i)
	t0 := time.Now()
	g, err := gcm(dk)
	if err != nil {
		return err
	}
	ct := g.Seal(nil, nonce, j.payload, nil)
	j.t.add("local_encrypt", t0)
	t0 = time.Now()
	o, err := j.c.Decrypt(j.ctx, &kms.DecryptInput{KeyId: &j.key, CiphertextBlob: wrapped, EncryptionAlgorithm: alg})
	if err != nil {
		return err
	}
	j.t.add("decrypt", t0)
	t0 = time.Now()
	g, err = gcm(o.Plaintext)
	if err != nil {
		return err
	}
	back, err := g.Open(nil, nonce, ct, nil)
	if err != nil {
		return err
	}
	j.t.add("local_decrypt", t0)
	if !bytes.Equal(back, j.payload) {
		return errors.New("envelope round trip returned a different payload")
	}
	return nil
}

func (j *job) sign() error {
	alg := map[string]types.SigningAlgorithmSpec{
		"ECC_NIST_P256": types.SigningAlgorithmSpecEcdsaSha256, "ECC_NIST_P384": types.SigningAlgorithmSpecEcdsaSha384,
	}[j.spec]
	if alg == "" {
		alg = types.SigningAlgorithmSpecRsassaPssSha256
	}
	t0 := time.Now()
	o, err := j.c.Sign(j.ctx, &kms.SignInput{KeyId: &j.key, Message: j.payload, MessageType: types.MessageTypeRaw, SigningAlgorithm: alg})
	if err != nil {
		return err
	}
	j.t.add("sign", t0)
	t0 = time.Now()
	v, err := j.c.Verify(j.ctx, &kms.VerifyInput{KeyId: &j.key, Message: j.payload, MessageType: types.MessageTypeRaw,
		Signature: o.Signature, SigningAlgorithm: alg})
	if err != nil {
		return err
	}
	j.t.add("verify", t0)
	if !v.SignatureValid {
		return errors.New("key service did not verify its own signature")
	}
	return nil
}

func (j *job) mac() error {
	alg := types.MacAlgorithmSpecHmacSha256
	if j.spec == "HMAC_384" {
		alg = types.MacAlgorithmSpecHmacSha384
	}
	t0 := time.Now()
	o, err := j.c.GenerateMac(j.ctx, &kms.GenerateMacInput{KeyId: &j.key, Message: j.payload, MacAlgorithm: alg})
	if err != nil {
		return err
	}
	j.t.add("generate_mac", t0)
	t0 = time.Now()
	v, err := j.c.VerifyMac(j.ctx, &kms.VerifyMacInput{KeyId: &j.key, Message: j.payload, Mac: o.Mac, MacAlgorithm: alg})
	if err != nil {
		return err
	}
	j.t.add("verify_mac", t0)
	if !v.MacValid {
		return errors.New("key service did not verify its own MAC")
	}
	return nil
}

func fail(code int, err error) {
	out, _ := json.Marshal(map[string]string{"error": err.Error()})
	fmt.Println(string(out))
	os.Exit(code)
}

func main() {
	if len(os.Args) < 2 || os.Args[1] != "run" {
		if len(os.Args) > 1 && (os.Args[1] == "-h" || os.Args[1] == "--help") {
			fmt.Fprintln(os.Stderr, "usage: testbed-kms run --endpoint URL --region R --key-id ID --key-spec SPEC --usage USAGE --iterations N --payload-bytes N")
			os.Exit(0)
		}
		fail(2, errors.New("missing or unknown subcommand: run"))
	}
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	endpoint := fs.String("endpoint", "", "key service URL")
	region := fs.String("region", "us-east-1", "region")
	key := fs.String("key-id", "", "key id")
	spec := fs.String("key-spec", "", "KMS key spec")
	usage := fs.String("usage", "", "KMS key usage")
	iters := fs.Int("iterations", 30, "round trips")
	size := fs.Int("payload-bytes", 4096, "payload size")
	if err := fs.Parse(os.Args[2:]); err != nil {
		fail(2, err)
	}
	if *endpoint == "" || *key == "" || *spec == "" || *usage == "" {
		fail(2, errors.New("--endpoint, --key-id, --key-spec and --usage are required"))
	}
	t := timings{}
	t0 := time.Now()
	id, secret := os.Getenv("AWS_ACCESS_KEY_ID"), os.Getenv("AWS_SECRET_ACCESS_KEY")
	if id == "" {
		id, secret = "testing", "testing"
	}
	client := kms.New(kms.Options{
		Region: *region, BaseEndpoint: aws.String(*endpoint),
		Credentials: credentials.NewStaticCredentialsProvider(id, secret, ""),
	})
	t.add("client_init", t0)
	j := &job{c: client, key: *key, spec: *spec, payload: make([]byte, *size), t: t, ctx: context.Background(),
		noncePrefix: make([]byte, 8)}
	if _, err := rand.Read(j.payload); err != nil {
		fail(1, err)
	}
	if _, err := rand.Read(j.noncePrefix); err != nil {
		fail(1, err)
	}
	for i := 0; i < *iters; i++ {
		var err error
		switch *usage {
		case "ENCRYPT_DECRYPT":
			err = j.envelope(uint32(i))
		case "SIGN_VERIFY":
			err = j.sign()
		case "GENERATE_VERIFY_MAC":
			err = j.mac()
		default:
			fail(2, fmt.Errorf("unknown --usage %s", *usage))
		}
		if err != nil {
			fail(1, err)
		}
	}
	out, _ := json.Marshal(map[string]any{
		"contract": 1, "language": "go", "runtime": runtime.Version(),
		"library": "aws-sdk-go-v2 service/kms; local AES-256-GCM: Go stdlib crypto",
		"key_spec": *spec, "usage": *usage, "payload_bytes": *size, "iterations": *iters, "times_ns": t,
	})
	fmt.Println(string(out))
}
