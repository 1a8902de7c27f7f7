package io.steelyard.it.faults;

import java.util.ArrayList;
import java.util.List;

/** What a test opened, closed in reverse order by its {@code @AfterEach}. */
final class Closer implements AutoCloseable {

  private final List<AutoCloseable> opened = new ArrayList<>();

  /** Registers {@code c} and returns it. */
  <T extends AutoCloseable> T add(T c) {
    opened.add(c);
    return c;
  }

  @Override
  public void close() throws Exception {
    Exception first = null;
    for (int i = opened.size() - 1; i >= 0; i--) {
      try {
        opened.get(i).close();
      } catch (Exception e) {
        if (first == null) {
          first = e;
        } else {
          first.addSuppressed(e);
        }
      }
    }
    opened.clear();
    if (first != null) {
      throw first;
    }
  }
}
