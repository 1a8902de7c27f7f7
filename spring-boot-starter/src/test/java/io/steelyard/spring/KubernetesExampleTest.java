package io.steelyard.spring;

import static org.assertj.core.api.Assertions.assertThat;

import io.steelyard.agent.AdvertisedAddress;
import io.steelyard.agent.ServiceRegistration;
import io.steelyard.agent.ShutdownSequence;
import java.io.IOException;
import java.io.Reader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.yaml.snakeyaml.LoaderOptions;
import org.yaml.snakeyaml.Yaml;
import org.yaml.snakeyaml.constructor.SafeConstructor;

/**
 * docs/examples/kubernetes/deployment.yaml is valid YAML, and what docs/kubernetes.md says of it
 * holds against the agent's defaults: the host variable the agent reads, a gRPC readiness probe,
 * and a grace period longer than the shutdown can take.
 */
class KubernetesExampleTest {

  private static Map<String, Object> deployment;
  private static Map<String, Object> pod;
  private static Map<String, Object> container;

  @BeforeAll
  static void load() throws IOException {
    // Surefire runs in the module's directory; docs/ is at the root of the checkout.
    Path file = Path.of("").toAbsolutePath().getParent().resolve("docs/examples/kubernetes/deployment.yaml");
    try (Reader in = Files.newBufferedReader(file)) {
      deployment = map(new Yaml(new SafeConstructor(new LoaderOptions())).load(in));
    }
    pod = map(map(map(deployment.get("spec")).get("template")).get("spec"));
    container = map(list(pod.get("containers")).get(0));
  }

  @Test
  void isADeployment() {
    assertThat(deployment).containsEntry("apiVersion", "apps/v1").containsEntry("kind", "Deployment");
  }

  @Test
  void thePodIpReachesTheVariableTheAgentReads() {
    Map<String, Object> host = list(container.get("env")).stream()
        .map(KubernetesExampleTest::map)
        .filter(e -> AdvertisedAddress.DEFAULT_HOST_VARIABLE.equals(e.get("name")))
        .findFirst()
        .orElseThrow();

    assertThat(map(map(host.get("valueFrom")).get("fieldRef"))).containsEntry("fieldPath", "status.podIP");
  }

  @Test
  void readinessIsTheGrpcHealthOfTheServersPort() {
    int port = (Integer) map(list(container.get("ports")).get(0)).get("containerPort");

    assertThat(map(map(container.get("readinessProbe")).get("grpc"))).containsEntry("port", port);
    assertThat(map(container.get("livenessProbe"))).doesNotContainKey("grpc");
  }

  @Test
  void theGracePeriodOutlastsPreStopAndTheShutdownSequence() {
    Map<String, Object> preStop = map(map(container.get("lifecycle")).get("preStop"));
    int preStopSeconds = (Integer) map(preStop.get("sleep")).get("seconds");
    long shutdownMillis = ServiceRegistration.DEFAULT_CLOSE_TIMEOUT_MILLIS
        + ShutdownSequence.DEFAULT_DRAIN_DELAY_MILLIS
        + ShutdownSequence.DEFAULT_GRACE_PERIOD_MILLIS;
    long jvmExitMillis = 3_000;

    assertThat((Integer) pod.get("terminationGracePeriodSeconds") * 1000L)
        .isGreaterThan(preStopSeconds * 1000L + shutdownMillis + jvmExitMillis);
  }

  @SuppressWarnings("unchecked")
  private static Map<String, Object> map(Object o) {
    assertThat(o).isInstanceOf(Map.class);
    return (Map<String, Object>) o;
  }

  @SuppressWarnings("unchecked")
  private static List<Object> list(Object o) {
    assertThat(o).isInstanceOf(List.class);
    return (List<Object>) o;
  }
}
