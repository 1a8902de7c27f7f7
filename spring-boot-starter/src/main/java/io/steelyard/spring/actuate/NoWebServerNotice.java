package io.steelyard.spring.actuate;

import java.util.Set;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.context.event.ApplicationReadyEvent;
import org.springframework.boot.context.properties.bind.Bindable;
import org.springframework.boot.context.properties.bind.Binder;
import org.springframework.context.ApplicationListener;

/**
 * Logs one line at startup when the {@code steelyard} endpoint is exposed over HTTP ({@value
 * #INCLUDE}) but the application runs no web server, so nothing answers on {@code
 * /actuator/steelyard} or {@code /actuator/health}: the actuator starter alone brings no server.
 */
final class NoWebServerNotice implements ApplicationListener<ApplicationReadyEvent> {

  private static final Logger logger = LoggerFactory.getLogger(NoWebServerNotice.class);

  static final String INCLUDE = "management.endpoints.web.exposure.include";
  static final String EXCLUDE = "management.endpoints.web.exposure.exclude";

  @Override
  public void onApplicationEvent(ApplicationReadyEvent event) {
    if (event.getSpringApplication().getWebApplicationType() != WebApplicationType.NONE) {
      return;
    }
    Binder binder = Binder.get(event.getApplicationContext().getEnvironment());
    Set<String> include = binder.bind(INCLUDE, Bindable.setOf(String.class)).orElse(Set.of());
    Set<String> exclude = binder.bind(EXCLUDE, Bindable.setOf(String.class)).orElse(Set.of());
    boolean exposed = (include.contains("steelyard") || include.contains("*"))
        && !exclude.contains("steelyard") && !exclude.contains("*");
    if (exposed) {
      logger.warn("{} exposes the steelyard endpoint over HTTP, but this application runs no web"
          + " server, so /actuator/steelyard and /actuator/health do not answer: add"
          + " spring-boot-starter-web (or spring-boot-starter-webflux) to serve them", INCLUDE);
    }
  }
}
