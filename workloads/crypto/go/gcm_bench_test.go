package main

// Go's own benchmark (testing.B) of the AES-256-GCM library calls one operation of this program
// makes in bench/crypto_throughput.py's two patterns, without the program around them (its
// dispatch, nonce bookkeeping and per-operation clock reads): the reference its harness is held to.
//
//	go test -run '^$' -bench '^BenchmarkGCM' -benchtime 2s
//
// Besides ns/op (wall) each benchmark reports cpu-ns/op: the process's CPU time (getrusage, all
// threads, like the harness's cpu_ns) over the b.N operations, so a busy machine does not count.
// Buffer sizes: GCM_STREAM_BYTES (default 1 MiB) and GCM_MESSAGE_BYTES (default 16 KiB).

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/binary"
	"os"
	"strconv"
	"syscall"
	"testing"
)

func cpuNs() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

func sizeFrom(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

func random(b *testing.B, n int) []byte {
	buf := make([]byte, n)
	if _, err := rand.Read(buf); err != nil {
		b.Fatal(err)
	}
	return buf
}

// BenchmarkGCMStream: the bulk pattern (--update-bytes): one AEAD, the whole payload sealed in place
// in one reused buffer per operation with a fresh nonce (bulkGCM's call).
func BenchmarkGCMStream(b *testing.B) {
	size := sizeFrom("GCM_STREAM_BYTES", 1<<20)
	block, err := aes.NewCipher(random(b, 32))
	if err != nil {
		b.Fatal(err)
	}
	g, err := cipher.NewGCM(block)
	if err != nil {
		b.Fatal(err)
	}
	buf := make([]byte, size, size+g.Overhead())
	copy(buf, random(b, size))
	nonce := random(b, 12)
	b.SetBytes(int64(size))
	b.ResetTimer()
	c0 := cpuNs()
	for i := 0; i < b.N; i++ {
		binary.BigEndian.PutUint32(nonce[8:], uint32(i))
		g.Seal(buf[:0], nonce, buf[:size], nil)
	}
	b.ReportMetric(float64(cpuNs()-c0)/float64(b.N), "cpu-ns/op")
}

// BenchmarkGCMMessages: the messages pattern: per message a new cipher and AEAD and a sealed copy
// (encrypt's calls: aes.NewCipher, cipher.NewGCM, Seal into a new slice).
func BenchmarkGCMMessages(b *testing.B) {
	size := sizeFrom("GCM_MESSAGE_BYTES", 16384)
	key, pt, nonce := random(b, 32), random(b, size), random(b, 12)
	b.SetBytes(int64(size))
	b.ResetTimer()
	c0 := cpuNs()
	for i := 0; i < b.N; i++ {
		binary.BigEndian.PutUint32(nonce[8:], uint32(i))
		block, err := aes.NewCipher(key)
		if err != nil {
			b.Fatal(err)
		}
		g, err := cipher.NewGCM(block)
		if err != nil {
			b.Fatal(err)
		}
		_ = g.Seal(nil, nonce, pt, nil)
	}
	b.ReportMetric(float64(cpuNs()-c0)/float64(b.N), "cpu-ns/op")
}
