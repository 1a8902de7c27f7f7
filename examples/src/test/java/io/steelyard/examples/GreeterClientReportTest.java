package io.steelyard.examples;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class GreeterClientReportTest {

  @Test
  void expectedSharesFollowWeights() {
    GreeterClientReport r =
        new GreeterClientReport("t", Map.of("a:1", 125L, "b:1", 250L, "c:1", 625L), Map.of(),
            Map.of("a:1", 1, "b:1", 2, "c:1", 5), 10);
    assertThat(r.rows.get("c:1").expected()).isEqualTo(0.625);
    assertThat(r.rows.get("c:1").observed()).isEqualTo(0.625);
    assertThat(r.check(0.5, 0L)).isEmpty();
  }

  @Test
  void shareOutsideTolerancesIsAProblem() {
    GreeterClientReport r =
        new GreeterClientReport("t", Map.of("a:1", 500L, "b:1", 500L), Map.of(),
            Map.of("a:1", 1, "b:1", 3), 10);
    assertThat(r.check(3.0, null)).hasSize(2).first().asString().contains("a:1 observed 50.0%, expected 25.0%");
  }

  @Test
  void drainedBackendMustGetNoCallAtAll() {
    GreeterClientReport r =
        new GreeterClientReport("t", Map.of("a:1", 999L, "b:1", 1L), Map.of(),
            Map.of("a:1", 1, "b:1", 0), 10);
    assertThat(r.check(3.0, null)).containsExactly("b:1 is drained (weight 0) but answered 1 calls");
  }

  @Test
  void allDrainedMeansEqualShares() {
    GreeterClientReport r =
        new GreeterClientReport("t", Map.of("a:1", 50L, "b:1", 50L), Map.of(),
            Map.of("a:1", 0, "b:1", 0), 10);
    assertThat(r.rows.get("a:1").expected()).isEqualTo(0.5);
    assertThat(r.check(3.0, null)).isEmpty();
  }

  @Test
  void failuresBeyondTheAllowanceAreAProblem() {
    GreeterClientReport r =
        new GreeterClientReport("t", Map.of("a:1", 10L), Map.of("UNAVAILABLE", 2L),
            Map.of("a:1", 1), 10);
    assertThat(r.check(null, 1L)).hasSize(1);
    assertThat(r.check(null, 2L)).isEmpty();
  }

  @Test
  void jsonCarriesEveryBackend() {
    GreeterClientReport r =
        new GreeterClientReport("etcd://h:1/greeter", Map.of("a:1", 3L), Map.of("UNAVAILABLE", 1L),
            Map.of("a:1", 1, "b:1", 1), 7);
    assertThat(r.json(List.of("x \"y\"")))
        .isEqualTo("{\"target\":\"etcd://h:1/greeter\",\"succeeded\":3,\"failed\":1,"
            + "\"failures\":{\"UNAVAILABLE\":1},\"elapsedMillis\":7,\"backends\":["
            + "{\"address\":\"a:1\",\"weight\":1,\"calls\":3,\"observedShare\":1.0000,\"expectedShare\":0.5000},"
            + "{\"address\":\"b:1\",\"weight\":1,\"calls\":0,\"observedShare\":0.0000,\"expectedShare\":0.5000}],"
            + "\"problems\":[\"x \\\"y\\\"\"]}" + System.lineSeparator());
  }

  @Test
  void targetNamesEtcdHostsWithoutScheme() {
    assertThat(GreeterClient.target("http://127.0.0.1:2379,127.0.0.2:2380", "greeter"))
        .isEqualTo("etcd:///greeter?endpoints=127.0.0.1:2379,127.0.0.2:2380");
    assertThat(GreeterClient.target("http://127.0.0.1:2379", "greeter"))
        .isEqualTo("etcd://127.0.0.1:2379/greeter");
    assertThatThrownBy(() -> GreeterClient.target("http://127.0.0.1:2379", "../x"))
        .isInstanceOf(IllegalArgumentException.class);
  }

  @Test
  void durationsReadLikeTheCli() {
    assertThat(Durations.parse("500ms")).isEqualTo(Duration.ofMillis(500));
    assertThat(Durations.parse("3s")).isEqualTo(Duration.ofSeconds(3));
    assertThat(Durations.parse("2m")).isEqualTo(Duration.ofMinutes(2));
    assertThatThrownBy(() -> Durations.parse("3")).hasMessageContaining("expected");
  }
}
