package io.steelyard.agent;

import static org.assertj.core.api.Assertions.assertThat;

import io.steelyard.testkit.EtcdCluster;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.slf4j.LoggerFactory;

/** Many registrations in one JVM share one thread, not one each. */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class ManyRegistrationsIT {

  @RegisterExtension static final EtcdCluster etcd = EtcdCluster.builder().build();

  private static final int REGISTRATIONS = 300;

  @Test
  void registrationsShareOneSchedulerThread() throws Exception {
    try (EtcdProbe probe = new EtcdProbe(etcd.clientEndpoints())) {
      probe.get("/warm-up"); // jetcd's own threads start with the first call
      int threadsBefore = Thread.activeCount();
      List<ServiceRegistration> regs = new ArrayList<>();
      try {
        for (int i = 0; i < REGISTRATIONS; i++) {
          regs.add(
              ServiceRegistration.builder(probe.client, "many", "10.0.0.1:" + (20000 + i)).build());
        }
        CompletableFuture.allOf(regs.stream().map(ServiceRegistration::start)
                .toArray(CompletableFuture<?>[]::new))
            .get(60, TimeUnit.SECONDS);

        int threadsAfter = Thread.activeCount();
        long ours =
            Thread.getAllStackTraces().keySet().stream()
                .filter(t -> t.getName().startsWith("steelyard-registration"))
                .count();
        LoggerFactory.getLogger(ManyRegistrationsIT.class)
            .info("{} registrations added {} threads ({} before, {} after)",
                REGISTRATIONS, threadsAfter - threadsBefore, threadsBefore, threadsAfter);
        assertThat(ours).as("steelyard-registration threads").isEqualTo(1);
        // jetcd's cached pool grows with 300 concurrent grants, by how many overlap (15 to 34
        // threads seen on 2 cores): a thread per registration would be 300.
        assertThat(threadsAfter - threadsBefore)
            .as("threads added by %s registrations", REGISTRATIONS)
            .isLessThan(REGISTRATIONS / 4);
        assertThat(probe.client.getKVClient()
                .get(EtcdProbe.bytes("/services/many/"),
                    io.etcd.jetcd.options.GetOption.builder().isPrefix(true).withCountOnly(true).build())
                .get(10, TimeUnit.SECONDS).getCount())
            .isEqualTo(REGISTRATIONS);
      } finally {
        regs.forEach(ServiceRegistration::close);
      }
    }
  }
}
