package io.steelyard.registry;

import java.nio.file.Path;
import java.util.Map;
import javax.annotation.Nullable;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.ScopeType;

/**
 * The etcd connection flags of every steelyard command ({@code bin/steelyard}, {@code
 * bin/steelyard-xds}, {@code bin/greeter-server}, {@code bin/greeter-client}), as one picocli
 * {@link Mixin}, so that they are spelled, explained and checked the same everywhere: {@code
 * --endpoints URLS}, {@code --user USER:PASSWORD}, {@code --cacert FILE}, {@code --cert FILE},
 * {@code --key FILE} and {@code --prefix PREFIX}. On a command with subcommands they may also
 * follow the subcommand ({@link ScopeType#INHERIT}).
 *
 * <pre>{@code
 * @Command(name = "my-tool")
 * final class MyTool implements Callable<Integer> {
 *   @Mixin EtcdFlags etcd = new EtcdFlags();
 *
 *   public Integer call() {
 *     EtcdConnection connection = etcd.connection();   // IllegalArgumentException names the flag
 *     KeyLayout layout = etcd.layout();
 *     ...
 *   }
 * }
 * }</pre>
 *
 * <p>picocli is an optional dependency of this module: only this class needs it, and a command
 * that uses it brings picocli anyway. Not thread-safe: picocli fills it while parsing, before the
 * command runs.
 */
public final class EtcdFlags {

  @Option(
      names = "--endpoints",
      paramLabel = "URLS",
      scope = ScopeType.INHERIT,
      description = {
        "etcd endpoints, comma-separated. Default:",
        "$" + EtcdConnection.ENDPOINTS_ENV + ", else",
        EtcdConnection.DEFAULT_ENDPOINTS,
        "Example: --endpoints http://10.0.0.1:2379"
      })
  @Nullable
  private String endpoints;

  @Option(
      names = "--user",
      paramLabel = "USER:PASSWORD",
      scope = ScopeType.INHERIT,
      description = {"etcd user and password.", "Example: --user steelyard:secret"})
  @Nullable
  private String user;

  @Option(
      names = "--cacert",
      paramLabel = "FILE",
      scope = ScopeType.INHERIT,
      description = {"CA certificate to trust for TLS.", "Example: --cacert ca.pem"})
  @Nullable
  private Path caCert;

  @Option(
      names = "--cert",
      paramLabel = "FILE",
      scope = ScopeType.INHERIT,
      description = {"Client certificate for mutual TLS", "(needs --cacert and --key)."})
  @Nullable
  private Path cert;

  @Option(
      names = "--key",
      paramLabel = "FILE",
      scope = ScopeType.INHERIT,
      description = {"Client private key for mutual TLS", "(needs --cacert and --cert)."})
  @Nullable
  private Path key;

  @Option(
      names = "--prefix",
      paramLabel = "PREFIX",
      scope = ScopeType.INHERIT,
      defaultValue = KeyLayout.DEFAULT_PREFIX,
      description = {"Key prefix of the registry (default: ${DEFAULT-VALUE}).", "Example: --prefix /registry"})
  private String prefix = KeyLayout.DEFAULT_PREFIX;

  /** The endpoints given with {@code --endpoints}, else from {@code env}, else the default. */
  public String endpoints(Map<String, String> env) {
    return endpoints != null ? endpoints : EtcdConnection.endpointsFrom(env);
  }

  /**
   * A connection builder with the endpoints ({@link #endpoints(Map)}) and the security flags set,
   * for a caller that sets more (a connect timeout).
   *
   * @throws IllegalArgumentException naming the flag at fault (never echoing a password)
   */
  public EtcdConnection.Builder connectionBuilder(Map<String, String> env) {
    return EtcdConnection.builder().endpoints(endpoints(env)).securityOptions(user, caCert, cert, key);
  }

  /**
   * The connection these flags describe, with the process environment's {@value
   * EtcdConnection#ENDPOINTS_ENV}.
   *
   * @throws IllegalArgumentException naming the flag at fault
   */
  public EtcdConnection connection() {
    return connectionBuilder(System.getenv()).build();
  }

  /**
   * The key layout of {@code --prefix}.
   *
   * @throws IllegalArgumentException for a prefix {@link KeyLayout#of} refuses
   */
  public KeyLayout layout() {
    return KeyLayout.of(prefix);
  }
}
