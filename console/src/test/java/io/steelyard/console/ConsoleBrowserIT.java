package io.steelyard.console;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.etcd.jetcd.Client;
import io.etcd.jetcd.KeyValue;
import io.steelyard.registry.admin.InstanceStore;
import io.steelyard.registry.admin.InstanceWrite;
import io.steelyard.registry.admin.RegisteredInstance;
import io.steelyard.registry.EtcdConnection;
import io.steelyard.registry.KeyLayout;
import io.steelyard.registry.Validation;
import io.steelyard.testkit.EtcdCluster;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.awaitility.core.ConditionFactory;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.openqa.selenium.By;
import org.openqa.selenium.StaleElementReferenceException;
import org.openqa.selenium.WebElement;

/**
 * The console in a real browser (headless Chromium) against a real etcd: what the pages show,
 * how fast they follow etcd, and that actions go through the CLI's code path and checks.
 */
@Timeout(240)
class ConsoleBrowserIT {

  @RegisterExtension static final EtcdCluster etcd = EtcdCluster.builder().build();

  private static final String TOKEN = "s3cret-console-token-0123456789";

  private static Client client;
  private static Fleet fleet;
  private static InstanceStore store;
  private static ConsoleServer console;
  private static Browser browser;
  private static FakeMetrics metrics;
  private static final HttpClient http = HttpClient.newHttpClient();

  @BeforeAll
  static void start() {
    client = Client.builder().endpoints(etcd.endpoints()).build();
    fleet = new Fleet(client);
    store = new InstanceStore(client, KeyLayout.defaults(), Duration.ofSeconds(5));
    metrics = new FakeMetrics("greeter");
    console = consoleBuilder().start();
    browser = new Browser();
  }

  @AfterAll
  static void stop() {
    if (browser != null) {
      browser.close();
    }
    if (console != null) {
      console.close();
    }
    metrics.close();
    client.close();
  }

  private static ConsoleServer.Builder consoleBuilder() {
    return ConsoleServer.builder(EtcdConnection.of(etcd.endpoints())).port(0);
  }

  private static ConditionFactory within(Duration d) {
    return await().atMost(d).pollInterval(Duration.ofMillis(50))
        // The page redraws from each update, so an element found a moment ago may be gone.
        .ignoreExceptionsMatching(e -> e instanceof StaleElementReferenceException
            || e instanceof org.openqa.selenium.NoSuchElementException);
  }

  /** Clicks what {@code find} finds, finding it again if the page redrew it in between. */
  private static void click(java.util.function.Supplier<WebElement> find) {
    within(Duration.ofSeconds(5)).until(() -> {
      find.get().click();
      return true;
    });
  }

  private static void registerGreeter(String service, long lease) {
    String[][] instances = {
      {"10.0.4.11:50051", "10", "eu-west-1a", "1.8.2"},
      {"10.0.4.12:50051", "10", "eu-west-1b", "1.8.2"},
      {"10.0.4.13:50051", "5", "eu-west-1c", "1.9.0"},
    };
    for (String[] i : instances) {
      fleet.register(service, i[0], Integer.parseInt(i[1]),
          Map.of("zone", i[2], "region", "eu-west-1", "version", i[3],
              "metrics", metrics.url(i[0])), lease);
      metrics.rate(i[0], 40.0 * Integer.parseInt(i[1]));
    }
  }

  private static WebElement row(String address) {
    return browser.driver.findElement(By.cssSelector("#instances tbody tr[data-address='" + address + "']"));
  }

  private static String expectedShare(String address) {
    return browser.driver.findElement(By.cssSelector(
        ".chart-row[data-address='" + address + "'] .bar.expected")).getAttribute("data-share");
  }

  private static void openService(ConsoleServer c, String service) {
    browser.driver.get(c.url() + "services/" + service);
    within(Duration.ofSeconds(20)).until(
        () -> browser.driver.findElements(By.cssSelector("#instances tbody tr")).size(),
        n -> n > 0);
  }

  private static HttpResponse<String> post(ConsoleServer c, String body, String... headers)
      throws Exception {
    HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(c.url() + "api/actions"))
        .POST(HttpRequest.BodyPublishers.ofString(body));
    if (headers.length > 0) {
      b.headers(headers);
    }
    return http.send(b.build(), HttpResponse.BodyHandlers.ofString());
  }

  @Test
  void servicesPageListsWhatIsRegisteredAndLinksEachService() {
    long lease = fleet.grant(300);
    registerGreeter("greeter", lease);
    fleet.register("payments", "10.0.7.21:7000", 3, Map.of("zone", "eu-west-1a"), lease);
    fleet.register("payments", "10.0.7.22:7000", 0, Map.of("zone", "eu-west-1b"), lease);

    browser.size(1280, 900);
    browser.driver.get(console.url());

    within(Duration.ofSeconds(20)).untilAsserted(() -> {
      WebElement payments = browser.driver.findElement(
          By.cssSelector("#services tbody tr[data-service='payments']"));
      assertThat(payments.getText()).contains("payments").contains("2").contains("1").contains("3");
      assertThat(browser.driver.findElement(
          By.cssSelector("#services tbody tr[data-service='greeter']")).getText())
          .contains("greeter").contains("25");
    });
    assertThat(browser.driver.findElement(By.linkText("greeter")).getAttribute("href"))
        .isEqualTo(console.url() + "services/greeter");
    // calls/s appear once two scrapes are apart
    within(Duration.ofSeconds(20)).untilAsserted(() -> assertThat(browser.driver.findElement(
        By.cssSelector("#services tbody tr[data-service='greeter'] td:nth-child(5)")).getText())
        .isNotEqualTo("–"));
    browser.screenshot("console-services");
    browser.size(390, 844);
    browser.screenshot("console-services-phone");
    browser.size(1280, 900);

    click(() -> browser.driver.findElement(By.linkText("greeter")));
    within(Duration.ofSeconds(20)).until(
        () -> browser.driver.findElements(By.cssSelector("#instances tbody tr")).size(),
        n -> n == 3);
    assertThat(browser.driver.getCurrentUrl()).isEqualTo(console.url() + "services/greeter");
    within(Duration.ofSeconds(5)).untilAsserted(() ->
        assertThat(row("10.0.4.13:50051").getText()).contains("eu-west-1c").contains("1.9.0"));
    within(Duration.ofSeconds(20)).untilAsserted(() -> {
      assertThat(row("10.0.4.11:50051").getText()).matches("(?s).*\\d+ s.*"); // lease TTL left
      assertThat(browser.driver.findElement(By.cssSelector(
          ".chart-row[data-address='10.0.4.11:50051'] .bar.observed")).getAttribute("data-share"))
          .isNotEmpty();
    });
    browser.screenshot("console-service");
    browser.size(390, 844);
    browser.screenshot("console-service-phone");
    browser.size(1280, 900);
  }

  @Test
  void weightSetThroughTheCliPathShowsOnAnOpenPageWithinTwoSeconds() {
    long lease = fleet.grant(300);
    fleet.register("search", "10.0.9.1:8443", 4, Map.of(), lease);
    fleet.register("search", "10.0.9.2:8443", 4, Map.of(), lease);
    openService(console, "search");
    within(Duration.ofSeconds(10)).until(() -> row("10.0.9.1:8443").getAttribute("data-weight"),
        "4"::equals);

    // What `steelyard weight set search 10.0.9.1:8443 12` runs.
    store.apply(InstanceWrite.setWeight("search", "10.0.9.1:8443", 12));

    within(Duration.ofSeconds(2)).untilAsserted(() -> {
      assertThat(row("10.0.9.1:8443").getAttribute("data-weight")).isEqualTo("12");
      assertThat(expectedShare("10.0.9.1:8443")).isEqualTo("0.7500");
    });
  }

  @Test
  void drainThroughThePageAfterConfirmingSetsWeightZeroAndTheChartFollows() {
    long lease = fleet.grant(300);
    fleet.register("orders", "10.0.8.1:9000", 6, Map.of(), lease);
    fleet.register("orders", "10.0.8.2:9000", 2, Map.of(), lease);
    openService(console, "orders");
    within(Duration.ofSeconds(10)).until(() -> expectedShare("10.0.8.1:9000"), "0.7500"::equals);

    click(() -> row("10.0.8.1:9000").findElement(By.cssSelector("button[data-action='drain']")));
    WebElement dialog = browser.driver.findElement(By.id("confirm-dialog"));
    within(Duration.ofSeconds(5)).until(dialog::isDisplayed);
    assertThat(dialog.getText()).contains("Drain 10.0.8.1:9000?");
    assertThat(browser.driver.findElement(By.id("weight-input")).isDisplayed()).isFalse();
    assertThat(fleet.weight("orders", "10.0.8.1:9000")).as("nothing before confirming").isEqualTo(6);
    browser.screenshot("console-drain-confirm");
    browser.driver.findElement(By.id("confirm-ok")).click();

    within(Duration.ofSeconds(5)).until(() -> fleet.weight("orders", "10.0.8.1:9000"), w -> w == 0);
    within(Duration.ofSeconds(2)).untilAsserted(() -> {
      assertThat(expectedShare("10.0.8.1:9000")).isEqualTo("0.0000");
      assertThat(expectedShare("10.0.8.2:9000")).isEqualTo("1.0000");
      assertThat(row("10.0.8.1:9000").getText()).contains("drained (was 6)");
    });
    assertThat(browser.driver.findElement(By.id("flash")).getText())
        .isEqualTo("10.0.8.1:9000 drained: weight 6 -> 0 (undrain restores 6)");
    within(Duration.ofSeconds(5)).untilAsserted(() ->
        assertThat(browser.driver.findElement(By.id("events")).getText())
            .contains("drain orders 10.0.8.1:9000").contains("127.0.0.1"));
  }

  @Test
  void badWeightTypedInThePageIsRefusedWithTheCliMessageAndEtcdIsUnchanged() {
    long lease = fleet.grant(300);
    fleet.register("billing", "10.0.5.1:443", 5, Map.of(), lease);
    openService(console, "billing");
    KeyValue before = fleet.get("billing", "10.0.5.1:443").orElseThrow();
    String cliMessage = cliWeightMessage(1_000_001);

    click(() -> row("10.0.5.1:443").findElement(By.cssSelector("button[data-action='weight']")));
    WebElement input = browser.driver.findElement(By.id("weight-input"));
    within(Duration.ofSeconds(5)).until(input::isDisplayed);
    input.clear();
    input.sendKeys("1000001");
    browser.driver.findElement(By.id("confirm-ok")).click();

    WebElement error = browser.driver.findElement(By.id("confirm-error"));
    within(Duration.ofSeconds(5)).until(error::isDisplayed);
    assertThat(error.getText()).isEqualTo(cliMessage).isEqualTo("weight: 1000001 (expected: 0..1000000)");
    KeyValue after = fleet.get("billing", "10.0.5.1:443").orElseThrow();
    assertThat(after.getModRevision()).isEqualTo(before.getModRevision());
    assertThat(after.getValue()).isEqualTo(before.getValue());
    browser.driver.findElement(By.id("confirm-cancel")).click();
  }

  /** The message the CLI prints (after "steelyard: ") for {@code weight set ... WEIGHT}. */
  private static String cliWeightMessage(long weight) {
    try {
      Validation.checkWeight(weight);
      throw new AssertionError("accepted " + weight);
    } catch (IllegalArgumentException e) {
      return e.getMessage();
    }
  }

  @Test
  void readOnlyConsoleOffersNoActionAndRefusesAForgedPost() throws Exception {
    long lease = fleet.grant(300);
    fleet.register("catalog", "10.0.6.1:8080", 7, Map.of(), lease);
    KeyValue before = fleet.get("catalog", "10.0.6.1:8080").orElseThrow();
    try (ConsoleServer readOnly = consoleBuilder().readOnly(true).start()) {
      openService(readOnly, "catalog");
      within(Duration.ofSeconds(5)).untilAsserted(() ->
          assertThat(browser.driver.findElement(By.id("mode")).getText()).isEqualTo("read-only"));
      assertThat(browser.driver.findElements(By.cssSelector("button.action"))).isEmpty();

      HttpResponse<String> forged = post(readOnly,
          "{\"action\":\"drain\",\"service\":\"catalog\",\"address\":\"10.0.6.1:8080\"}",
          "X-Steelyard-Console", "1", "Content-Type", "application/json",
          "Origin", readOnly.url().replaceAll("/$", ""));
      // and the same from the page itself, as a script on it would send it
      Object fromPage = browser.driver.executeAsyncScript(
          "const done = arguments[arguments.length - 1];"
              + "steelyard.act({action:'weight',service:'catalog',address:'10.0.6.1:8080',weight:'1'})"
              + ".then(r => done(r.message));");

      assertThat(forged.statusCode()).isEqualTo(403);
      assertThat(forged.body()).contains("read-only");
      assertThat(fromPage).asString().contains("read-only");
    }
    KeyValue after = fleet.get("catalog", "10.0.6.1:8080").orElseThrow();
    assertThat(after.getModRevision()).isEqualTo(before.getModRevision());
  }

  @Test
  void writesFromAnotherOriginOrWithoutTheConsoleHeaderAreRefused() throws Exception {
    long lease = fleet.grant(300);
    fleet.register("ledger", "10.0.3.1:7000", 2, Map.of(), lease);
    String drain = "{\"action\":\"drain\",\"service\":\"ledger\",\"address\":\"10.0.3.1:7000\"}";

    HttpResponse<String> noHeader = post(console, drain, "Content-Type", "application/json");
    HttpResponse<String> otherOrigin = post(console, drain, "X-Steelyard-Console", "1",
        "Origin", "http://evil.example");

    assertThat(noHeader.statusCode()).isEqualTo(403);
    assertThat(otherOrigin.statusCode()).isEqualTo(403);
    assertThat(fleet.weight("ledger", "10.0.3.1:7000")).isEqualTo(2);
  }

  @Test
  void requestWithoutTheTokenIsRefusedWhenATokenIsSet() throws Exception {
    long lease = fleet.grant(300);
    fleet.register("vault", "10.0.2.1:8200", 1, Map.of(), lease);
    try (ConsoleServer guarded = consoleBuilder().token(TOKEN).start()) {
      for (String path : List.of("", "services/vault", "api/services", "api/services/vault",
          "assets/console.js", "api/events")) {
        HttpResponse<String> r = http.send(
            HttpRequest.newBuilder(URI.create(guarded.url() + path)).build(),
            HttpResponse.BodyHandlers.ofString());
        assertThat(r.statusCode()).as(path).isEqualTo(401);
      }
      HttpResponse<String> wrong = http.send(HttpRequest.newBuilder(URI.create(guarded.url() + "api/services"))
          .header("Authorization", "Bearer " + TOKEN + "x").build(), HttpResponse.BodyHandlers.ofString());
      HttpResponse<String> forged = post(guarded,
          "{\"action\":\"drain\",\"service\":\"vault\",\"address\":\"10.0.2.1:8200\"}",
          "X-Steelyard-Console", "1");
      HttpResponse<String> right = http.send(HttpRequest.newBuilder(URI.create(guarded.url() + "api/services"))
          .header("Authorization", "Bearer " + TOKEN).build(), HttpResponse.BodyHandlers.ofString());
      assertThat(wrong.statusCode()).isEqualTo(401);
      assertThat(forged.statusCode()).isEqualTo(401);
      assertThat(right.statusCode()).isEqualTo(200);
      assertThat(fleet.weight("vault", "10.0.2.1:8200")).isEqualTo(1);

      // A browser opens the token link once and then browses with the cookie it set.
      browser.driver.get(guarded.url() + "?token=" + TOKEN);
      within(Duration.ofSeconds(20)).until(() -> browser.driver.findElements(
          By.cssSelector("#services tbody tr[data-service='vault']")).size(), n -> n == 1);
      assertThat(browser.driver.getCurrentUrl()).isEqualTo(guarded.url());
      openService(guarded, "vault");
    }
  }
}
