package io.steelyard.examples.spring.cloud;

import com.google.gson.Gson;
import io.steelyard.registry.Validation;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.context.annotation.Profile;
import org.springframework.stereotype.Component;
import org.springframework.web.client.RestClient;

/**
 * The client role: {@code --calls=N} calls to {@code http://TARGET/hello} through the
 * {@code @LoadBalanced RestClient}, then one JSON line, {@code
 * {"backends":[{"address":...,"calls":...}],"failed":N}}, on stdout.
 */
@Component
@Profile("client")
class GreeterClient {

  private static final Logger logger = LoggerFactory.getLogger(GreeterClient.class);

  private final RestClient rest;
  private final String calls;
  private final String target;

  GreeterClient(RestClient.Builder loadBalanced,
      @Value("${calls:10}") String calls, @Value("${target:greeter-http}") String target) {
    this.rest = loadBalanced.build();
    this.calls = calls;
    this.target = target;
  }

  record Backend(String address, int calls) {}

  record Result(List<Backend> backends, int failed) {}

  /** Runs the calls and prints the JSON line; exits 2 on a bad option. Returns the failures. */
  int run() {
    int n = checkedCalls();
    try {
      Validation.checkServiceName(target);
    } catch (IllegalArgumentException e) {
      System.err.println("spring-cloud-greeter: --target: " + e.getMessage());
      System.exit(2);
    }
    Map<String, Integer> byAddress = new TreeMap<>();
    int failed = 0;
    for (int i = 0; i < n; i++) {
      try {
        byAddress.merge(rest.get().uri("http://" + target + "/hello").retrieve().body(String.class), 1, Integer::sum);
      } catch (RuntimeException e) {
        failed++;
        logger.warn("call {} to {} failed: {}", i + 1, target, e.toString());
      }
    }
    List<Backend> backends = new ArrayList<>();
    byAddress.forEach((address, count) -> backends.add(new Backend(address, count)));
    System.out.println(new Gson().toJson(new Result(backends, failed)));
    System.out.flush();
    return failed;
  }

  private int checkedCalls() {
    try {
      int n = Integer.parseInt(calls);
      if (n >= 1) {
        return n;
      }
    } catch (NumberFormatException e) {
      // reported below
    }
    System.err.println("spring-cloud-greeter: --calls: '" + calls + "' (expected: a whole number >= 1)");
    System.exit(2);
    return 0;
  }
}
