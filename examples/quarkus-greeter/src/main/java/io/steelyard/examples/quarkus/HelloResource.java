package io.steelyard.examples.quarkus;

import jakarta.inject.Inject;
import jakarta.ws.rs.GET;
import jakarta.ws.rs.Path;
import jakarta.ws.rs.Produces;
import jakarta.ws.rs.core.MediaType;

/** {@code GET /hello}: the REST side of the greeter; the answer is this instance's address. */
@Path("/hello")
public class HelloResource {

  @Inject Self self;

  @GET
  @Produces(MediaType.TEXT_PLAIN)
  public String hello() {
    return self.address();
  }
}
