package io.steelyard.console;

import io.netty.handler.ssl.JdkSslContext;
import io.netty.handler.ssl.SslContext;
import io.netty.handler.ssl.SslContextBuilder;
import io.netty.handler.ssl.SslProvider;
import java.nio.file.Files;
import java.nio.file.Path;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLException;

/**
 * The console's own TLS: a certificate chain and its private key as PEM files (PKCS#8, or
 * PKCS#1 RSA), the files etcd and the CLI's {@code --cert}/{@code --key} take. Read with Netty's
 * PEM reader (already on the class path through gRPC), which the JDK lacks, into the JDK
 * {@link SSLContext} that {@code HttpsServer} needs.
 */
final class ServerTls {

  private ServerTls() {}

  static SSLContext fromPem(Path certChain, Path privateKey) {
    for (Path p : new Path[] {certChain, privateKey}) {
      if (!Files.isReadable(p)) {
        throw new IllegalArgumentException("tls: " + p + " (expected: a readable PEM file)");
      }
    }
    try {
      SslContext ctx = SslContextBuilder.forServer(certChain.toFile(), privateKey.toFile())
          .sslProvider(SslProvider.JDK)
          .build();
      return ((JdkSslContext) ctx).context();
    } catch (SSLException | IllegalArgumentException e) {
      throw new IllegalArgumentException(
          "tls: cannot use " + certChain + " with " + privateKey + " (" + e.getMessage() + ")", e);
    }
  }
}
