package io.steelyard.registry;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import org.junit.jupiter.api.Test;

class EtcdFailureTextTest {

  private static final String ETCD = "http://10.0.0.1:2379";

  @Test
  void unreachableEtcdIsNamedUnreachableWithItsEndpoints() {
    RegistryException e =
        new RegistryException(RegistryException.Kind.UNAVAILABLE, "list greeter: timed out after 5s", null);

    assertThat(EtcdFailureText.describe(e, ETCD))
        .isEqualTo("etcd unreachable at http://10.0.0.1:2379: list greeter: timed out after 5s");
  }

  @Test
  void refusalNamesEtcdButNeverCallsItUnreachable() {
    for (RegistryException.Kind kind : RegistryException.Kind.values()) {
      if (kind.refused()) {
        assertThat(EtcdFailureText.where(kind, ETCD)).as("%s", kind).isEqualTo("etcd at " + ETCD + ": ");
      }
    }
  }

  @Test
  void failureThatIsNotAboutReachingEtcdIsTheBareMessage() {
    RegistryException e =
        new RegistryException(RegistryException.Kind.NOT_REGISTERED, "greeter 10.0.0.7:50051 is not registered", null);

    assertThat(EtcdFailureText.describe(e, ETCD)).isEqualTo("greeter 10.0.0.7:50051 is not registered");
  }

  @Test
  void withoutEndpointsNothingIsSaidOfWhere() {
    assertThat(EtcdFailureText.where(RegistryException.Kind.UNAVAILABLE, null)).isEmpty();
  }

  @Test
  void futureWrappersAreLookedThrough() {
    RegistryException e = new RegistryException(RegistryException.Kind.CONFLICT, "weight set: revision moved", null);

    assertThat(EtcdFailureText.describe(new CompletionException(new ExecutionException(e)), ETCD))
        .isEqualTo("weight set: revision moved");
  }

  @Test
  void anyOtherFailureIsAnUnexpectedErrorOnOneLine() {
    assertThat(EtcdFailureText.describe(new IllegalStateException("broken\n  twice"), ETCD))
        .isEqualTo("unexpected error: java.lang.IllegalStateException: broken twice");
  }

  @Test
  void oneLineJoinsLinesWithOneSpaceAndReadsNullAsEmpty() {
    assertThat(EtcdFailureText.oneLine("  first \r\n\n   second\nthird  ")).isEqualTo("first second third");
    assertThat(EtcdFailureText.oneLine(null)).isEmpty();
  }
}
