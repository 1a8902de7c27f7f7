package io.steelyard.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.etcd.jetcd.KeyValue;
import io.steelyard.testkit.EtcdCluster;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/** {@code config get|set|validate|delete} against a real etcd. */
@Timeout(60)
class ConfigCommandsIT {

  private static final String LEAST_REQUEST =
      "{\"loadBalancingConfig\":[{\"weighted_least_request\":{\"choiceCount\":3}}]}";

  @RegisterExtension static final EtcdCluster etcd = EtcdCluster.builder().build();

  @RegisterExtension
  @Order(CliFixture.AFTER_THE_CLUSTER)
  static final CliFixture fixture = CliFixture.of(etcd);

  // Test instances are made after the fixture connected.
  private final Cli cli = fixture.cli();
  private final Keyspace keys = fixture.keys();

  private String key() {
    return "/services/.config/" + fixture.service();
  }

  @Test
  void setStoresTheConfigOutsideTheInstancePrefixAndGetPrintsIt() {
    Cli.Result set = cli.run("config", "set", fixture.service(), LEAST_REQUEST);

    assertThat(set.exitCode()).as(set.toString()).isZero();
    assertThat(set.out()).startsWith("service config of " + fixture.service() + " set at revision ");
    assertThat(keys.value(key())).isEqualTo(LEAST_REQUEST);
    assertThat(keys.snapshot().entries()).noneMatch(e -> e.startsWith("/services/" + fixture.service() + "/"));
    Cli.Result get = cli.run("config", "get", fixture.service());
    assertThat(get.exitCode()).as(get.toString()).isZero();
    assertThat(get.out()).isEqualTo(LEAST_REQUEST + "\n");
  }

  @Test
  void getSaysSoWhenThereIsNone() {
    Cli.Result get = cli.run("config", "get", fixture.service());

    assertThat(get.exitCode()).as(get.toString()).isZero();
    assertThat(get.out()).startsWith("no service config for " + fixture.service());
  }

  @Test
  void setReadsTheConfigFromAFileAfterAnAt(@TempDir Path dir) throws Exception {
    Path file = dir.resolve("config.json");
    Files.writeString(file, LEAST_REQUEST);

    Cli.Result set = cli.run("config", "set", fixture.service(), "@" + file);

    assertThat(set.exitCode()).as(set.toString()).isZero();
    assertThat(keys.value(key())).isEqualTo(LEAST_REQUEST);
  }

  @Test
  void aConfigTheBalancerRefusesExitsTwoWithItsReasonAndEtcdIsUntouched() {
    keys.put(key(), LEAST_REQUEST);
    long before = keys.get(key()).map(KeyValue::getModRevision).orElseThrow();

    Cli.Result r = cli.run("config", "set", fixture.service(),
        "{\"loadBalancingConfig\":[{\"weighted_least_request\":{\"choiceCount\":11}}]}");

    assertThat(r.exitCode()).as(r.toString()).isEqualTo(2);
    assertThat(r.err().lines().findFirst().orElseThrow())
        .isEqualTo("steelyard: service config refused: weighted_least_request.choiceCount: 11.0 (expected: 2..10)");
    assertThat(keys.get(key()).map(KeyValue::getModRevision)).contains(before);
    assertThat(keys.value(key())).isEqualTo(LEAST_REQUEST);
  }

  @Test
  void aPolicyNoClientKnowsIsRefused() {
    Cli.Result r = cli.run("config", "set", fixture.service(), "{\"loadBalancingConfig\":[{\"no_such_policy\":{}}]}");

    assertThat(r.exitCode()).as(r.toString()).isEqualTo(2);
    assertThat(r.err()).contains("no_such_policy");
    assertThat(keys.get(key())).isEmpty();
  }

  @Test
  void malformedJsonIsAUsageError() {
    Cli.Result r = cli.run("config", "set", fixture.service(), "{\"loadBalancingConfig\":");

    assertThat(r.exitCode()).as(r.toString()).isEqualTo(2);
    assertThat(r.err()).startsWith("steelyard: service config is not valid JSON: ");
    assertThat(keys.get(key())).isEmpty();
  }

  @Test
  void validateNeedsNoEtcd() {
    Cli nowhere = Cli.withEndpoints("http://127.0.0.1:9");

    Cli.Result good = nowhere.run("config", "validate", fixture.service(), LEAST_REQUEST);
    Cli.Result bad = nowhere.run("config", "validate", fixture.service(),
        "{\"loadBalancingConfig\":[{\"weighted_random\":{\"slowStart\":{\"window\":\"-3s\"}}}]}");

    assertThat(good.exitCode()).as(good.toString()).isZero();
    assertThat(good.out()).startsWith("service config for " + fixture.service() + " is valid\n")
        .contains("weighted_least_request: Cluster load_balancing_policy [WrrLocality[LeastRequest");
    assertThat(bad.exitCode()).as(bad.toString()).isEqualTo(2);
    assertThat(bad.err()).contains("weighted_random.slowStart.window: -3s");
  }

  @Test
  void validatePrintsWhatSteelyardXdsServesAndWhatItLeavesOut() {
    Cli.Result r = Cli.withEndpoints("http://127.0.0.1:9").run("config", "validate", fixture.service(),
        "{\"loadBalancingConfig\":[{\"outlier_detection_experimental\":{\"interval\":\"1s\","
            + "\"failurePercentageEjection\":{\"threshold\":40},"
            + "\"childPolicy\":[{\"weighted_random\":{\"panicThresholdPercent\":50}}]}}],"
            + "\"methodConfig\":[{\"name\":[{\"service\":\"steelyard.examples.Greeter\",\"method\":\"SayHello\"}],"
            + "\"timeout\":\"0.2s\",\"waitForReady\":true}],"
            + "\"retryThrottling\":{\"maxTokens\":10,\"tokenRatio\":0.1}}");

    assertThat(r.exitCode()).as(r.toString()).isZero();
    assertThat(r.out()).contains(
        "steelyard-xds serves from it:\n",
        "  outlier_detection_experimental: Cluster outlier_detection (interval 1s,",
        "failure percentage threshold 40)",
        "  methodConfig[0] /steelyard.examples.Greeter/SayHello: route max_stream_duration 0.200s\n",
        "steelyard-xds leaves out (",
        "  weighted_random.panicThresholdPercent\n",
        "  methodConfig[0].waitForReady\n",
        "  retryThrottling\n");
  }

  @Test
  void setAcceptsTheOrcaPolicyAndValidateRefusesItsBadFields() {
    String orca = "{\"loadBalancingConfig\":[{\"weighted_least_request_orca\":"
        + "{\"choiceCount\":2,\"enableOobLoadReport\":true,\"oobReportingPeriod\":\"10s\"}}]}";

    Cli.Result set = cli.run("config", "set", fixture.service(), orca);
    Cli.Result bad = Cli.withEndpoints("http://127.0.0.1:9").run("config", "validate", fixture.service(),
        "{\"loadBalancingConfig\":[{\"weighted_least_request_orca\":{\"oobReportingPeriod\":\"-1s\"}}]}");

    assertThat(set.exitCode()).as(set.toString()).isZero();
    assertThat(keys.value(key())).isEqualTo(orca);
    assertThat(bad.exitCode()).as(bad.toString()).isEqualTo(2);
    assertThat(bad.err()).contains("weighted_least_request_orca.oobReportingPeriod: -1s");
  }

  @Test
  void validateAcceptsASplitWithZoneRoutingAndRefusesPercentsThatDoNotSumTo100() {
    Cli nowhere = Cli.withEndpoints("http://127.0.0.1:9");

    // As docs/canary.md types it: the full service config, over several lines.
    Cli.Result good = nowhere.run("config", "validate", fixture.service(),
        "{\"loadBalancingConfig\": [{\"weighted_random\": {\"split\": [\n"
            + "  {\"selector\": {\"version\": \"v1\"}, \"percent\": 99},\n"
            + "  {\"selector\": {\"version\": \"v2\"}, \"percent\": 1}],\n"
            + "  \"zoneRouting\": {\"minLocalEndpoints\": 2}}}]}");
    Cli.Result bad = nowhere.run("config", "validate", fixture.service(),
        "{\"loadBalancingConfig\":[{\"weighted_random\":{\"split\":["
            + "{\"selector\":{\"version\":\"v1\"},\"percent\":90},"
            + "{\"selector\":{\"version\":\"v2\"},\"percent\":5}]}}]}");

    assertThat(good.exitCode()).as(good.toString()).isZero();
    assertThat(good.out()).startsWith("service config for " + fixture.service() + " is valid\n")
        .contains("weighted_random.split: route weighted_clusters, one cluster per entry: "
            + "split[{version=v1} 99%, {version=v2} 1%]");
    assertThat(bad.exitCode()).as(bad.toString()).isEqualTo(2);
    assertThat(bad.err().lines().findFirst().orElseThrow())
        .isEqualTo("steelyard: service config refused: weighted_random.split: percents sum to 95 (expected: 100)");
  }

  @Test
  void deleteRemovesTheConfigAndSaysWhenThereWasNone() {
    keys.put(key(), LEAST_REQUEST);

    Cli.Result first = cli.run("config", "delete", fixture.service());
    Cli.Result second = cli.run("config", "delete", fixture.service());

    assertThat(first.exitCode()).as(first.toString()).isZero();
    assertThat(first.out()).isEqualTo("service config of " + fixture.service() + " deleted\n");
    assertThat(keys.get(key())).isEmpty();
    assertThat(second.exitCode()).isZero();
    assertThat(second.out()).startsWith("no service config for " + fixture.service());
  }

  @Test
  void aBadServiceNameIsAUsageError() {
    long before = keys.snapshot().revision();

    Cli.Result r = cli.run("config", "set", "../greeter", LEAST_REQUEST);

    assertThat(r.exitCode()).as(r.toString()).isEqualTo(2);
    assertThat(r.err()).startsWith("steelyard: service: '../greeter'");
    assertThat(keys.snapshot().revision()).as("nothing written").isEqualTo(before);
  }
}
