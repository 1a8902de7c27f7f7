package io.steelyard.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * {@code docs/cli.md} and {@code steelyard --help} name the same commands with the same
 * summaries, and the page has a section for each: a command added to one and not the other
 * fails here. The page is read from the checkout.
 */
@Timeout(30)
class HelpMatchesDocsTest {

  /** {@code "  name   summary"} in the "Commands:" block of picocli's usage help. */
  private static final Pattern COMMAND_LINE = Pattern.compile("^ {2}([a-z][a-z-]*)\\s{2,}(\\S.*)$");

  /** A command's section heading: {@code ### `top SERVICE [--once] ...`}. */
  private static final Pattern SECTION = Pattern.compile("^### `([a-z][a-z-]*)[ `].*$");

  private static List<String> page;

  @BeforeAll
  static void readPage() throws IOException {
    // Surefire runs in the module's directory; docs/ is at the root of the checkout.
    Path file = Path.of("").toAbsolutePath().getParent().resolve("docs/cli.md");
    page = Files.readAllLines(file);
  }

  @Test
  void helpCapturedInTheDocsListsTheCommandsTheCliHas() {
    Map<String, String> fromCli = commands(Cli.withEndpoints("http://127.0.0.1:9").run("--help").out().lines().toList());

    Map<String, String> fromDocs = commands(capturedHelp());

    // The reading cannot pass empty: the CLI has these at least.
    assertThat(fromCli).containsKeys("list", "weight", "drain", "watch", "top");
    assertThat(fromDocs).as("Commands: in the `steelyard --help` block of docs/cli.md").isEqualTo(fromCli);
  }

  @Test
  void everyCommandHasASectionInTheDocsAndEverySectionIsACommand() {
    Map<String, String> fromCli = commands(Cli.withEndpoints("http://127.0.0.1:9").run("--help").out().lines().toList());
    // A command may have several sections ("weight get", "weight set").
    Set<String> sections = new TreeSet<>();
    for (String line : page) {
      Matcher m = SECTION.matcher(line);
      if (m.matches() && !m.group(1).equals("steelyard")) {
        sections.add(m.group(1));
      }
    }
    // "drain ... and undrain ..." share a section.
    for (String line : page) {
      if (line.startsWith("### `drain ") && line.contains("`undrain ")) {
        sections.add("undrain");
      }
    }

    assertThat(sections).isEqualTo(new TreeSet<>(fromCli.keySet()));
  }

  /** The lines of the code block that follows the {@code steelyard --help} heading. */
  private static List<String> capturedHelp() {
    int heading = page.indexOf("### `steelyard --help`");
    assertThat(heading).as("a `### `steelyard --help`` section in docs/cli.md").isNotNegative();
    int open = heading + 1;
    while (!page.get(open).startsWith("```")) {
      open++;
    }
    int close = open + 1;
    while (!page.get(close).startsWith("```")) {
      close++;
    }
    return page.subList(open + 1, close);
  }

  /** Name to summary, from the block after a "Commands:" line up to the first blank line. */
  private static Map<String, String> commands(List<String> help) {
    Map<String, String> out = new LinkedHashMap<>();
    int start = help.indexOf("Commands:");
    assertThat(start).as("a Commands: block in %s", help).isNotNegative();
    String last = null;
    for (String line : help.subList(start + 1, help.size())) {
      if (line.isBlank()) {
        break;
      }
      if (last != null && line.startsWith("   ")) {
        // A summary too long for one line goes on, indented further.
        out.put(last, out.get(last) + " " + line.strip());
        continue;
      }
      Matcher m = COMMAND_LINE.matcher(line);
      assertThat(m.matches()).as("a command line: '%s'", line).isTrue();
      last = m.group(1);
      assertThat(out.put(last, m.group(2).strip())).as("listed twice: %s", last).isNull();
    }
    return out;
  }
}
