package io.steelyard.examples.spring.cloud;

import org.springframework.boot.Banner;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.cloud.client.loadbalancer.LoadBalanced;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.web.client.RestClient;

/**
 * {@code bin/spring-cloud-greeter}: an HTTP greeter on Spring Cloud with steelyard as the
 * registry, one jar with two roles.
 *
 * <pre>
 * bin/spring-cloud-greeter --server.port=0 --steelyard.registration.weight=3
 * READY address=127.0.0.1:40123 management=http://127.0.0.1:40123
 * bin/spring-cloud-greeter --role=client --calls=100 --target=greeter-http
 * {"backends":[{"address":"127.0.0.1:40123","calls":100}],"failed":0}
 * </pre>
 *
 * <p>{@code --role=server} (the default) serves {@code GET /hello}, answered with the address it
 * registered through Spring Cloud's {@code ServiceRegistry}. {@code --role=client} calls {@code
 * http://TARGET/hello} N times through a {@code @LoadBalanced RestClient} (steelyard's weighted
 * Spring Cloud LoadBalancer), prints one JSON line and exits 0. A bad option exits 2 with one line
 * on stderr.
 */
@SpringBootApplication
public class SpringCloudGreeterApplication {

  @Bean
  @LoadBalanced
  RestClient.Builder loadBalancedRestClientBuilder() {
    return RestClient.builder();
  }

  public static void main(String[] args) {
    Role role;
    try {
      role = Role.of(args);
    } catch (IllegalArgumentException e) {
      System.err.println("spring-cloud-greeter: " + e.getMessage());
      System.exit(2);
      return;
    }
    SpringApplicationBuilder app = new SpringApplicationBuilder(SpringCloudGreeterApplication.class)
        .bannerMode(Banner.Mode.OFF)
        .profiles(role.profile());
    if (role == Role.CLIENT) {
      app.web(WebApplicationType.NONE);
    }
    ConfigurableApplicationContext context = app.run(args);
    if (role == Role.CLIENT) {
      int failed = context.getBean(GreeterClient.class).run();
      System.exit(failed < 0 ? 1 : 0);
    }
  }

  /** What this process is: {@code --role=server} (default) or {@code --role=client}. */
  enum Role {
    SERVER,
    CLIENT;

    String profile() {
      return name().toLowerCase(java.util.Locale.ROOT);
    }

    static Role of(String[] args) {
      Role role = SERVER;
      for (String a : args) {
        if (a.startsWith("--role=")) {
          String value = a.substring("--role=".length());
          role = switch (value) {
            case "server" -> SERVER;
            case "client" -> CLIENT;
            default -> throw new IllegalArgumentException(
                "--role: '" + value + "' (expected: server or client)");
          };
        }
      }
      return role;
    }
  }
}
