package io.steelyard.console;

import static org.assertj.core.api.Assertions.assertThat;

import com.sun.net.httpserver.Headers;
import java.util.List;
import org.junit.jupiter.api.Test;

class AccessTest {

  private static Headers headers(String... pairs) {
    Headers h = new Headers();
    for (int i = 0; i < pairs.length; i += 2) {
      h.add(pairs[i], pairs[i + 1]);
    }
    return h;
  }

  @Test
  void withoutATokenEveryRequestIsAuthorized() {
    assertThat(new Access(null, true, false).authorized(headers())).isTrue();
  }

  @Test
  void withATokenOnlyTheBearerOrTheCookieAuthorizes() {
    Access access = new Access("0123456789abcdef", false, false);

    assertThat(access.authorized(headers())).isFalse();
    assertThat(access.authorized(headers("Authorization", "Bearer 0123456789abcdef"))).isTrue();
    assertThat(access.authorized(headers("Authorization", "bearer 0123456789abcdef"))).isTrue();
    assertThat(access.authorized(headers("Authorization", "Bearer 0123456789abcdeF"))).isFalse();
    assertThat(access.authorized(headers("Authorization", "Bearer 0123456789abcde"))).isFalse();
    assertThat(access.authorized(headers("Cookie", "a=b; steelyard-console-token=0123456789abcdef")))
        .isTrue();
    assertThat(access.authorized(headers("Cookie", "steelyard-console-token=nope"))).isFalse();
  }

  @Test
  void loopbackOnlyServesOnlyLoopbackHostNames() {
    Access access = new Access(null, true, false);

    assertThat(access.hostAllowed(headers("Host", "127.0.0.1:8088"))).isTrue();
    assertThat(access.hostAllowed(headers("Host", "localhost:8088"))).isTrue();
    assertThat(access.hostAllowed(headers("Host", "[::1]:8088"))).isTrue();
    assertThat(access.hostAllowed(headers("Host", "rebound.example:8088"))).isFalse();
    assertThat(new Access("0123456789abcdef", false, false)
        .hostAllowed(headers("Host", "console.example"))).isTrue();
    assertThat(new Access(null, false, true).hostAllowed(headers("Host", "console.example")))
        .isTrue();
  }

  @Test
  void writesNeedTheConsoleHeaderAndTheConsolesOwnOrigin() {
    Access access = new Access(null, true, false);

    assertThat(access.writeRefusal(headers("Host", "127.0.0.1:8088"))).contains("X-Steelyard-Console");
    assertThat(access.writeRefusal(headers("Host", "127.0.0.1:8088", "X-Steelyard-Console", "1")))
        .isNull();
    assertThat(access.writeRefusal(headers("Host", "127.0.0.1:8088", "X-Steelyard-Console", "1",
        "Origin", "http://127.0.0.1:8088"))).isNull();
    assertThat(access.writeRefusal(headers("Host", "127.0.0.1:8088", "X-Steelyard-Console", "1",
        "Origin", "http://evil.example"))).contains("evil.example");
    assertThat(access.writeRefusal(headers("Host", "127.0.0.1:8088", "X-Steelyard-Console", "1",
        "Origin", "null"))).isNotNull();
  }

  @Test
  void theTokenCookieIsSecureOverTls() {
    assertThat(new Access("0123456789abcdef", false, true).cookieFor("0123456789abcdef"))
        .isEqualTo("steelyard-console-token=0123456789abcdef; Path=/; HttpOnly; SameSite=Strict; Secure");
    assertThat(new Access("0123456789abcdef", false, false).cookieFor("0123456789abcdef"))
        .doesNotContain("Secure");
  }

  @Test
  void cookieIsFoundAmongOthers() {
    assertThat(Access.cookie(List.of("x=1", "y=2; steelyard-console-token=abc; z=3"))).isEqualTo("abc");
    assertThat(Access.cookie(null)).isNull();
  }
}
