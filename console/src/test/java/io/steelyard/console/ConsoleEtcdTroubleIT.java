package io.steelyard.console;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.etcd.jetcd.Client;
import io.etcd.jetcd.KeyValue;
import io.steelyard.registry.EtcdConnection;
import io.steelyard.testkit.EtcdAuthAdmin;
import io.steelyard.testkit.EtcdCluster;
import java.time.Duration;
import java.util.Map;
import org.awaitility.core.ConditionFactory;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.openqa.selenium.By;
import org.openqa.selenium.StaleElementReferenceException;
import org.openqa.selenium.WebElement;

/**
 * The console when etcd says no or goes away: a refusal is shown as the CLI names it ("etcd at
 * ENDPOINTS: ..."), an outage turns the pages stale ("etcd unreachable at ENDPOINTS: ...") while
 * they keep the last view, and they recover when etcd is back.
 */
@Timeout(240)
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class ConsoleEtcdTroubleIT {

  @RegisterExtension
  static final EtcdCluster etcd = EtcdCluster.builder().rootPassword("rootpw").build();

  private static Client root;
  private static Fleet fleet;
  private static Browser browser;

  @BeforeAll
  static void start() {
    etcd.authAdmin()
        .addRole("registry-reader", EtcdAuthAdmin.Access.READ, "/services/")
        .addUser("viewer", "viewer-pw", "registry-reader");
    root = EtcdConnection.builder().endpoints(etcd.endpoints()).user("root", "rootpw").build().connect();
    fleet = new Fleet(root);
    long lease = fleet.grant(600);
    fleet.register("greeter", "10.0.4.11:50051", 4, Map.of("zone", "eu-west-1a"), lease);
    fleet.register("greeter", "10.0.4.12:50051", 4, Map.of("zone", "eu-west-1b"), lease);
    browser = new Browser();
  }

  @AfterAll
  static void stop() {
    if (browser != null) {
      browser.close();
    }
    root.close();
  }

  private static ConsoleServer console(String user, String password) {
    return ConsoleServer.builder(EtcdConnection.builder().endpoints(etcd.endpoints())
            .user(user, password).build())
        .port(0)
        .timeout(Duration.ofSeconds(2))
        .start();
  }

  private static ConditionFactory within(Duration d) {
    return await().atMost(d).pollInterval(Duration.ofMillis(100))
        .ignoreExceptionsMatching(e -> e instanceof StaleElementReferenceException
            || e instanceof org.openqa.selenium.NoSuchElementException);
  }

  private static WebElement row(String address) {
    return browser.driver.findElement(By.cssSelector("#instances tbody tr[data-address='" + address + "']"));
  }

  @Test
  @Order(1)
  void aWriteEtcdRefusesIsShownAsTheCliNamesItAndWritesNothing() {
    KeyValue before = fleet.get("greeter", "10.0.4.11:50051").orElseThrow();
    try (ConsoleServer console = console("viewer", "viewer-pw")) {
      browser.driver.get(console.url() + "services/greeter");
      within(Duration.ofSeconds(20)).until(
          () -> browser.driver.findElements(By.cssSelector("#instances tbody tr")).size(), n -> n == 2);

      within(Duration.ofSeconds(5)).until(() -> {
        row("10.0.4.11:50051").findElement(By.cssSelector("button[data-action='drain']")).click();
        return true;
      });
      within(Duration.ofSeconds(5)).until(() -> browser.driver.findElement(By.id("confirm-dialog")).isDisplayed());
      browser.driver.findElement(By.id("confirm-ok")).click();

      WebElement error = browser.driver.findElement(By.id("confirm-error"));
      within(Duration.ofSeconds(10)).until(error::isDisplayed);
      assertThat(error.getText())
          .startsWith("etcd at " + etcd.endpoints() + ": ")
          .containsIgnoringCase("permission")
          .doesNotContain("unreachable");
    }
    KeyValue after = fleet.get("greeter", "10.0.4.11:50051").orElseThrow();
    assertThat(after.getModRevision()).isEqualTo(before.getModRevision());
  }

  @Test
  @Order(2)
  void whileEtcdIsDownThePagesKeepTheLastViewMarkedStaleAndRecoverAfter() {
    try (ConsoleServer console = console("root", "rootpw")) {
      browser.driver.get(console.url() + "services/greeter");
      within(Duration.ofSeconds(20)).until(
          () -> browser.driver.findElements(By.cssSelector("#instances tbody tr")).size(), n -> n == 2);
      WebElement status = browser.driver.findElement(By.id("status"));
      assertThat(status.isDisplayed()).isFalse();

      etcd.member(0).stop();
      try {
        within(Duration.ofSeconds(30)).untilAsserted(() -> {
          assertThat(status.isDisplayed()).isTrue();
          assertThat(status.getText()).contains("Stale").contains("etcd unreachable at " + etcd.endpoints());
        });
        assertThat(browser.driver.findElements(By.cssSelector("#instances tbody tr"))).hasSize(2);

        browser.driver.get(console.url());
        WebElement fleetStatus = browser.driver.findElement(By.id("status"));
        within(Duration.ofSeconds(30)).untilAsserted(() ->
            assertThat(fleetStatus.getText()).contains("etcd unreachable at " + etcd.endpoints()));
      } finally {
        etcd.member(0).start();
      }
      within(Duration.ofSeconds(30)).untilAsserted(() -> {
        assertThat(browser.driver.findElement(By.id("status")).isDisplayed()).isFalse();
        assertThat(browser.driver.findElements(
            By.cssSelector("#services tbody tr[data-service='greeter']"))).hasSize(1);
      });
    }
  }
}
