package io.steelyard.console;

import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import org.openqa.selenium.Dimension;
import org.openqa.selenium.OutputType;
import org.openqa.selenium.chrome.ChromeDriver;
import org.openqa.selenium.chrome.ChromeDriverService;
import org.openqa.selenium.chrome.ChromeOptions;

/**
 * A headless Chromium driven through Debian's chromedriver (scripts/lib/chromium.sh installs
 * both); never a downloaded driver. Each browser gets a fresh profile directory.
 */
final class Browser implements AutoCloseable {

  static final String CHROMEDRIVER = "/usr/bin/chromedriver";
  static final String CHROMIUM = "/usr/bin/chromium";
  /** Set to a directory to have the tests write the screenshots docs/console.md shows. */
  static final String SCREENSHOTS_PROPERTY = "steelyard.console.screenshots";

  final ChromeDriver driver;
  private final Path profile;

  Browser() {
    if (!new File(CHROMEDRIVER).canExecute() || !new File(CHROMIUM).canExecute()) {
      throw new IllegalStateException(CHROMIUM + " and " + CHROMEDRIVER
          + " are needed: run scripts/test, or source scripts/lib/chromium.sh and call"
          + " steelyard_ensure_chromium");
    }
    try {
      profile = Files.createTempDirectory("steelyard-console-chromium");
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    ChromeOptions options = new ChromeOptions();
    options.setBinary(CHROMIUM);
    options.addArguments("--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
        "--disable-background-networking", "--disable-component-update", "--disable-sync",
        "--no-first-run", "--user-data-dir=" + profile, "--window-size=1280,900",
        "--force-device-scale-factor=1", "--lang=en-US");
    ChromeDriverService service = new ChromeDriverService.Builder()
        .usingDriverExecutable(new File(CHROMEDRIVER))
        .usingAnyFreePort()
        .build();
    driver = new ChromeDriver(service, options);
  }

  void size(int width, int height) {
    driver.manage().window().setSize(new Dimension(width, height));
  }

  /** Writes the page as {@code name}.png into the screenshot directory, when one is set. */
  void screenshot(String name) {
    String dir = System.getProperty(SCREENSHOTS_PROPERTY);
    if (dir == null || dir.isBlank()) {
      return;
    }
    try {
      Path target = Path.of(dir).resolve(name + ".png");
      Files.createDirectories(target.getParent());
      Files.write(target, driver.getScreenshotAs(OutputType.BYTES));
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  @Override
  public void close() {
    try {
      driver.quit();
    } finally {
      try (var files = Files.walk(profile)) {
        files.sorted(java.util.Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
      } catch (IOException e) {
        // a profile left in /tmp is harmless
      }
    }
  }
}
