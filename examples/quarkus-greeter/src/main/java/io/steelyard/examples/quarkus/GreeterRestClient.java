package io.steelyard.examples.quarkus;

import jakarta.ws.rs.GET;
import jakarta.ws.rs.Path;
import org.eclipse.microprofile.rest.client.inject.RegisterRestClient;

/** The REST client of {@code greeter}: its URL is {@code stork://greeter} (application.properties). */
@RegisterRestClient(configKey = "greeter")
@Path("/hello")
public interface GreeterRestClient {

  @GET
  String hello();
}
