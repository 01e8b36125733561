package testbed.crypto;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.security.GeneralSecurityException;
import java.security.KeyFactory;
import java.security.PrivateKey;
import java.security.PublicKey;
import java.security.SecureRandom;
import java.security.Signature;
import java.security.spec.MGF1ParameterSpec;
import java.security.spec.PKCS8EncodedKeySpec;
import java.security.spec.X509EncodedKeySpec;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;
import javax.crypto.Cipher;
import javax.crypto.Mac;
import javax.crypto.spec.GCMParameterSpec;
import javax.crypto.spec.IvParameterSpec;
import javax.crypto.spec.OAEPParameterSpec;
import javax.crypto.spec.PSource;
import javax.crypto.spec.SecretKeySpec;

/** The algorithms of CONTRACT.md on JCA (SunJCE) and Bouncy Castle (CAST-128, Twofish). */
final class Algs {
    static final SecureRandom RANDOM = new SecureRandom();
    private static java.security.Provider bouncyCastle;

    /** Bouncy Castle, made on first use only (registering it costs JVM start-up time). */
    static synchronized java.security.Provider bc() {
        if (bouncyCastle == null) {
            bouncyCastle = new org.bouncycastle.jce.provider.BouncyCastleProvider();
        }
        return bouncyCastle;
    }

    record Alg(String name, String kind, List<Integer> keyBits, List<String> ops, String mode, String padding,
               int block) {}

    static final Map<String, Alg> ALGS = new LinkedHashMap<>();

    static {
        List<String> cipherOps = List.of("encrypt", "decrypt");
        add(new Alg("aes-gcm", "cipher", List.of(128, 192, 256), cipherOps, "GCM, 96-bit nonce, 128-bit tag", "none", 16));
        add(new Alg("aes-ctr", "cipher", List.of(128, 192, 256), cipherOps, "CTR, 128-bit counter", "none", 16));
        add(new Alg("aes-cbc", "cipher", List.of(128, 192, 256), cipherOps, "CBC", "PKCS#7", 16));
        add(new Alg("3des-cbc", "cipher", List.of(192, 128), cipherOps, "EDE (192: 3 keys; 128: 2 keys, K1 K2 K1), CBC", "PKCS#7", 8));
        add(new Alg("cast128-cbc", "cipher", List.of(128), cipherOps, "CBC", "PKCS#7", 8));
        add(new Alg("blowfish-cbc", "cipher", List.of(128, 256, 448, 64), cipherOps, "CBC", "PKCS#7", 8));
        add(new Alg("twofish-cbc", "cipher", List.of(128, 192, 256), cipherOps, "CBC", "PKCS#7", 16));
        add(new Alg("hmac-sha256", "mac", List.of(256), List.of("mac"), "HMAC", "none", 0));
        add(new Alg("hmac-sha384", "mac", List.of(384), List.of("mac"), "HMAC", "none", 0));
        add(new Alg("ecdsa-p256", "sign", List.of(256), List.of("sign", "verify"),
                "ECDSA with SHA-256, DER signature", "none", 0));
        add(new Alg("ecdsa-p384", "sign", List.of(384), List.of("sign", "verify"),
                "ECDSA with SHA-384, DER signature", "none", 0));
        add(new Alg("rsa-oaep", "hybrid", List.of(2048, 3072, 4096), cipherOps,
                "RSA-OAEP(SHA-256, MGF1-SHA-256) wraps a 256-bit key; AES-256-GCM payload", "OAEP", 0));
    }

    private static void add(Alg a) {
        ALGS.put(a.name(), a);
    }

    private Algs() {}

    static byte[] randomBytes(int n) {
        byte[] b = new byte[n];
        RANDOM.nextBytes(b);
        return b;
    }

    /** JCA transformation and provider ("BC" where SunJCE lacks the cipher). */
    static Cipher newCipher(String name) throws GeneralSecurityException {
        return switch (name) {
            case "aes-gcm" -> Cipher.getInstance("AES/GCM/NoPadding");
            case "aes-ctr" -> Cipher.getInstance("AES/CTR/NoPadding");
            case "aes-cbc" -> Cipher.getInstance("AES/CBC/PKCS5Padding");
            case "3des-cbc" -> Cipher.getInstance("DESede/CBC/PKCS5Padding");
            case "blowfish-cbc" -> Cipher.getInstance("Blowfish/CBC/PKCS5Padding");
            case "cast128-cbc" -> Cipher.getInstance("CAST5/CBC/PKCS5Padding", bc());
            case "twofish-cbc" -> Cipher.getInstance("Twofish/CBC/PKCS5Padding", bc());
            default -> throw new GeneralSecurityException("no cipher " + name);
        };
    }

    static String provider(String name) {
        return name.equals("cast128-cbc") || name.equals("twofish-cbc") ? "Bouncy Castle" : "SunJCE";
    }

    private static String keyAlg(String name) {
        return switch (name) {
            case "3des-cbc" -> "DESede";
            case "blowfish-cbc" -> "Blowfish";
            case "cast128-cbc" -> "CAST5";
            case "twofish-cbc" -> "Twofish";
            default -> "AES";
        };
    }

    static void init(Cipher c, String name, int mode, byte[] key, byte[] iv) throws GeneralSecurityException {
        if (name.equals("3des-cbc") && key.length == 16) { // two-key 3DES: K1 K2 K1
            byte[] k3 = java.util.Arrays.copyOf(key, 24);
            System.arraycopy(key, 0, k3, 16, 8);
            key = k3;
        }
        SecretKeySpec k = new SecretKeySpec(key, keyAlg(name));
        if (name.equals("aes-gcm")) {
            c.init(mode, k, new GCMParameterSpec(128, iv));
        } else {
            c.init(mode, k, new IvParameterSpec(iv));
        }
    }

    static byte[] encrypt(Cipher c, String name, byte[] key, byte[] iv, byte[] pt) throws GeneralSecurityException {
        init(c, name, Cipher.ENCRYPT_MODE, key, iv);
        return c.doFinal(pt);
    }

    static byte[] decrypt(Cipher c, String name, byte[] key, byte[] iv, byte[] ct) throws GeneralSecurityException {
        init(c, name, Cipher.DECRYPT_MODE, key, iv);
        return c.doFinal(ct);
    }

    /** Encrypt a stream chunk by chunk; GCM seals every chunk as its own message (CONTRACT.md). */
    static void streamEncrypt(Cipher c, String name, byte[] key, byte[] iv, InputStream src, int chunk,
                              Consumer<byte[]> sink) throws GeneralSecurityException, IOException {
        byte[] buf = new byte[chunk];
        if (name.equals("aes-gcm")) {
            byte[] nonce = new byte[12];
            System.arraycopy(iv, 0, nonce, 0, 8);
            for (int i = 0; ; i++) {
                int n = src.readNBytes(buf, 0, chunk);
                if (n > 0) {
                    nonce[8] = (byte) (i >>> 24);
                    nonce[9] = (byte) (i >>> 16);
                    nonce[10] = (byte) (i >>> 8);
                    nonce[11] = (byte) i;
                    init(c, name, Cipher.ENCRYPT_MODE, key, nonce);
                    sink.accept(c.doFinal(buf, 0, n));
                }
                if (n < chunk) {
                    return;
                }
            }
        }
        init(c, name, Cipher.ENCRYPT_MODE, key, iv);
        byte[] out = new byte[chunk + 32];
        while (true) {
            int n = src.readNBytes(buf, 0, chunk);
            if (n < chunk) {
                int k = c.doFinal(buf, 0, n, out, 0);
                sink.accept(java.util.Arrays.copyOf(out, k));
                return;
            }
            int k = c.update(buf, 0, n, out, 0);
            sink.accept(k == out.length ? out : java.util.Arrays.copyOf(out, k));
        }
    }

    static Mac newMac(String name, byte[] key) throws GeneralSecurityException {
        String jca = name.equals("hmac-sha384") ? "HmacSHA384" : "HmacSHA256";
        Mac m = Mac.getInstance(jca);
        m.init(new SecretKeySpec(key, jca));
        return m;
    }

    static PrivateKey privateKey(String name, byte[] der) throws GeneralSecurityException {
        return KeyFactory.getInstance(name.startsWith("ecdsa") ? "EC" : "RSA")
                .generatePrivate(new PKCS8EncodedKeySpec(der));
    }

    static PublicKey publicKey(String name, byte[] der) throws GeneralSecurityException {
        return KeyFactory.getInstance(name.startsWith("ecdsa") ? "EC" : "RSA")
                .generatePublic(new X509EncodedKeySpec(der));
    }

    static Signature newSignature(String name) throws GeneralSecurityException {
        return Signature.getInstance(name.equals("ecdsa-p384") ? "SHA384withECDSA" : "SHA256withECDSA");
    }

    static byte[] sign(Signature s, PrivateKey k, byte[] msg) throws GeneralSecurityException {
        s.initSign(k, RANDOM);
        s.update(msg);
        return s.sign();
    }

    static boolean verify(Signature s, PublicKey k, byte[] msg, byte[] sig) throws GeneralSecurityException {
        s.initVerify(k);
        s.update(msg);
        try {
            return s.verify(sig);
        } catch (java.security.SignatureException e) {
            return false;
        }
    }

    static final OAEPParameterSpec OAEP = new OAEPParameterSpec(
            "SHA-256", "MGF1", MGF1ParameterSpec.SHA256, PSource.PSpecified.DEFAULT);

    static Cipher newRsa() throws GeneralSecurityException {
        return Cipher.getInstance("RSA/ECB/OAEPPadding");
    }

    static byte[] wrap(Cipher rsa, PublicKey k, byte[] dataKey) throws GeneralSecurityException {
        rsa.init(Cipher.ENCRYPT_MODE, k, OAEP, RANDOM);
        return rsa.doFinal(dataKey);
    }

    static byte[] unwrap(Cipher rsa, PrivateKey k, byte[] wrapped) throws GeneralSecurityException {
        rsa.init(Cipher.DECRYPT_MODE, k, OAEP);
        return rsa.doFinal(wrapped);
    }

    /** Wrapped fresh data key || nonce || AES-256-GCM(payload). */
    static byte[] hybridEncrypt(Cipher rsa, Cipher gcm, PublicKey k, byte[] pt) throws GeneralSecurityException {
        byte[] dataKey = randomBytes(32);
        byte[] nonce = randomBytes(12);
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        out.writeBytes(wrap(rsa, k, dataKey));
        out.writeBytes(nonce);
        out.writeBytes(encrypt(gcm, "aes-gcm", dataKey, nonce, pt));
        return out.toByteArray();
    }

    static byte[] hybridDecrypt(Cipher rsa, Cipher gcm, PrivateKey k, int modulusBytes, byte[] blob)
            throws GeneralSecurityException {
        byte[] wrapped = java.util.Arrays.copyOfRange(blob, 0, modulusBytes);
        byte[] nonce = java.util.Arrays.copyOfRange(blob, modulusBytes, modulusBytes + 12);
        byte[] body = java.util.Arrays.copyOfRange(blob, modulusBytes + 12, blob.length);
        return decrypt(gcm, "aes-gcm", unwrap(rsa, k, wrapped), nonce, body);
    }
}
