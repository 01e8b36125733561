package testbed.kms;

import com.google.gson.Gson;
import java.net.URI;
import java.security.SecureRandom;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.ArrayList;
import java.util.Map;
import java.nio.ByteBuffer;
import javax.crypto.Cipher;
import javax.crypto.spec.GCMParameterSpec;
import javax.crypto.spec.SecretKeySpec;
import software.amazon.awssdk.auth.credentials.AwsBasicCredentials;
import software.amazon.awssdk.auth.credentials.StaticCredentialsProvider;
import software.amazon.awssdk.core.SdkBytes;
import software.amazon.awssdk.http.urlconnection.UrlConnectionHttpClient;
import software.amazon.awssdk.regions.Region;
import software.amazon.awssdk.services.kms.KmsClient;
import software.amazon.awssdk.services.kms.model.DataKeySpec;
import software.amazon.awssdk.services.kms.model.EncryptionAlgorithmSpec;
import software.amazon.awssdk.services.kms.model.MacAlgorithmSpec;
import software.amazon.awssdk.services.kms.model.MessageType;
import software.amazon.awssdk.services.kms.model.SigningAlgorithmSpec;

/** The key-service part of workloads/crypto/CONTRACT.md in Java (AWS SDK for Java v2, kms). */
public final class Main {
  private static final SecureRandom RNG = new SecureRandom();
  private final Map<String, List<Long>> times = new LinkedHashMap<>();
  private KmsClient c;
  private String key;
  private String spec;
  private byte[] payload;
  private final byte[] prefix = new byte[8];

  private void add(String name, long t0) {
    times.computeIfAbsent(name, k -> new ArrayList<>()).add(System.nanoTime() - t0);
  }

  private static byte[] gcm(int mode, byte[] key, byte[] nonce, byte[] in) throws Exception {
    Cipher g = Cipher.getInstance("AES/GCM/NoPadding");
    g.init(mode, new SecretKeySpec(key, "AES"), new GCMParameterSpec(128, nonce));
    return g.doFinal(in);
  }

  private void envelope(int i) throws Exception {
    byte[] dk;
    SdkBytes wrapped;
    EncryptionAlgorithmSpec alg = null;
    if (spec.equals("SYMMETRIC_DEFAULT")) {
      long t0 = System.nanoTime();
      var o = c.generateDataKey(b -> b.keyId(key).keySpec(DataKeySpec.AES_256));
      add("generate_data_key", t0);
      dk = o.plaintext().asByteArray();
      wrapped = o.ciphertextBlob();
    } else {
      dk = new byte[32];
      RNG.nextBytes(dk);
      alg = EncryptionAlgorithmSpec.RSAES_OAEP_SHA_256;
      final EncryptionAlgorithmSpec a = alg;
      final byte[] k = dk;
      long t0 = System.nanoTime();
      var o = c.encrypt(b -> b.keyId(key).plaintext(SdkBytes.fromByteArray(k)).encryptionAlgorithm(a));
      add("encrypt", t0);
      wrapped = o.ciphertextBlob();
    }
    byte[] nonce = ByteBuffer.allocate(12).put(prefix).putInt(i).array();
    long t0 = System.nanoTime();
    byte[] ct = gcm(Cipher.ENCRYPT_MODE, dk, nonce, payload);
    add("local_encrypt", t0);
    final EncryptionAlgorithmSpec a = alg;
    t0 = System.nanoTime();
    var o = c.decrypt(b -> b.keyId(key).ciphertextBlob(wrapped).encryptionAlgorithm(a));
    add("decrypt", t0);
    t0 = System.nanoTime();
    byte[] back = gcm(Cipher.DECRYPT_MODE, o.plaintext().asByteArray(), nonce, ct);
    add("local_decrypt", t0);
    if (!Arrays.equals(back, payload)) {
      throw new IllegalStateException("envelope round trip returned a different payload");
    }
  }

  private void sign() {
    SigningAlgorithmSpec alg = switch (spec) {
      case "ECC_NIST_P256" -> SigningAlgorithmSpec.ECDSA_SHA_256;
      case "ECC_NIST_P384" -> SigningAlgorithmSpec.ECDSA_SHA_384;
      default -> SigningAlgorithmSpec.RSASSA_PSS_SHA_256;
    };
    SdkBytes msg = SdkBytes.fromByteArray(payload);
    long t0 = System.nanoTime();
    var s = c.sign(b -> b.keyId(key).message(msg).messageType(MessageType.RAW).signingAlgorithm(alg));
    add("sign", t0);
    t0 = System.nanoTime();
    var v = c.verify(b -> b.keyId(key).message(msg).messageType(MessageType.RAW).signingAlgorithm(alg)
        .signature(s.signature()));
    add("verify", t0);
    if (!Boolean.TRUE.equals(v.signatureValid())) {
      throw new IllegalStateException("key service did not verify its own signature");
    }
  }

  private void mac() {
    MacAlgorithmSpec alg = spec.equals("HMAC_384") ? MacAlgorithmSpec.HMAC_SHA_384 : MacAlgorithmSpec.HMAC_SHA_256;
    SdkBytes msg = SdkBytes.fromByteArray(payload);
    long t0 = System.nanoTime();
    var m = c.generateMac(b -> b.keyId(key).message(msg).macAlgorithm(alg));
    add("generate_mac", t0);
    t0 = System.nanoTime();
    var v = c.verifyMac(b -> b.keyId(key).message(msg).macAlgorithm(alg).mac(m.mac()));
    add("verify_mac", t0);
    if (!Boolean.TRUE.equals(v.macValid())) {
      throw new IllegalStateException("key service did not verify its own MAC");
    }
  }

  private static void fail(int code, String msg) {
    System.out.println(new Gson().toJson(Map.of("error", msg == null ? "error" : msg.split("\n")[0])));
    System.exit(code);
  }

  public static void main(String[] args) {
    if (args.length > 0 && (args[0].equals("-h") || args[0].equals("--help"))) {
      System.err.println("usage: testbed-kms run --endpoint URL --region R --key-id ID --key-spec SPEC --usage USAGE"
          + " --iterations N --payload-bytes N");
      return;
    }
    if (args.length == 0 || !args[0].equals("run") || args.length % 2 == 0) {
      fail(2, "usage: run --flag value ...");
    }
    Map<String, String> f = new HashMap<>(Map.of("region", "us-east-1", "iterations", "30", "payload-bytes", "4096"));
    for (int i = 1; i + 1 < args.length; i += 2) {
      f.put(args[i].replaceFirst("^--", ""), args[i + 1]);
    }
    for (String need : List.of("endpoint", "key-id", "key-spec", "usage")) {
      if (!f.containsKey(need)) {
        fail(2, "--" + need + " is required");
      }
    }
    try {
      System.out.println(new Gson().toJson(new Main().run(f)));
    } catch (Exception e) {
      fail(1, e.getClass().getSimpleName() + ": " + e.getMessage());
    }
  }

  private Map<String, Object> run(Map<String, String> f) throws Exception {
    key = f.get("key-id");
    spec = f.get("key-spec");
    payload = new byte[Integer.parseInt(f.get("payload-bytes"))];
    RNG.nextBytes(payload);
    RNG.nextBytes(prefix);
    String id = System.getenv().getOrDefault("AWS_ACCESS_KEY_ID", "testing");
    String secret = System.getenv().getOrDefault("AWS_SECRET_ACCESS_KEY", "testing");
    long t0 = System.nanoTime();
    c = KmsClient.builder().region(Region.of(f.get("region"))).endpointOverride(URI.create(f.get("endpoint")))
        .credentialsProvider(StaticCredentialsProvider.create(AwsBasicCredentials.create(id, secret)))
        .httpClientBuilder(UrlConnectionHttpClient.builder()).build();
    add("client_init", t0);
    int n = Integer.parseInt(f.get("iterations"));
    String usage = f.get("usage");
    for (int i = 0; i < n; i++) {
      switch (usage) {
        case "ENCRYPT_DECRYPT" -> envelope(i);
        case "SIGN_VERIFY" -> sign();
        case "GENERATE_VERIFY_MAC" -> mac();
        default -> fail(2, "unknown --usage " + usage);
      }
    }
    String ver = KmsClient.class.getPackage().getImplementationVersion();
    Map<String, Object> out = new LinkedHashMap<>();
    out.put("contract", 1);
    out.put("language", "java");
    out.put("runtime", "Java " + System.getProperty("java.version") + " (" + System.getProperty("java.vm.name") + ")");
    out.put("library", "AWS SDK for Java v2 kms " + (ver == null ? "2.40.2" : ver) + "; local AES-256-GCM: JCA SunJCE");
    out.put("key_spec", spec);
    out.put("usage", usage);
    out.put("payload_bytes", payload.length);
    out.put("iterations", n);
    out.put("times_ns", times);
    return out;
  }
}
