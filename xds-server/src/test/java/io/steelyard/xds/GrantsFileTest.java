package io.steelyard.xds;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.google.common.base.Ticker;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class GrantsFileTest {

  private static final String GREETER =
      "{\"grants\": [{\"identity\": \"spiffe://test/greeter-client\", \"services\": [\"greeter\"]}]}";
  private static final String GREETER_AND_BILLING =
      "{\"grants\": [{\"identity\": \"spiffe://test/greeter-client\", \"services\": [\"greeter\", \"billing\"]}]}";
  private static final String ID = "spiffe://test/greeter-client";

  @TempDir Path dir;
  private final AtomicLong nanos = new AtomicLong();
  private final Ticker ticker =
      new Ticker() {
        @Override
        public long read() {
          return nanos.get();
        }
      };

  private void later() {
    nanos.addAndGet(GrantsFile.RECHECK.toNanos());
  }

  @Test
  void aFileThatDoesNotParseAtStartIsNamedWithItsLine() throws Exception {
    Path file = Files.writeString(dir.resolve("grants.json"), "{\"grants\": [\n  {\"identity\": }\n]}");
    assertThatThrownBy(() -> GrantsFile.load(file, ticker))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageStartingWith("authorize: " + file + ": ")
        .hasMessageContaining("line 2");
  }

  @Test
  void aMissingFileAtStartIsNamed() {
    Path file = dir.resolve("absent.json");
    assertThatThrownBy(() -> GrantsFile.load(file, ticker)).hasMessageContaining("cannot read " + file);
  }

  @Test
  void aChangedFileIsTakenUpOnceTheRecheckIsDue() throws Exception {
    Path file = Files.writeString(dir.resolve("grants.json"), GREETER);
    GrantsFile grants = GrantsFile.load(file, ticker);
    assertThat(grants.current().allows(ID, "billing")).isFalse();

    Files.writeString(file, GREETER_AND_BILLING);
    assertThat(grants.current().allows(ID, "billing")).as("before the recheck").isFalse();
    later();
    assertThat(grants.current().allows(ID, "billing")).isTrue();
  }

  @Test
  void aBadFileAtReloadKeepsTheLastGoodGrantsUntilItParsesAgain() throws Exception {
    Path file = Files.writeString(dir.resolve("grants.json"), GREETER);
    GrantsFile grants = GrantsFile.load(file, ticker);

    Files.writeString(file, "{\"grants\": [{\"identity\": \"spiffe://test/greeter-client\", ");
    later();
    assertThat(grants.current().allows(ID, "greeter")).isTrue();
    Files.delete(file);
    later();
    assertThat(grants.current().allows(ID, "greeter")).isTrue();

    Files.writeString(file, GREETER_AND_BILLING);
    later();
    assertThat(grants.current().allows(ID, "billing")).isTrue();
  }
}
