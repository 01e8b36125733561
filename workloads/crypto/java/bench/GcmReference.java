// A plain timed loop of the AES-256-GCM JCA calls one operation of testbed-crypto makes in
// bench/crypto_throughput.py's two patterns, without the program around them (its dispatch, nonce
// bookkeeping and per-operation clock reads): the reference the Java harness is held to.
//
//   java workloads/crypto/java/bench/GcmReference.java [warm-up seconds] [measured seconds]
//
// JMH's shape by hand: a time-based warm-up (C2 compiles the GCM intrinsics), then measurement
// iterations of at least 0.5 s each; the figure is the process's CPU time (all threads, as the
// harness's cpu_ns) per operation over the measured iterations. Prints one JSON object:
// {"stream": {"bytes", "cpu_ns_per_op", "iterations"}, "messages": {...}, "runtime"}.
// Buffer sizes: GCM_STREAM_BYTES (1 MiB), GCM_UPDATE_BYTES (16 KiB), GCM_MESSAGE_BYTES (16 KiB).

import java.lang.management.ManagementFactory;
import java.nio.ByteBuffer;
import java.security.SecureRandom;
import javax.crypto.Cipher;
import javax.crypto.spec.GCMParameterSpec;
import javax.crypto.spec.SecretKeySpec;

public class GcmReference {
    interface Op {
        void apply(int n) throws Exception;
    }

    static final SecureRandom RANDOM = new SecureRandom();
    static volatile int sink;

    static int size(String name, int dflt) {
        String v = System.getenv(name);
        return v == null || v.isEmpty() ? dflt : Integer.parseInt(v);
    }

    static byte[] random(int n) {
        byte[] b = new byte[n];
        RANDOM.nextBytes(b);
        return b;
    }

    static long cpuNs() {
        return ((com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean())
                .getProcessCpuTime();
    }

    static byte[] nonce(byte[] prefix, int n) {
        return ByteBuffer.allocate(12).put(prefix).putInt(n).array();
    }

    /** {cpu ns per op, ops}: warm-up for warmS seconds, then iterations of >= 0.5 s for measureS. */
    static double[] measure(Op op, double warmS, double measureS) throws Exception {
        int n = 0;
        long end = System.nanoTime() + (long) (warmS * 1e9);
        while (System.nanoTime() < end) {
            op.apply(n++);
        }
        long ops = 0, cpu = 0;
        long stop = System.nanoTime() + (long) (measureS * 1e9);
        do {
            long iterEnd = System.nanoTime() + 500_000_000L;
            long c0 = cpuNs();
            long k = 0;
            while (System.nanoTime() < iterEnd) {
                op.apply(n++);
                k++;
            }
            cpu += cpuNs() - c0;
            ops += k;
        } while (System.nanoTime() < stop);
        return new double[] {(double) cpu / ops, ops};
    }

    public static void main(String[] args) throws Exception {
        double warmS = args.length > 0 ? Double.parseDouble(args[0]) : 10;
        double measureS = args.length > 1 ? Double.parseDouble(args[1]) : 3;
        int stream = size("GCM_STREAM_BYTES", 1 << 20);
        int update = size("GCM_UPDATE_BYTES", 16384);
        int message = size("GCM_MESSAGE_BYTES", 16384);
        byte[] prefix = random(8);
        // the bulk pattern (--update-bytes): one Cipher, init per message, update into one buffer
        SecretKeySpec key = new SecretKeySpec(random(32), "AES");
        Cipher bulk = Cipher.getInstance("AES/GCM/NoPadding");
        byte[] payload = random(stream);
        byte[] out = new byte[stream + 32];
        Op streamOp = n -> {
            bulk.init(Cipher.ENCRYPT_MODE, key, new GCMParameterSpec(128, nonce(prefix, n)));
            int pos = 0;
            for (int off = 0; off < stream; off += update) {
                pos += bulk.update(payload, off, Math.min(update, stream - off), out, pos);
            }
            sink += bulk.doFinal(out, pos);
        };
        // the messages pattern: init with a new key spec and nonce, doFinal into a new array
        byte[] raw = random(32);
        byte[] pt = random(message);
        Cipher c = Cipher.getInstance("AES/GCM/NoPadding");
        Op messageOp = n -> {
            c.init(Cipher.ENCRYPT_MODE, new SecretKeySpec(raw, "AES"), new GCMParameterSpec(128, nonce(prefix, n)));
            sink += c.doFinal(pt).length;
        };
        double[] s = measure(streamOp, warmS, measureS);
        double[] m = measure(messageOp, warmS, measureS);
        System.out.printf(
                "{\"runtime\": \"%s\", \"stream\": {\"bytes\": %d, \"cpu_ns_per_op\": %.1f, \"iterations\": %d},"
                        + " \"messages\": {\"bytes\": %d, \"cpu_ns_per_op\": %.1f, \"iterations\": %d}}%n",
                System.getProperty("java.vm.name") + " " + Runtime.version(),
                stream, s[0], (long) s[1], message, m[0], (long) m[1]);
    }
}
