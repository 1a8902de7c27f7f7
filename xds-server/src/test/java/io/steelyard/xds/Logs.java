package io.steelyard.xds;

import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import java.util.List;
import org.slf4j.LoggerFactory;

/** What one class logs while open: logback's {@link ListAppender} on that class's logger. */
final class Logs implements AutoCloseable {

  private final Logger logger;
  private final ListAppender<ILoggingEvent> appender = new ListAppender<>();

  private Logs(Class<?> type) {
    this.logger = (Logger) LoggerFactory.getLogger(type);
    appender.start();
    logger.addAppender(appender);
  }

  static Logs of(Class<?> type) {
    return new Logs(type);
  }

  /** The formatted messages logged so far, each with its level first: {@code "WARN ..."}. */
  List<String> lines() {
    synchronized (appender.list) {
      return appender.list.stream().map(e -> e.getLevel() + " " + e.getFormattedMessage()).toList();
    }
  }

  @Override
  public void close() {
    logger.detachAppender(appender);
  }
}
