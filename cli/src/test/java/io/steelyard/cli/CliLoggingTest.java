package io.steelyard.cli;

import static org.assertj.core.api.Assertions.assertThat;

import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import java.util.Arrays;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;
import org.slf4j.bridge.SLF4JBridgeHandler;

class CliLoggingTest {

  @Test
  void julRecordsReachLogbackAndJulPrintsNothingOfItsOwn() {
    Logger root = (Logger) LoggerFactory.getLogger(org.slf4j.Logger.ROOT_LOGGER_NAME);
    ListAppender<ILoggingEvent> seen = new ListAppender<>();
    seen.start();
    root.addAppender(seen);
    try {
      SteelyardCli.configureLogging(new String[0]);
      java.util.logging.Logger.getLogger("io.grpc.netty.NettyClientHandler")
          .warning("Received GOAWAY with ENHANCE_YOUR_CALM (a probe)");

      assertThat(Arrays.asList(java.util.logging.Logger.getLogger("").getHandlers()))
          .singleElement()
          .isInstanceOf(SLF4JBridgeHandler.class);
      assertThat(seen.list)
          .anySatisfy(e -> {
            assertThat(e.getLoggerName()).isEqualTo("io.grpc.netty.NettyClientHandler");
            assertThat(e.getFormattedMessage()).contains("a probe");
          });
    } finally {
      root.detachAppender(seen);
      SLF4JBridgeHandler.uninstall();
    }
  }
}
