package io.steelyard.registry;

import static com.google.common.base.Preconditions.checkArgument;
import static com.google.common.base.Preconditions.checkState;
import static java.util.Objects.requireNonNull;

import com.google.common.base.Splitter;
import com.google.common.collect.ImmutableList;
import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.ClientBuilder;
import io.steelyard.registry.internal.ClientCertificateCheck;
import io.steelyard.registry.internal.SchemeMismatch;
import io.steelyard.registry.internal.TlsFiles;
import java.net.URI;
import java.net.URISyntaxException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import javax.annotation.Nullable;

/**
 * How to reach one etcd cluster: endpoints, optional user/password, optional TLS, connect timeout.
 * An immutable value (equal connections describe the same cluster, so callers can share one
 * client per cluster); {@link #connect()} builds a jetcd {@link Client}, which the caller owns and
 * must close.
 *
 * <pre>{@code
 * EtcdConnection etcd = EtcdConnection.builder()
 *     .endpoints("https://etcd-1:2379,https://etcd-2:2379")
 *     .user("steelyard", "secret")
 *     .tls(Path.of("ca.pem"), Path.of("client.pem"), Path.of("client-key.pem"))
 *     .build();
 * try (Client client = etcd.connect()) { ... }
 * }</pre>
 */
public final class EtcdConnection {

  /** The environment variable read by {@link #fromEnvironment()}, {@value}. */
  public static final String ENDPOINTS_ENV = "STEELYARD_ETCD_ENDPOINTS";

  /** Endpoints used when nothing else is configured, {@value}. */
  public static final String DEFAULT_ENDPOINTS = "http://127.0.0.1:2379";

  /** Default connect timeout, in milliseconds: {@value}. */
  public static final long DEFAULT_CONNECT_TIMEOUT_MILLIS = 5_000;

  /**
   * Interval of HTTP/2 keepalive pings on a connection with calls in flight: at least etcd's
   * {@code --grpc-keepalive-min-time} (default 5 s), or etcd answers with GOAWAY.
   */
  static final Duration KEEPALIVE_TIME = Duration.ofSeconds(10);

  /** How long a keepalive ping may go unanswered before the connection is declared dead. */
  static final Duration KEEPALIVE_TIMEOUT = Duration.ofSeconds(5);

  /** First delay of jetcd's own retries (jetcd's default is 500 ms). */
  static final Duration JETCD_RETRY_DELAY = Duration.ofMillis(100);

  /** Longest delay of jetcd's own retries (jetcd's default is 2.5 s). */
  static final Duration JETCD_RETRY_MAX_DELAY = Duration.ofSeconds(1);

  private final ImmutableList<URI> endpoints;
  @Nullable private final String user;
  @Nullable private final String password;
  @Nullable private final Path caCert;
  @Nullable private final Path clientCert;
  @Nullable private final Path clientKey;
  private final Duration connectTimeout;

  private EtcdConnection(Builder b) {
    this.endpoints = b.endpoints;
    this.user = b.user;
    this.password = b.password;
    this.caCert = b.caCert;
    this.clientCert = b.clientCert;
    this.clientKey = b.clientKey;
    this.connectTimeout = b.connectTimeout;
  }

  /** A connection to {@code endpoints} (comma-separated URLs), without auth or TLS. */
  public static EtcdConnection of(String endpoints) {
    return builder().endpoints(endpoints).build();
  }

  /** Endpoints from {@value #ENDPOINTS_ENV}, else {@value #DEFAULT_ENDPOINTS}. */
  public static EtcdConnection fromEnvironment() {
    return of(endpointsFrom(System.getenv()));
  }

  /** The endpoints string {@link #fromEnvironment()} would use for {@code env}. */
  public static String endpointsFrom(Map<String, String> env) {
    String fromEnv = env.get(ENDPOINTS_ENV);
    return fromEnv == null || fromEnv.isBlank() ? DEFAULT_ENDPOINTS : fromEnv;
  }

  public static Builder builder() {
    return new Builder();
  }

  /**
   * Parses comma-separated endpoints. Each is {@code http://host:port}, {@code https://host:port}
   * or a bare {@code host:port} (taken as http).
   *
   * @throws IllegalArgumentException naming the first bad endpoint
   */
  public static List<URI> parseEndpoints(String endpoints) {
    requireNonNull(endpoints, "endpoints");
    ImmutableList.Builder<URI> out = ImmutableList.builder();
    for (String e : Splitter.on(',').trimResults().omitEmptyStrings().split(endpoints)) {
      String withScheme = e.contains("://") ? e : "http://" + e;
      URI uri;
      try {
        uri = new URI(withScheme);
      } catch (URISyntaxException ex) {
        throw new IllegalArgumentException(
            "endpoints: " + Validation.quote(e) + " (expected: http(s)://host:port)", ex);
      }
      if (!("http".equals(uri.getScheme()) || "https".equals(uri.getScheme()))
          || uri.getHost() == null
          || uri.getPort() < 1
          || (uri.getPath() != null && !uri.getPath().isEmpty() && !uri.getPath().equals("/"))
          || uri.getQuery() != null
          || uri.getUserInfo() != null) {
        throw new IllegalArgumentException(
            "endpoints: " + Validation.quote(e) + " (expected: http(s)://host:port)");
      }
      out.add(URI.create(uri.getScheme() + "://" + uri.getRawAuthority()));
    }
    ImmutableList<URI> list = out.build();
    checkArgument(!list.isEmpty(), "endpoints: %s (expected: at least one http(s)://host:port)",
        Validation.quote(endpoints));
    return list;
  }

  public List<URI> endpoints() {
    return endpoints;
  }

  /** Endpoints joined with commas, as accepted by {@link #of}. */
  public String endpointsString() {
    return String.join(",", endpoints.stream().map(URI::toString).toList());
  }

  @Nullable
  public String user() {
    return user;
  }

  public boolean tls() {
    return caCert != null || endpoints.stream().anyMatch(u -> "https".equals(u.getScheme()));
  }

  public Duration connectTimeout() {
    return connectTimeout;
  }

  /**
   * Builds a jetcd client for this cluster. Connecting is lazy (jetcd dials on first use), so this
   * does not fail when etcd is down; the caller owns the client and closes it.
   *
   * <p>Why a jetcd {@link Client}: it is the handle the caller shares with every steelyard part
   * that takes one ({@code ServiceRegistration.builder(Client, ...)}, {@code SharedLease}, {@code
   * InstanceStore}) and uses for etcd calls of its own; wrapping it would hide the API a caller
   * needs for those without replacing any of it.
   */
  public Client connect() {
    ClientBuilder b =
        Client.builder()
            .endpoints(endpoints.toArray(URI[]::new))
            .connectTimeout(connectTimeout)
            // Detect a dead member behind a silent network within seconds, not minutes.
            .keepaliveTime(KEEPALIVE_TIME)
            .keepaliveTimeout(KEEPALIVE_TIMEOUT)
            // Ping only connections that carry a call. jetcd's default (true) pings every
            // connection, and etcd (grpc-go, PermitWithoutStream=false) counts each ping on a
            // connection without a stream as a strike and answers the third with GOAWAY
            // ENHANCE_YOUR_CALM "too_many_pings". jetcd balances round_robin over every member,
            // so on a 3-member cluster the members that carry no watch or keepalive stream got
            // that GOAWAY about 40 s after going idle (EtcdConnectionKeepaliveIT). With calls in
            // flight etcd only asks for 5 s between pings (--grpc-keepalive-min-time), which
            // KEEPALIVE_TIME respects.
            .keepaliveWithoutCalls(false)
            // Fail a call at once when no member can be connected to, with the reason (refused
            // connection, failed TLS handshake), instead of waiting for a connection until the
            // caller's timeout: a certificate etcd rejects then surfaces as such within a
            // second or two rather than as "etcd did not answer". Calls still wait while a
            // connection is being set up; every caller retries unavailability with its own
            // backoff (agent, watcher) or reports it (CLI).
            .waitForReady(false)
            // jetcd retries idempotent calls that fail UNAVAILABLE, and any call whose token
            // expired after logging in again; 100 ms then 200 ms keeps both quick.
            .retryDelay(JETCD_RETRY_DELAY.toMillis())
            .retryMaxDelay(JETCD_RETRY_MAX_DELAY.toMillis());
    if (user != null) {
      b.user(ByteSequence.from(user, StandardCharsets.UTF_8));
      b.password(ByteSequence.from(requireNonNull(password), StandardCharsets.UTF_8));
    }
    // Names an http:// URL aimed at a TLS port and the other way round, which gRPC reports as a
    // closed connection.
    SchemeMismatch schemeMismatch = new SchemeMismatch(endpoints);
    TlsFiles files = caCert == null ? null : TlsFiles.of(caCert, clientCert, clientKey);
    if (files != null && clientCert != null) {
      // Names a client certificate etcd refuses, which gRPC often reports as a closed connection.
      b.interceptor(schemeMismatch, new ClientCertificateCheck(files));
    } else {
      b.interceptor(schemeMismatch);
    }
    if (tls()) {
      try {
        b.sslContext(
            ssl -> {
              if (files != null) {
                // Trust and client certificate are the files' contents at each handshake, so
                // rotated files serve every new connection, reconnects of this client included.
                files.require();
                ssl.trustManager(files.trustManager());
                if (clientCert != null) {
                  ssl.keyManager(files.keyManager());
                }
              }
            });
      } catch (javax.net.ssl.SSLException e) {
        throw new IllegalArgumentException("tls: cannot build an SSL context: " + e.getMessage(), e);
      }
    }
    return b.build();
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof EtcdConnection c
        && c.endpoints.equals(endpoints)
        && Objects.equals(c.user, user)
        && Objects.equals(c.password, password)
        && Objects.equals(c.caCert, caCert)
        && Objects.equals(c.clientCert, clientCert)
        && Objects.equals(c.clientKey, clientKey)
        && c.connectTimeout.equals(connectTimeout);
  }

  @Override
  public int hashCode() {
    return Objects.hash(endpoints, user, password, caCert, clientCert, clientKey, connectTimeout);
  }

  @Override
  public String toString() {
    // Never print the password.
    return "EtcdConnection{endpoints=" + endpointsString()
        + (user != null ? ", user=" + user : "")
        + (tls() ? ", tls" : "")
        + "}";
  }

  /** Builds an {@link EtcdConnection}; each setting may be given once. */
  public static final class Builder {
    private ImmutableList<URI> endpoints;
    @Nullable private String user;
    @Nullable private String password;
    @Nullable private Path caCert;
    @Nullable private Path clientCert;
    @Nullable private Path clientKey;
    private Duration connectTimeout = Duration.ofMillis(DEFAULT_CONNECT_TIMEOUT_MILLIS);
    private boolean connectTimeoutSet;

    private Builder() {}

    /** Comma-separated endpoints; see {@link EtcdConnection#parseEndpoints}. */
    public Builder endpoints(String endpoints) {
      return endpoints(parseEndpoints(endpoints));
    }

    public Builder endpoints(List<URI> endpoints) {
      checkState(this.endpoints == null, "endpoints already set");
      requireNonNull(endpoints, "endpoints");
      checkArgument(!endpoints.isEmpty(), "endpoints: [] (expected: at least one)");
      this.endpoints = ImmutableList.copyOf(endpoints);
      return this;
    }

    /** Authenticate as {@code user} with {@code password}. */
    public Builder user(String user, String password) {
      checkState(this.user == null, "user already set");
      requireNonNull(user, "user");
      requireNonNull(password, "password");
      checkArgument(!user.isEmpty(), "user: '' (expected: a user name)");
      this.user = user;
      this.password = password;
      return this;
    }

    /**
     * Parses {@code USER:PASSWORD} as the CLI's {@code --user} does.
     *
     * @throws IllegalArgumentException without echoing the password
     */
    public Builder userPassword(String userColonPassword) {
      requireNonNull(userColonPassword, "user");
      int colon = userColonPassword.indexOf(':');
      checkArgument(colon > 0, "user: expected USER:PASSWORD");
      return user(userColonPassword.substring(0, colon), userColonPassword.substring(colon + 1));
    }

    /**
     * TLS with a CA certificate to trust and, optionally, a client certificate and key (both or
     * neither) for mutual TLS. Files must exist.
     */
    public Builder tls(Path caCert, @Nullable Path clientCert, @Nullable Path clientKey) {
      checkState(this.caCert == null, "tls already set");
      requireNonNull(caCert, "caCert");
      checkArgument(
          (clientCert == null) == (clientKey == null),
          "tls: client cert %s and key %s (expected: both or neither)", clientCert, clientKey);
      for (Path p : new Path[] {caCert, clientCert, clientKey}) {
        checkArgument(p == null || Files.isReadable(p), "tls: %s (expected: a readable file)", p);
      }
      this.caCert = caCert;
      this.clientCert = clientCert;
      this.clientKey = clientKey;
      return this;
    }

    /**
     * The security flags every steelyard binary takes ({@code bin/steelyard}, {@code
     * greeter-server}, {@code greeter-client}), so they mean the same everywhere; each may be
     * null. {@code --user USER:PASSWORD} as {@link #userPassword}; {@code --cacert FILE} a CA to
     * trust; {@code --cert FILE --key FILE} a client certificate for mutual TLS, which needs
     * {@code --cacert}.
     *
     * <pre>{@code
     * EtcdConnection.builder().endpoints(endpoints).securityOptions(user, cacert, cert, key).build();
     * }</pre>
     *
     * @throws IllegalArgumentException naming the flag at fault (never echoing a password)
     */
    public Builder securityOptions(
        @Nullable String userColonPassword,
        @Nullable Path caCert,
        @Nullable Path clientCert,
        @Nullable Path clientKey) {
      if (userColonPassword != null) {
        userPassword(userColonPassword);
      }
      if (caCert != null) {
        tls(caCert, clientCert, clientKey);
      } else if (clientCert != null || clientKey != null) {
        throw new IllegalArgumentException("tls: --cert and --key need --cacert");
      }
      return this;
    }

    public Builder connectTimeout(Duration timeout) {
      checkState(!connectTimeoutSet, "connectTimeout already set");
      requireNonNull(timeout, "timeout");
      checkArgument(
          !timeout.isNegative() && !timeout.isZero(), "connectTimeout: %s (expected: > 0)", timeout);
      this.connectTimeout = timeout;
      this.connectTimeoutSet = true;
      return this;
    }

    public Builder connectTimeoutMillis(long millis) {
      return connectTimeout(Duration.ofMillis(millis));
    }

    public EtcdConnection build() {
      checkState(endpoints != null, "endpoints not set");
      return new EtcdConnection(this);
    }
  }
}
