package testbed.crypto;

import com.google.gson.Gson;
import com.google.gson.JsonArray;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import java.io.BufferedInputStream;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.FileInputStream;
import java.io.InputStream;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.PrivateKey;
import java.security.PublicKey;
import java.security.Signature;
import java.security.interfaces.RSAKey;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import javax.crypto.Cipher;
import javax.crypto.Mac;

/** testbed-crypto: the Java implementation of workloads/crypto/CONTRACT.md. */
public final class Main {
    private static final HexFormat HEX = HexFormat.of();

    /** An error with the contract's exit code. */
    static final class Fail extends Exception {
        final int code;

        Fail(int code, String msg) {
            super(msg);
            this.code = code;
        }
    }

    /** One operation, given its number. */
    interface Op {
        void apply(int n) throws Exception;
    }

    private Main() {}

    public static void main(String[] args) {
        Object out;
        int code = 0;
        try {
            if (args.length == 0) {
                throw new Fail(2, "missing subcommand: info, check or run");
            }
            Map<String, String> flags = parseFlags(Arrays.copyOfRange(args, 1, args.length));
            switch (args[0]) {
                case "info" -> out = info();
                case "check" -> {
                    Map<String, Object> r = check(loadVectors(flags.get("vectors")), null);
                    code = ((Integer) r.get("failed")) > 0 ? 3 : 0;
                    out = r;
                }
                case "run" -> out = run(flags);
                case "-h", "--help" -> {
                    System.err.println("usage: testbed-crypto info | check --vectors FILE | run --alg NAME ...");
                    return;
                }
                default -> throw new Fail(2, "unknown subcommand " + args[0] + ": info, check or run");
            }
        } catch (Fail f) {
            out = Map.of("error", f.getMessage());
            code = f.code;
        } catch (Exception e) {
            out = Map.of("error", e.getClass().getSimpleName() + ": " + e.getMessage());
            code = 1;
        }
        System.out.println(new Gson().toJson(out));
        System.out.flush();
        System.exit(code);
    }

    static String runtime() {
        return System.getProperty("java.vm.name") + " " + System.getProperty("java.version");
    }

    static String library() {
        return "JCA (SunJCE) + " + Algs.bc().getInfo();
    }

    static Map<String, Object> info() {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("language", "java");
        m.put("runtime", runtime());
        m.put("library", library());
        m.put("algorithms", new ArrayList<>(Algs.ALGS.keySet()));
        m.put("unsupported", Map.of());
        return m;
    }

    static Map<String, String> parseFlags(String[] args) throws Fail {
        Map<String, String> out = new LinkedHashMap<>();
        for (int i = 0; i < args.length; i++) {
            if (args[i].equals("-h") || args[i].equals("--help")) {
                System.err.println("flags: --alg --key-bits --op --payload-bytes --input --stream --chunk-bytes"
                        + " --iterations --warmup --vectors");
                System.exit(0);
            }
            if (!args[i].startsWith("--") || i + 1 >= args.length) {
                throw new Fail(2, "expected --flag value, got " + args[i]);
            }
            out.put(args[i].substring(2), args[++i]);
        }
        return out;
    }

    static int intFlag(Map<String, String> flags, String name, Integer dflt) throws Fail {
        String v = flags.get(name);
        if (v == null) {
            if (dflt == null) {
                throw new Fail(2, "--" + name + " is required");
            }
            return dflt;
        }
        try {
            return Integer.parseInt(v);
        } catch (NumberFormatException e) {
            throw new Fail(2, "--" + name + " must be an integer, got " + v);
        }
    }

    static JsonArray loadVectors(String path) throws Exception {
        if (path == null) {
            throw new Fail(2, "--vectors is required");
        }
        return JsonParser.parseString(Files.readString(Path.of(path))).getAsJsonObject().getAsJsonArray("vectors");
    }

    static byte[] hx(JsonObject v, String key) {
        return HEX.parseHex(v.get(key).getAsString());
    }

    /** One vector: the problems found and what this implementation produced itself. */
    static List<String> checkOne(JsonObject v, Map<String, String> produced) throws Exception {
        List<String> p = new ArrayList<>();
        String name = v.get("alg").getAsString();
        Algs.Alg a = Algs.ALGS.get(name);
        if (a == null) {
            return List.of("unknown alg " + name);
        }
        switch (a.kind()) {
            case "cipher" -> {
                byte[] key = hx(v, "key");
                byte[] iv = hx(v, "iv");
                byte[] pt = hx(v, "plaintext");
                byte[] ct = hx(v, "ciphertext");
                Cipher c = Algs.newCipher(name);
                byte[] got;
                if (v.has("chunk_bytes")) {
                    ByteArrayOutputStream out = new ByteArrayOutputStream();
                    Algs.streamEncrypt(c, name, key, iv, new ByteArrayInputStream(pt), v.get("chunk_bytes").getAsInt(),
                            out::writeBytes);
                    got = out.toByteArray();
                } else {
                    got = Algs.encrypt(c, name, key, iv, pt);
                    if (!Arrays.equals(Algs.decrypt(c, name, key, iv, ct), pt)) {
                        p.add("decryption differs");
                    }
                }
                if (!Arrays.equals(got, ct)) {
                    p.add("ciphertext differs: got " + HEX.formatHex(got).substring(0, Math.min(32, 2 * got.length)));
                }
            }
            case "mac" -> {
                if (!Arrays.equals(Algs.newMac(name, hx(v, "key")).doFinal(hx(v, "message")), hx(v, "mac"))) {
                    p.add("mac differs");
                }
            }
            case "sign" -> {
                PrivateKey sk = Algs.privateKey(name, hx(v, "private_key"));
                PublicKey pk = Algs.publicKey(name, hx(v, "public_key"));
                Signature s = Algs.newSignature(name);
                byte[] msg = hx(v, "message");
                byte[] sig = hx(v, "signature");
                if (!Algs.verify(s, pk, msg, sig)) {
                    p.add("given signature does not verify");
                }
                byte[] other = Arrays.copyOf(msg, msg.length + 1);
                other[msg.length] = 'x';
                if (Algs.verify(s, pk, other, sig)) {
                    p.add("signature verifies a different message");
                }
                byte[] own = Algs.sign(s, sk, msg);
                if (!Algs.verify(s, pk, msg, own)) {
                    p.add("own signature does not verify");
                }
                produced.put("signature", HEX.formatHex(own));
            }
            default -> {
                PrivateKey sk = Algs.privateKey(name, hx(v, "private_key"));
                PublicKey pk = Algs.publicKey(name, hx(v, "public_key"));
                Cipher rsa = Algs.newRsa();
                byte[] dataKey = hx(v, "data_key");
                if (!Arrays.equals(Algs.unwrap(rsa, sk, hx(v, "wrapped_key")), dataKey)) {
                    p.add("unwrapped data key differs");
                }
                byte[] ct = Algs.encrypt(Algs.newCipher("aes-gcm"), "aes-gcm", dataKey, hx(v, "iv"), hx(v, "plaintext"));
                if (!Arrays.equals(ct, hx(v, "ciphertext"))) {
                    p.add("payload ciphertext differs");
                }
                byte[] own = Algs.wrap(rsa, pk, dataKey);
                if (!Arrays.equals(Algs.unwrap(rsa, sk, own), dataKey)) {
                    p.add("own wrapped key does not unwrap");
                }
                produced.put("wrapped_key", HEX.formatHex(own));
            }
        }
        return p;
    }

    static Map<String, Object> check(JsonArray vectors, String only) {
        List<Map<String, Object>> results = new ArrayList<>();
        List<Map<String, Object>> unsupported = new ArrayList<>();
        int passed = 0;
        for (JsonElement e : vectors) {
            JsonObject v = e.getAsJsonObject();
            if (only != null && !v.get("alg").getAsString().equals(only)) {
                continue;
            }
            String alg = v.get("alg").getAsString();
            if (!Algs.ALGS.containsKey(alg)) { // an algorithm of the contract this program does not do
                Map<String, Object> u = new LinkedHashMap<>();
                u.put("id", v.get("id").getAsString());
                u.put("reason", alg + " is not implemented in Java");
                unsupported.add(u);
                continue;
            }
            Map<String, String> produced = new LinkedHashMap<>();
            List<String> problems;
            try {
                problems = checkOne(v, produced);
            } catch (Exception ex) {
                problems = List.of(ex.getClass().getSimpleName() + ": " + ex.getMessage());
            }
            Map<String, Object> r = new LinkedHashMap<>();
            r.put("id", v.get("id").getAsString());
            r.put("ok", problems.isEmpty());
            r.put("error", problems.isEmpty() ? null : String.join("; ", problems));
            r.put("produced", produced);
            results.add(r);
            passed += problems.isEmpty() ? 1 : 0;
        }
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("language", "java");
        m.put("results", results);
        m.put("passed", passed);
        m.put("failed", results.size() - passed);
        m.put("unsupported", unsupported);
        return m;
    }

    /** Process CPU (user, system) in ns from /proc/self/stat (clock ticks of 10 ms). */
    static long[] procCpu() {
        try {
            String s = Files.readString(Path.of("/proc/self/stat"));
            String[] f = s.substring(s.lastIndexOf(')') + 2).split(" ");
            long tick = 10_000_000L;
            return new long[] {Long.parseLong(f[11]) * tick, Long.parseLong(f[12]) * tick};
        } catch (Exception e) {
            return new long[] {0, 0};
        }
    }

    static long processCpuNs() {
        return ((com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean())
                .getProcessCpuTime();
    }

    static Op makeOp(Algs.Alg a, String op, int keyBits, byte[] payload, String stream, int chunk, JsonArray vecs)
            throws Exception {
        String name = a.name();
        byte[] key = Algs.randomBytes(keyBits / 8);
        byte[] prefix = Algs.randomBytes(8);
        JsonObject vec = null;
        for (JsonElement e : vecs) {
            JsonObject v = e.getAsJsonObject();
            if (v.get("alg").getAsString().equals(name) && (!v.has("key_bits") || v.get("key_bits").getAsInt() == keyBits)) {
                vec = v;
                break;
            }
        }
        if ((a.kind().equals("sign") || a.kind().equals("hybrid")) && vec == null) {
            throw new Fail(2, "no vector with a " + keyBits + "-bit key for " + name);
        }
        switch (a.kind()) {
            case "cipher" -> {
                Cipher c = Algs.newCipher(name);
                if (stream != null) {
                    return n -> {
                        try (InputStream in = new BufferedInputStream(new FileInputStream(stream), chunk)) {
                            Algs.streamEncrypt(c, name, key, Algs.randomBytes(a.block()), in, chunk, b -> { });
                        }
                    };
                }
                if (op.equals("encrypt")) {
                    return n -> Algs.encrypt(c, name, key, ivFor(name, prefix, a.block(), n), payload);
                }
                byte[] iv0 = ivFor(name, prefix, a.block(), 0);
                byte[] ct = Algs.encrypt(c, name, key, iv0, payload);
                return n -> Algs.decrypt(c, name, key, iv0, ct);
            }
            case "mac" -> {
                Mac m = Algs.newMac(name, key);
                if (stream != null) {
                    return n -> {
                        try (InputStream in = new FileInputStream(stream)) {
                            byte[] buf = new byte[chunk];
                            int k;
                            while ((k = in.readNBytes(buf, 0, chunk)) > 0) {
                                m.update(buf, 0, k);
                            }
                            m.doFinal();
                        }
                    };
                }
                return n -> m.doFinal(payload);
            }
            case "sign" -> {
                if (stream != null) {
                    throw new Fail(2, "ecdsa takes --payload-bytes or --input, not --stream");
                }
                PrivateKey sk = Algs.privateKey(name, hx(vec, "private_key"));
                PublicKey pk = Algs.publicKey(name, hx(vec, "public_key"));
                Signature s = Algs.newSignature(name);
                if (op.equals("sign")) {
                    return n -> Algs.sign(s, sk, payload);
                }
                byte[] sig = Algs.sign(s, sk, payload);
                return n -> {
                    if (!Algs.verify(s, pk, payload, sig)) {
                        throw new Fail(3, "own signature failed to verify");
                    }
                };
            }
            default -> {
                PrivateKey sk = Algs.privateKey(name, hx(vec, "private_key"));
                PublicKey pk = Algs.publicKey(name, hx(vec, "public_key"));
                Cipher rsa = Algs.newRsa();
                Cipher gcm = Algs.newCipher("aes-gcm");
                if (stream != null) {
                    return n -> {
                        byte[] dataKey = Algs.randomBytes(32);
                        Algs.wrap(rsa, pk, dataKey);
                        try (InputStream in = new BufferedInputStream(new FileInputStream(stream), chunk)) {
                            Algs.streamEncrypt(gcm, "aes-gcm", dataKey, Algs.randomBytes(12), in, chunk, b -> { });
                        }
                    };
                }
                if (op.equals("encrypt")) {
                    return n -> Algs.hybridEncrypt(rsa, gcm, pk, payload);
                }
                byte[] blob = Algs.hybridEncrypt(rsa, gcm, pk, payload);
                int modulusBytes = (((RSAKey) pk).getModulus().bitLength() + 7) / 8;
                return n -> Algs.hybridDecrypt(rsa, gcm, sk, modulusBytes, blob);
            }
        }
    }

    static byte[] ivFor(String name, byte[] prefix, int block, int n) {
        if (name.equals("aes-gcm") || name.equals("aes-ctr")) {
            byte[] iv = Arrays.copyOf(prefix, name.equals("aes-gcm") ? 12 : 16);
            iv[8] = (byte) (n >>> 24);
            iv[9] = (byte) (n >>> 16);
            iv[10] = (byte) (n >>> 8);
            iv[11] = (byte) n;
            return iv;
        }
        return Algs.randomBytes(block);
    }

    static Map<String, Object> run(Map<String, String> flags) throws Exception {
        String name = flags.get("alg");
        Algs.Alg a = name == null ? null : Algs.ALGS.get(name);
        if (a == null) {
            throw new Fail(2, "unknown or missing --alg " + name);
        }
        int keyBits = intFlag(flags, "key-bits", a.keyBits().get(0));
        if (!a.keyBits().contains(keyBits)) {
            throw new Fail(2, name + " takes key_bits " + a.keyBits() + ", got " + keyBits);
        }
        String op = flags.getOrDefault("op", a.ops().get(0));
        if (!a.ops().contains(op)) {
            throw new Fail(2, name + " takes op " + a.ops() + ", got " + op);
        }
        int iterations = intFlag(flags, "iterations", null);
        int warmup = intFlag(flags, "warmup", 0);
        int chunk = intFlag(flags, "chunk-bytes", 1 << 20);
        if (iterations < 1 || warmup < 0 || chunk < 16 || chunk % 16 != 0) {
            throw new Fail(2, "iterations >= 1, warmup >= 0, chunk_bytes a positive multiple of 16");
        }
        int sources = (flags.containsKey("payload-bytes") ? 1 : 0) + (flags.containsKey("input") ? 1 : 0)
                + (flags.containsKey("stream") ? 1 : 0);
        if (sources != 1) {
            throw new Fail(2, "give exactly one of --payload-bytes, --input, --stream");
        }
        byte[] payload = null;
        String stream = flags.get("stream");
        long size;
        if (flags.containsKey("payload-bytes")) {
            payload = Algs.randomBytes(intFlag(flags, "payload-bytes", null));
            size = payload.length;
        } else if (flags.containsKey("input")) {
            payload = Files.readAllBytes(Path.of(flags.get("input")));
            size = payload.length;
        } else {
            if (!op.equals("encrypt") && !op.equals("mac")) {
                throw new Fail(2, "--stream takes op encrypt or mac");
            }
            size = Files.size(Path.of(stream));
        }
        JsonArray vecs = loadVectors(flags.get("vectors"));
        Map<String, Object> report = check(vecs, name);
        @SuppressWarnings("unchecked")
        List<Map<String, Object>> results = (List<Map<String, Object>>) report.get("results");
        if ((Integer) report.get("failed") > 0 || results.isEmpty()) {
            String why = "no vector for this algorithm";
            for (Map<String, Object> r : results) {
                if (!(Boolean) r.get("ok")) {
                    why = r.get("id") + ": " + r.get("error");
                    break;
                }
            }
            throw new Fail(3, "vector check failed before timing: " + why);
        }
        Op doOp = makeOp(a, op, keyBits, payload, stream, chunk, vecs);
        int update = intFlag(flags, "update-bytes", 0);
        if (update > 0) {
            if (!name.equals("aes-gcm") || !op.equals("encrypt") || payload == null || update % 16 != 0) {
                throw new Fail(2, "update-bytes: aes-gcm encrypt of an in-memory payload, a multiple of 16");
            }
            doOp = bulkGcm(keyBits, payload, update);
        }
        long t0 = System.nanoTime();
        doOp.apply(0);
        long cold = System.nanoTime() - t0;
        for (int i = 0; i < warmup; i++) {
            doOp.apply(1 + i);
        }
        Steady st = Steady.run(doOp, 1 + warmup, dblFlag(flags, "warmup-s", 0), dblFlag(flags, "tolerance", 0.05));
        warmup += (int) st.ops;
        long[] times = new long[iterations];
        long w0 = System.nanoTime(); // the wall window encloses the CPU window
        long[] c0 = procCpu();
        long p0 = processCpuNs();
        for (int i = 0; i < iterations; i++) {
            long t = System.nanoTime();
            doOp.apply(1 + warmup + i);
            times[i] = System.nanoTime() - t;
        }
        long p1 = processCpuNs();
        long[] c1 = procCpu();
        long wall = System.nanoTime() - w0;
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("contract", 2);
        m.put("language", "java");
        m.put("runtime", runtime());
        m.put("library", library());
        m.put("provider", Algs.ALGS.get(name).kind().equals("cipher") ? Algs.provider(name) : "SunJCE/SunEC/SunRsaSign");
        m.put("alg", name);
        m.put("key_bits", keyBits);
        m.put("op", op);
        m.put("mode", a.mode());
        m.put("padding", a.padding());
        m.put("payload_bytes", size);
        m.put("input", stream != null ? "stream" : "memory");
        m.put("update_bytes", update);
        m.put("iterations", iterations);
        m.put("warmup", warmup);
        m.put("vectors", Map.of("checked", results.size(), "passed", report.get("passed")));
        m.put("cold_ns", cold);
        m.put("warmup_ns", st.ns);
        m.put("steady", st.steady);
        m.put("warmup_batches_ns", st.batches);
        m.put("times_ns", times);
        m.put("wall_ns", wall);
        m.put("cpu_user_ns", c1[0] - c0[0]);
        m.put("cpu_sys_ns", c1[1] - c0[1]);
        m.put("cpu_ns", p1 - p0);
        m.put("process_cpu_ns", p1);
        return m;
    }

    static double dblFlag(Map<String, String> flags, String name, double dflt) throws Fail {
        String v = flags.get(name);
        try {
            double d = v == null ? dflt : Double.parseDouble(v);
            if (d < 0 || (name.equals("tolerance") && (d <= 0 || d >= 1))) {
                throw new NumberFormatException();
            }
            return d;
        } catch (NumberFormatException e) {
            throw new Fail(2, "--" + name + ": a number (warmup-s >= 0, tolerance in (0, 1)), got " + v);
        }
    }

    /** Time-based warm-up (CONTRACT.md): batches of >= 10 ms until 3 successive per-op means agree. */
    record Steady(long ops, long ns, Boolean steady, List<Long> batches) {
        static Steady run(Op op, int first, double seconds, double tolerance) throws Exception {
            if (seconds <= 0) {
                return new Steady(0, 0, null, List.of());
            }
            long start = System.nanoTime();
            long limit = (long) (seconds * 1e9);
            long batch = Math.max(10_000_000L, limit / 50);
            int n = first;
            long size = 1;
            List<Long> means = new java.util.ArrayList<>();
            while (true) {
                long t = System.nanoTime();
                for (long i = 0; i < size; i++) {
                    op.apply(n++);
                }
                long took = System.nanoTime() - t;
                if (took < batch) {
                    size *= 2;
                    continue;
                }
                means.add(took / size);
                int k = means.size();
                boolean ok = false;
                if (k >= 3) {
                    List<Long> last = new java.util.ArrayList<>(means.subList(k - 3, k));
                    java.util.Collections.sort(last);
                    ok = last.get(2) - last.get(0) <= tolerance * last.get(1);
                }
                long now = System.nanoTime();
                ok = ok && now - start >= limit / 2; // at least half of the time: C2 compiles late
                if (ok || now - start >= limit) {
                    return new Steady(n - first, now - start, ok, means);
                }
            }
        }
    }

    /** One GCM message per operation through one Cipher, {@code update} bytes per update (--update-bytes). */
    static Op bulkGcm(int keyBits, byte[] payload, int update) throws Exception {
        javax.crypto.spec.SecretKeySpec key = new javax.crypto.spec.SecretKeySpec(Algs.randomBytes(keyBits / 8), "AES");
        byte[] prefix = Algs.randomBytes(8);
        javax.crypto.Cipher c = javax.crypto.Cipher.getInstance("AES/GCM/NoPadding");
        byte[] out = new byte[payload.length + 32];
        return n -> {
            byte[] nonce = java.nio.ByteBuffer.allocate(12).put(prefix).putInt(n).array();
            c.init(javax.crypto.Cipher.ENCRYPT_MODE, key, new javax.crypto.spec.GCMParameterSpec(128, nonce));
            int pos = 0;
            for (int off = 0; off < payload.length; off += update) {
                pos += c.update(payload, off, Math.min(update, payload.length - off), out, pos);
            }
            c.doFinal(out, pos);
        };
    }
}
