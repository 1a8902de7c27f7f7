package io.steelyard.registry;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

class MetricsEndpointTest {

  private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

  private HttpResponse<String> send(String method, String url) throws Exception {
    HttpRequest request = HttpRequest.newBuilder(URI.create(url))
        .method(method, HttpRequest.BodyPublishers.noBody()).timeout(Duration.ofSeconds(10)).build();
    return http.send(request, HttpResponse.BodyHandlers.ofString());
  }

  @Test
  void eachScrapeServesTheTextOfThatMoment() throws Exception {
    AtomicInteger scrapes = new AtomicInteger();
    try (MetricsEndpoint metrics =
        MetricsEndpoint.start("127.0.0.1", 0, () -> "up " + scrapes.incrementAndGet() + "\n")) {
      assertThat(metrics.url()).isEqualTo("http://127.0.0.1:" + metrics.port() + "/metrics");

      HttpResponse<String> first = send("GET", metrics.url());
      HttpResponse<String> second = send("GET", metrics.url());

      assertThat(first.statusCode()).isEqualTo(200);
      assertThat(first.headers().firstValue("Content-Type")).hasValue(MetricsEndpoint.CONTENT_TYPE);
      assertThat(first.body()).isEqualTo("up 1\n");
      assertThat(second.body()).isEqualTo("up 2\n");
    }
  }

  @Test
  void onlyGetAndHeadAreAnswered() throws Exception {
    try (MetricsEndpoint metrics = MetricsEndpoint.start("127.0.0.1", 0, () -> "up 1\n")) {
      assertThat(send("HEAD", metrics.url()).statusCode()).isEqualTo(200);
      HttpResponse<String> post = send("POST", metrics.url());
      assertThat(post.statusCode()).isEqualTo(405);
      assertThat(post.headers().firstValue("Allow")).hasValue("GET, HEAD");
    }
  }

  @Test
  void closingStopsServing() throws Exception {
    MetricsEndpoint metrics = MetricsEndpoint.start("127.0.0.1", 0, () -> "up 1\n");
    String url = metrics.url();
    metrics.close();

    assertThatThrownBy(() -> send("GET", url)).isInstanceOf(IOException.class);
  }

  @Test
  void aPortOutOfRangeIsRefusedWithTheValue() {
    assertThatThrownBy(() -> MetricsEndpoint.start("127.0.0.1", 70_000, () -> ""))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("port: 70000 (expected: 0..65535)");
  }
}
