// Command testbed-crypto: the Go implementation of workloads/crypto/CONTRACT.md
// (standard library crypto plus golang.org/x/crypto for CAST-128, Blowfish and Twofish).
package main

import (
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
	"slices"
	"syscall"
	"time"
)

const contract = 2

// exit codes of the contract
const (
	exitOther       = 1
	exitUsage       = 2
	exitVector      = 3
	exitUnsupported = 4
)

type codedError struct {
	code int
	msg  string
}

func (e *codedError) Error() string { return e.msg }

func usageErr(format string, a ...any) error {
	return &codedError{exitUsage, fmt.Sprintf(format, a...)}
}

func library() string {
	return "Go crypto (standard library) + golang.org/x/crypto " + xcryptoVersion
}

func main() {
	out, err := dispatch(os.Args[1:])
	code := 0
	if err != nil {
		code = exitOther
		var ce *codedError
		if errors.As(err, &ce) {
			code = ce.code
		}
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		out = map[string]any{"error": err.Error()}
	}
	if failed, ok := out["failed"].(int); ok && failed > 0 && code == 0 {
		code = exitVector
	}
	enc := json.NewEncoder(os.Stdout)
	if e := enc.Encode(out); e != nil {
		os.Exit(exitOther)
	}
	os.Exit(code)
}

func dispatch(args []string) (map[string]any, error) {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" {
		fmt.Fprintln(os.Stderr, "usage: testbed-crypto info | check --vectors FILE | run --alg NAME ... (see CONTRACT.md)")
		if len(args) == 0 {
			return nil, usageErr("missing subcommand: info, check or run")
		}
		return nil, flag.ErrHelp
	}
	switch args[0] {
	case "info":
		names := []string{}
		for _, a := range algs {
			names = append(names, a.name)
		}
		return map[string]any{"language": "go", "runtime": runtime.Version(), "library": library(),
			"algorithms": names, "unsupported": map[string]string{}}, nil
	case "check":
		fs := flag.NewFlagSet("check", flag.ContinueOnError)
		path := fs.String("vectors", "", "vector file (required)")
		if err := fs.Parse(args[1:]); err != nil {
			return nil, wrapFlagErr(err)
		}
		vecs, err := loadVectors(*path)
		if err != nil {
			return nil, err
		}
		return checkVectors(vecs, ""), nil
	case "run":
		return runCmd(args[1:])
	}
	return nil, usageErr("unknown subcommand %q: info, check or run", args[0])
}

func wrapFlagErr(err error) error {
	if errors.Is(err, flag.ErrHelp) {
		return err
	}
	return usageErr("%v", err)
}

type spec struct {
	alg, op, input, stream, vectors             string
	keyBits, payload, chunk, iterations, warmup int
	warmupS, tolerance                          float64
	update                                      int
}

func runCmd(args []string) (map[string]any, error) {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	var s spec
	fs.StringVar(&s.alg, "alg", "", "algorithm name (required)")
	fs.IntVar(&s.keyBits, "key-bits", 0, "key size in bits")
	fs.StringVar(&s.op, "op", "", "encrypt, decrypt, sign, verify or mac")
	fs.IntVar(&s.payload, "payload-bytes", -1, "random payload size")
	fs.StringVar(&s.input, "input", "", "payload file, read before timing")
	fs.StringVar(&s.stream, "stream", "", "file streamed by each operation")
	fs.IntVar(&s.chunk, "chunk-bytes", 1<<20, "block size of --stream")
	fs.IntVar(&s.iterations, "iterations", 0, "timed operations (required)")
	fs.IntVar(&s.warmup, "warmup", 0, "untimed operations after the cold one")
	fs.StringVar(&s.vectors, "vectors", "", "vector file (required)")
	fs.IntVar(&s.update, "update-bytes", 0, "aes-gcm encrypt: one message per op through one context")
	fs.Float64Var(&s.warmupS, "warmup-s", 0, "time-based warm-up: at most this many seconds")
	fs.Float64Var(&s.tolerance, "tolerance", 0.05, "steady state: successive batches agree within this fraction")
	if err := fs.Parse(args); err != nil {
		return nil, wrapFlagErr(err)
	}
	return run(s)
}

func run(s spec) (map[string]any, error) {
	a, ok := algByName(s.alg)
	if !ok {
		return nil, usageErr("unknown alg %q", s.alg)
	}
	if s.keyBits == 0 {
		s.keyBits = a.keyBits[0]
	}
	if !containsInt(a.keyBits, s.keyBits) {
		return nil, usageErr("%s takes key_bits %v, got %d", a.name, a.keyBits, s.keyBits)
	}
	if s.op == "" {
		s.op = a.ops[0]
	}
	if !containsStr(a.ops, s.op) {
		return nil, usageErr("%s takes op %v, got %q", a.name, a.ops, s.op)
	}
	if s.warmupS < 0 || s.tolerance <= 0 || s.tolerance >= 1 {
		return nil, usageErr("warmup-s must be >= 0 and tolerance in (0, 1)")
	}
	if s.iterations < 1 || s.warmup < 0 {
		return nil, usageErr("iterations must be >= 1 and warmup >= 0")
	}
	if s.chunk < 16 || s.chunk%16 != 0 {
		return nil, usageErr("chunk_bytes must be a positive multiple of 16")
	}
	sources := 0
	for _, set := range []bool{s.payload >= 0, s.input != "", s.stream != ""} {
		if set {
			sources++
		}
	}
	if sources != 1 {
		return nil, usageErr("give exactly one of --payload-bytes, --input, --stream")
	}
	var payload []byte
	size := 0
	switch {
	case s.payload >= 0:
		payload = randBytes(s.payload)
		size = s.payload
	case s.input != "":
		data, err := os.ReadFile(s.input)
		if err != nil {
			return nil, err
		}
		payload, size = data, len(data)
	default:
		if s.op != "encrypt" && s.op != "mac" {
			return nil, usageErr("--stream takes op encrypt or mac")
		}
		st, err := os.Stat(s.stream)
		if err != nil {
			return nil, err
		}
		size = int(st.Size())
	}
	vecs, err := loadVectors(s.vectors)
	if err != nil {
		return nil, err
	}
	report := checkVectors(vecs, a.name)
	results := report["results"].([]map[string]any)
	if report["failed"].(int) > 0 || len(results) == 0 {
		why := "no vector for this algorithm"
		for _, r := range results {
			if !r["ok"].(bool) {
				why = fmt.Sprintf("%s: %v", r["id"], r["error"])
				break
			}
		}
		return nil, &codedError{exitVector, "vector check failed before timing: " + why}
	}
	do, err := makeOp(a, s, payload, vecs)
	if err != nil {
		return nil, err
	}
	if s.update > 0 {
		if a.name != "aes-gcm" || s.op != "encrypt" || payload == nil || s.update%16 != 0 {
			return nil, usageErr("update-bytes: aes-gcm encrypt of an in-memory payload, a multiple of 16")
		}
		if do, err = bulkGCM(s.keyBits, payload); err != nil {
			return nil, err
		}
	}
	t0 := time.Now()
	if err := do(0); err != nil {
		return nil, err
	}
	cold := time.Since(t0).Nanoseconds()
	for i := 0; i < s.warmup; i++ {
		if err := do(1 + i); err != nil {
			return nil, err
		}
	}
	st, err := steadyWarmup(do, 1+s.warmup, s.warmupS, s.tolerance)
	if err != nil {
		return nil, err
	}
	s.warmup += st.ops
	times := make([]int64, 0, s.iterations)
	w0 := time.Now() // the wall window encloses the CPU window
	u0, s0 := rusage()
	for i := 0; i < s.iterations; i++ {
		t := time.Now()
		if err := do(1 + s.warmup + i); err != nil {
			return nil, err
		}
		times = append(times, time.Since(t).Nanoseconds())
	}
	u1, s1 := rusage()
	wall := time.Since(w0).Nanoseconds()
	input := "memory"
	if s.stream != "" {
		input = "stream"
	}
	return map[string]any{
		"contract": contract, "language": "go", "runtime": runtime.Version(), "library": library(),
		"alg": a.name, "key_bits": s.keyBits, "op": s.op, "mode": a.mode, "padding": a.padding,
		"payload_bytes": size, "input": input, "update_bytes": s.update, "iterations": s.iterations, "warmup": s.warmup,
		"vectors": map[string]int{"checked": len(results), "passed": report["passed"].(int)},
		"cold_ns": cold, "times_ns": times, "wall_ns": wall,
		"warmup_ns": st.ns, "steady": st.steady, "warmup_batches_ns": st.batches,
		"cpu_user_ns": u1 - u0, "cpu_sys_ns": s1 - s0, "cpu_ns": (u1 - u0) + (s1 - s0),
		"process_cpu_ns": u1 + s1,
	}, nil
}

func rusage() (int64, int64) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, 0
	}
	return ru.Utime.Nano(), ru.Stime.Nano()
}

func containsInt(xs []int, x int) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

func containsStr(xs []string, x string) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

// discard is the sink of timed stream operations: ciphertext is not kept.
func discard([]byte) {}

type steadyState struct {
	ops     int
	ns      int64
	steady  any // nil when no time-based warm-up was asked for
	batches []int64
}

// steadyWarmup runs batches of >= 10 ms (CONTRACT.md) until 3 successive per-op means agree within
// tolerance of their median, or the time is up.
func steadyWarmup(do func(int) error, first int, seconds, tolerance float64) (steadyState, error) {
	st := steadyState{batches: []int64{}}
	if seconds <= 0 {
		return st, nil
	}
	start := time.Now()
	limit := time.Duration(seconds * 1e9)
	batch := max(10*time.Millisecond, limit/50)
	n, size := first, 1
	for {
		t := time.Now()
		for i := 0; i < size; i++ {
			if err := do(n); err != nil {
				return st, err
			}
			n++
		}
		took := time.Since(t)
		if took < batch {
			size *= 2
			continue
		}
		st.batches = append(st.batches, took.Nanoseconds()/int64(size))
		ok := false
		if k := len(st.batches); k >= 3 {
			last := append([]int64{}, st.batches[k-3:]...)
			slices.Sort(last)
			ok = float64(last[2]-last[0]) <= tolerance*float64(last[1])
		}
		ok = ok && time.Since(start) >= limit/2 // at least half of the time (JIT tiers, caches)
		if ok || time.Since(start) >= limit {
			st.ops, st.ns, st.steady = n-first, time.Since(start).Nanoseconds(), ok
			return st, nil
		}
	}
}

// bulkGCM: one GCM message per operation, sealed in place in one reused buffer (CONTRACT.md
// --update-bytes; Go's AEAD has no incremental API, so the whole payload is one Seal call).
func bulkGCM(keyBits int, payload []byte) (func(int) error, error) {
	key := make([]byte, keyBits/8)
	prefix := make([]byte, 8)
	if _, err := rand.Read(key); err != nil {
		return nil, err
	}
	if _, err := rand.Read(prefix); err != nil {
		return nil, err
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	g, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	buf := make([]byte, len(payload), len(payload)+g.Overhead())
	copy(buf, payload)
	nonce := make([]byte, 12)
	copy(nonce, prefix)
	return func(n int) error {
		binary.BigEndian.PutUint32(nonce[8:], uint32(n))
		g.Seal(buf[:0], nonce, buf[:len(payload)], nil)
		return nil
	}, nil
}
