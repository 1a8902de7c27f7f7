package io.steelyard.testkit;

import static java.nio.charset.StandardCharsets.US_ASCII;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyPair;
import java.security.KeyPairGenerator;
import java.security.NoSuchAlgorithmException;
import java.time.Duration;
import java.util.Base64;
import java.util.Objects;

/**
 * An RSA key pair for etcd's JWT auth tokens ({@code --auth-token jwt,...,sign-method=RS256}),
 * generated at test time into a directory, as an operator would with {@code openssl genrsa} and
 * {@code openssl rsa -pubout}: the private key in PKCS#8 PEM, the public key as an X.509
 * SubjectPublicKeyInfo PEM (both of which etcd reads).
 *
 * <pre>{@code
 * JwtKeys keys = JwtKeys.generate(tempDir);
 * EtcdCluster etcd = EtcdCluster.builder().rootPassword("rootpw")
 *     .jwtTokens(keys, Duration.ofSeconds(5)).build();
 * }</pre>
 */
public final class JwtKeys {

  private final Path privateKey;
  private final Path publicKey;

  private JwtKeys(Path privateKey, Path publicKey) {
    this.privateKey = privateKey;
    this.publicKey = publicKey;
  }

  /** A new 2048-bit RSA pair written to {@code dir/jwt.key} and {@code dir/jwt.pub}. */
  public static JwtKeys generate(Path dir) {
    Objects.requireNonNull(dir, "dir");
    KeyPair pair;
    try {
      KeyPairGenerator generator = KeyPairGenerator.getInstance("RSA");
      generator.initialize(2048);
      pair = generator.generateKeyPair();
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("this JVM cannot generate RSA keys", e);
    }
    JwtKeys keys = new JwtKeys(dir.resolve("jwt.key"), dir.resolve("jwt.pub"));
    try {
      Files.createDirectories(dir);
      Files.writeString(keys.privateKey, pem("PRIVATE KEY", pair.getPrivate().getEncoded()), US_ASCII);
      Files.writeString(keys.publicKey, pem("PUBLIC KEY", pair.getPublic().getEncoded()), US_ASCII);
    } catch (IOException e) {
      throw new UncheckedIOException("cannot write JWT keys to " + dir, e);
    }
    return keys;
  }

  /** The private key's PEM file (etcd's {@code priv-key}). */
  public Path privateKey() {
    return privateKey;
  }

  /** The public key's PEM file (etcd's {@code pub-key}). */
  public Path publicKey() {
    return publicKey;
  }

  /**
   * The value of etcd's {@code --auth-token} for tokens signed with these keys and valid for
   * {@code ttl} from the moment they are issued (unlike simple tokens, using a JWT does not
   * extend it), e.g. {@code jwt,pub-key=/tmp/x/jwt.pub,priv-key=/tmp/x/jwt.key,sign-method=RS256,ttl=5s}.
   */
  public String authTokenFlag(Duration ttl) {
    Objects.requireNonNull(ttl, "ttl");
    if (ttl.toSeconds() < 1) {
      throw new IllegalArgumentException("ttl: " + ttl + " (expected: >= 1s)");
    }
    return "jwt,pub-key=" + publicKey + ",priv-key=" + privateKey + ",sign-method=RS256,ttl=" + ttl.toSeconds() + "s";
  }

  private static String pem(String type, byte[] der) {
    String body = Base64.getMimeEncoder(64, new byte[] {'\n'}).encodeToString(der);
    return "-----BEGIN " + type + "-----\n" + body + "\n-----END " + type + "-----\n";
  }
}
