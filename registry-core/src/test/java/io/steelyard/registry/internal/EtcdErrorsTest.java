package io.steelyard.registry.internal;

import static org.assertj.core.api.Assertions.assertThat;

import io.etcd.jetcd.common.exception.ErrorCode;
import io.etcd.jetcd.common.exception.EtcdExceptionFactory;
import io.grpc.Status;
import io.netty.handler.ssl.NotSslRecordException;
import io.netty.handler.ssl.SslHandshakeTimeoutException;
import io.steelyard.registry.RegistryException;
import io.steelyard.registry.RegistryException.Kind;
import java.net.ConnectException;
import java.security.cert.CertificateExpiredException;
import java.time.Duration;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeoutException;
import javax.net.ssl.SSLHandshakeException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * The classifier on its own, for the cases that cannot be provoked against a test etcd (a TLS
 * peer, a token request that fails, every gRPC code). {@code EtcdCallsIT} and {@code
 * EtcdConnectionAuthIT} provoke the others against a real etcd.
 */
class EtcdErrorsTest {

  @ParameterizedTest(name = "{0} -> {1}")
  @CsvSource({
    "UNAVAILABLE, UNAVAILABLE",
    "DEADLINE_EXCEEDED, UNAVAILABLE",
    "CANCELLED, UNAVAILABLE",
    "UNKNOWN, UNAVAILABLE",
    "INTERNAL, UNAVAILABLE",
    "ABORTED, UNAVAILABLE",
    "DATA_LOSS, UNAVAILABLE",
    "NOT_FOUND, NOT_REGISTERED",
    "PERMISSION_DENIED, PERMISSION_DENIED",
    "UNAUTHENTICATED, UNAUTHENTICATED",
    "RESOURCE_EXHAUSTED, LIMIT",
    "OUT_OF_RANGE, COMPACTED",
    "INVALID_ARGUMENT, REFUSED",
    "FAILED_PRECONDITION, REFUSED",
    "ALREADY_EXISTS, REFUSED",
    "UNIMPLEMENTED, REFUSED",
  })
  void everyGrpcCodeHasAKind(Status.Code code, Kind expected) {
    assertThat(EtcdErrors.classify(Status.fromCode(code).asRuntimeException())).isEqualTo(expected);
    assertThat(EtcdErrors.classify(Status.fromCode(code).asException())).isEqualTo(expected);
    // jetcd's own exception carries the same code under its own enum.
    assertThat(
            EtcdErrors.classify(
                EtcdExceptionFactory.newEtcdException(ErrorCode.valueOf(code.name()), "x")))
        .isEqualTo(expected);
  }

  @Test
  void futureWrappersAreLookedThrough() {
    Throwable denied = Status.PERMISSION_DENIED.asRuntimeException();

    assertThat(EtcdErrors.classify(new ExecutionException(new CompletionException(denied))))
        .isEqualTo(Kind.PERMISSION_DENIED);
    assertThat(EtcdErrors.unwrap(new CompletionException(new ExecutionException(denied))))
        .isSameAs(denied);
  }

  @Test
  void leaseNotFoundIsTheNotFoundCodeNotTheMessage() {
    // What jetcd's keepalive delivers when etcd answers with TTL 0.
    Throwable keepAlive =
        EtcdExceptionFactory.newEtcdException(
            ErrorCode.NOT_FOUND, "etcdserver: requested lease not found");
    // The same words under another code are not a lost lease.
    Throwable sameWords =
        Status.UNKNOWN.withDescription("etcdserver: requested lease not found").asRuntimeException();

    assertThat(EtcdErrors.isLeaseNotFound(keepAlive)).isTrue();
    assertThat(EtcdErrors.isLeaseNotFound(new CompletionException(keepAlive))).isTrue();
    assertThat(EtcdErrors.isLeaseNotFound(sameWords)).isFalse();
    assertThat(EtcdErrors.classify(sameWords)).isEqualTo(Kind.UNAVAILABLE);
  }

  @Test
  void leaseNotFoundIsStillFoundInsideTheRegistryException() {
    RegistryException e =
        EtcdErrors.toRegistryException("revoke lease 1", Status.NOT_FOUND.asRuntimeException());

    assertThat(e.kind()).isEqualTo(Kind.NOT_REGISTERED);
    assertThat(EtcdErrors.isLeaseNotFound(e)).isTrue();
    assertThat(EtcdErrors.isLeaseNotFound(new ExecutionException(e))).isTrue();
  }

  @Test
  void aTokenRequestThatDidNotReachEtcdIsUnavailableNotUnauthenticated() {
    // jetcd fails a call with UNAUTHENTICATED whenever getting a token failed, whatever the reason.
    Throwable away =
        Status.UNAUTHENTICATED.withCause(Status.UNAVAILABLE.asRuntimeException()).asRuntimeException();
    Throwable slow =
        Status.UNAUTHENTICATED.withCause(Status.DEADLINE_EXCEEDED.asException()).asRuntimeException();
    Throwable wrongPassword =
        Status.UNAUTHENTICATED
            .withCause(
                Status.INVALID_ARGUMENT
                    .withDescription("etcdserver: authentication failed, invalid user ID or password")
                    .asRuntimeException())
            .asRuntimeException();

    assertThat(EtcdErrors.classify(away)).isEqualTo(Kind.UNAVAILABLE);
    assertThat(EtcdErrors.classify(slow)).isEqualTo(Kind.UNAVAILABLE);
    assertThat(EtcdErrors.classify(wrongPassword)).isEqualTo(Kind.UNAUTHENTICATED);
  }

  @Test
  void tlsFailuresAnywhereInTheChainAreTls() {
    Throwable untrusted =
        Status.UNAVAILABLE
            .withCause(new SSLHandshakeException("PKIX path building failed"))
            .asRuntimeException();
    Throwable plainEndpoint =
        Status.UNAVAILABLE
            .withCause(new NotSslRecordException("not an SSL/TLS record: 000012"))
            .asRuntimeException();
    Throwable expired =
        Status.UNAVAILABLE
            .withCause(new RuntimeException(new CertificateExpiredException("NotAfter: ...")))
            .asRuntimeException();

    assertThat(EtcdErrors.classify(untrusted)).isEqualTo(Kind.TLS);
    assertThat(EtcdErrors.classify(plainEndpoint)).isEqualTo(Kind.TLS);
    assertThat(EtcdErrors.classify(expired)).isEqualTo(Kind.TLS);
    assertThat(Kind.TLS.refused()).isTrue();
  }

  @Test
  void aHandshakeThatTimedOutIsUnreachabilityNotATlsRefusal() {
    Throwable slow =
        Status.UNAVAILABLE
            .withCause(new SslHandshakeTimeoutException("handshake timed out after 10000ms"))
            .asRuntimeException();

    assertThat(EtcdErrors.classify(slow)).isEqualTo(Kind.UNAVAILABLE);
  }

  @Test
  void failuresWithoutAStatusAreUnavailable() {
    assertThat(EtcdErrors.classify(new TimeoutException())).isEqualTo(Kind.UNAVAILABLE);
    assertThat(EtcdErrors.classify(new CancellationException())).isEqualTo(Kind.UNAVAILABLE);
    assertThat(EtcdErrors.classify(new ConnectException("Connection refused")))
        .isEqualTo(Kind.UNAVAILABLE);
    assertThat(
            EtcdErrors.classify(
                Status.UNAVAILABLE.withCause(new ConnectException("refused")).asRuntimeException()))
        .isEqualTo(Kind.UNAVAILABLE);
  }

  @Test
  void compactedIsItsOwnKind() {
    assertThat(EtcdErrors.classify(EtcdExceptionFactory.newCompactedException(42)))
        .isEqualTo(Kind.COMPACTED);
  }

  @Test
  void aRegistryExceptionKeepsItsKind() {
    RegistryException conflict = new RegistryException(Kind.CONFLICT, "changed", null);

    assertThat(EtcdErrors.classify(new CompletionException(conflict))).isEqualTo(Kind.CONFLICT);
    assertThat(EtcdErrors.toRegistryException("x", new ExecutionException(conflict)))
        .isSameAs(conflict);
  }

  @Test
  void refusalsNameTheProblemAndTheOperationOnOneLine() {
    RegistryException e =
        EtcdErrors.toRegistryException(
            "list greeter",
            Status.PERMISSION_DENIED
                .withDescription("etcdserver: permission denied")
                .asRuntimeException());

    assertThat(e.kind()).isEqualTo(Kind.PERMISSION_DENIED);
    assertThat(e.getMessage())
        .isEqualTo(
            "etcd refused list greeter: permission denied"
                + " (PERMISSION_DENIED: etcdserver: permission denied)");
    assertThat(e.getCause()).isInstanceOf(io.grpc.StatusRuntimeException.class);
  }

  @Test
  void theDescriptionIsTakenFromDeeperInTheChainWhenTheTopHasNone() {
    RegistryException e =
        EtcdErrors.toRegistryException(
            "list greeter",
            Status.UNAUTHENTICATED
                .withCause(
                    Status.INVALID_ARGUMENT
                        .withDescription("etcdserver: authentication failed")
                        .asRuntimeException())
                .asRuntimeException());

    assertThat(e.getMessage())
        .isEqualTo(
            "etcd refused list greeter: authentication failed"
                + " (UNAUTHENTICATED: etcdserver: authentication failed)");
  }

  @Test
  void aLimitSaysSoAndShowsTheLimitHit() {
    RegistryException e =
        EtcdErrors.toRegistryException(
            "list greeter",
            Status.RESOURCE_EXHAUSTED
                .withDescription("gRPC message exceeds maximum size 4194304: 5243006")
                .asRuntimeException());

    assertThat(e.kind()).isEqualTo(Kind.LIMIT);
    assertThat(e.getMessage())
        .startsWith("etcd refused list greeter: over a size or quota limit")
        .contains("4194304");
  }

  @Test
  void tlsMessagesNameTheTlsException() {
    SSLHandshakeException pkix = new SSLHandshakeException("PKIX path building failed\nsecond line");
    pkix.initCause(new java.security.cert.CertPathBuilderException("unable to find valid certification path"));
    RegistryException e =
        EtcdErrors.toRegistryException(
            "get /services/greeter/a:1", Status.UNAVAILABLE.withCause(pkix).asRuntimeException());

    assertThat(e.getMessage())
        .isEqualTo(
            "etcd refused get /services/greeter/a:1: TLS: etcd's certificate is not signed by a CA"
                + " this client trusts (check the CA certificate)"
                + " (SSLHandshakeException: PKIX path building failed second line)");
  }

  @Test
  void tlsProblemsAreNamedByTheExceptionTypes() {
    SSLHandshakeException hostname = new SSLHandshakeException("No name matching localhost found");
    hostname.initCause(new java.security.cert.CertificateException("No name matching localhost found"));
    SSLHandshakeException expired = new SSLHandshakeException("validity check failed");
    expired.initCause(new java.security.cert.CertificateExpiredException("NotAfter: ..."));

    assertThat(EtcdErrors.tlsProblem(hostname)).contains("does not name the host");
    assertThat(EtcdErrors.tlsProblem(expired)).contains("etcd's certificate has expired");
    assertThat(EtcdErrors.tlsProblem(new SSLHandshakeException("Received fatal alert: bad_certificate")))
        .contains("etcd rejected the client certificate");
    assertThat(EtcdErrors.tlsProblem(new javax.net.ssl.SSLException("something else")))
        .isEqualTo("TLS handshake failed");
  }

  @Test
  void aSchemeMismatchIsTlsAndNamesTheUrl() {
    RegistryException e =
        EtcdErrors.toRegistryException(
            "list greeter",
            Status.UNAVAILABLE
                .withCause(new SchemeMismatch.MismatchException("http://h:1 is a TLS port: use https://h:1"))
                .asRuntimeException());

    assertThat(e.kind()).isEqualTo(RegistryException.Kind.TLS);
    assertThat(e.getMessage()).isEqualTo("etcd refused list greeter: TLS: http://h:1 is a TLS port: use https://h:1");
  }

  @Test
  void anAnonymousRequestToAnAuthEnabledEtcdIsUnauthenticated() {
    RegistryException e =
        EtcdErrors.toRegistryException(
            "list greeter",
            Status.INVALID_ARGUMENT.withDescription("etcdserver: user name is empty").asRuntimeException());

    assertThat(e.kind()).isEqualTo(RegistryException.Kind.UNAUTHENTICATED);
    assertThat(e.getMessage()).startsWith("etcd refused list greeter: authentication failed: etcd requires a user");
  }

  @Test
  void unreachableMessagesSayEtcdCouldNotBeReached() {
    RegistryException e =
        EtcdErrors.toRegistryException(
            "put /services/greeter/a:1",
            Status.UNAVAILABLE.withDescription("io exception").asRuntimeException());

    assertThat(e.kind()).isEqualTo(Kind.UNAVAILABLE);
    assertThat(e.getMessage())
        .isEqualTo("etcd could not be reached for put /services/greeter/a:1 (UNAVAILABLE: io exception)");
  }

  @Test
  void timeoutsSayHowLongWasWaited() {
    RegistryException e =
        EtcdErrors.timedOut("list greeter", Duration.ofSeconds(5), new TimeoutException());

    assertThat(e.kind()).isEqualTo(Kind.UNAVAILABLE);
    assertThat(e.getMessage()).isEqualTo("etcd did not answer within 5000ms (list greeter)");
  }

  @Test
  void onlyRefusalsAreRefused() {
    assertThat(Kind.values())
        .filteredOn(Kind::refused)
        .containsExactlyInAnyOrder(
            Kind.PERMISSION_DENIED, Kind.UNAUTHENTICATED, Kind.TLS, Kind.LIMIT, Kind.REFUSED);
  }
}
