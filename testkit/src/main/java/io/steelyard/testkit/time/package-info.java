/**
 * Fake time for unit tests of code that takes a scheduler and a clock: {@link
 * io.steelyard.testkit.time.FakeScheduler}, a {@code ScheduledExecutorService} and Guava {@code
 * Ticker} whose time moves only when the test says so. Used by the agent's registration tests
 * and, through a thin adapter to its {@code Scheduler} seam, by discovery's watcher tests.
 *
 * <p>Needs Guava on the test classpath, which every user of this package has anyway.
 */
package io.steelyard.testkit.time;
