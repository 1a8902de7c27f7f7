package io.steelyard.gettingstarted;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The files a Markdown page spells out: each fenced code block right after a {@code <!-- file:
 * PATH [PATH...] -->} comment is the whole content of every named file. Other blocks (commands,
 * log excerpts, fragments) are prose.
 */
final class DocFiles {

  private static final Pattern MARKED_BLOCK =
      Pattern.compile("<!-- file: ([^>]+?) -->\\n```[A-Za-z0-9]*\\n(.*?)\\n```", Pattern.DOTALL);

  private DocFiles() {}

  /** Relative path to content, in page order. */
  static Map<String, String> read(Path page) throws IOException {
    Map<String, String> files = new LinkedHashMap<>();
    Matcher m = MARKED_BLOCK.matcher(Files.readString(page));
    while (m.find()) {
      for (String path : m.group(1).trim().split("\\s+")) {
        if (files.put(path, m.group(2) + "\n") != null) {
          throw new IllegalArgumentException(page + ": " + path + " is given twice");
        }
      }
    }
    return files;
  }

  /** Writes each file under {@code root}, creating folders. */
  static void write(Map<String, String> files, Path root) throws IOException {
    for (Map.Entry<String, String> f : files.entrySet()) {
      Path target = root.resolve(f.getKey()).normalize();
      if (!target.startsWith(root)) {
        throw new IllegalArgumentException("file outside the project: " + f.getKey());
      }
      Files.createDirectories(target.getParent());
      Files.writeString(target, f.getValue());
    }
  }
}
