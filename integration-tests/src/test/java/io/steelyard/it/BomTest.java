package io.steelyard.it;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import javax.xml.parsers.DocumentBuilderFactory;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.w3c.dom.Document;
import org.w3c.dom.Element;
import org.w3c.dom.Node;

/**
 * {@code steelyard-bom} lists exactly the artifacts steelyard publishes, at the project's version,
 * so an application that imports it gets every steelyard module at one version. A module is
 * published unless its pom sets {@code maven.deploy.skip} (examples, integration-tests,
 * benchmarks); adding a module without listing it in {@code bom/pom.xml} fails here. Every
 * published module also carries what a public Maven repository requires (name, description, URL,
 * licence, SCM) and gets sources and Javadoc jars from the parent's {@code release} profile.
 *
 * <p>The poms are read as files from the checkout: this checks the build's layout, not code.
 */
class BomTest {

  private static final String GROUP = "io.steelyard";

  private static Path root;
  private static Element parent;
  private static Element bom;

  @BeforeAll
  static void readPoms() throws Exception {
    // Surefire runs in this module's directory; the checkout is one level up.
    root = Path.of("").toAbsolutePath().getParent();
    parent = pom(root);
    assertThat(text(parent, "artifactId")).as("root pom of %s", root).isEqualTo("steelyard-parent");
    bom = pom(root.resolve("bom"));
  }

  @Test
  void bomListsEveryPublishedModuleAndNothingElse() throws Exception {
    Set<String> published = new TreeSet<>();
    Set<String> unpublished = new TreeSet<>();
    for (Path module : modules(root, parent)) {
      Element pom = pom(module);
      String artifactId = text(pom, "artifactId");
      if (artifactId.equals("steelyard-bom")) {
        continue;
      }
      boolean skipped = "true".equals(property(pom, "maven.deploy.skip"));
      (skipped ? unpublished : published).add(artifactId);
    }

    assertThat(listedArtifacts()).isEqualTo(published);
    // The test cannot pass on an empty reading: the libraries are there, the test-only ones not.
    assertThat(published)
        .contains("registry-core", "balancer", "registry-server-agent", "discovery-client", "cli");
    assertThat(unpublished).contains("examples", "integration-tests", "benchmarks");
  }

  @Test
  void bomVersionIsTheProjectVersionAndEveryEntryFollowsIt() {
    assertThat(text(bom, "groupId")).isEqualTo(GROUP);
    assertThat(text(bom, "artifactId")).isEqualTo("steelyard-bom");
    assertThat(text(bom, "packaging")).isEqualTo("pom");
    assertThat(text(bom, "version")).isEqualTo(text(parent, "version"));
    for (Element d : managedDependencies(bom)) {
      assertThat(text(d, "groupId")).isEqualTo(GROUP);
      assertThat(text(d, "version")).as(text(d, "artifactId")).isEqualTo("${project.version}");
    }
  }

  @Test
  void bomHasNoParentSoImportingItBringsOnlySteelyardVersions() {
    // With steelyard-parent as its parent, an import would also pin grpc, netty, guava, junit...
    // in the application's build.
    assertThat(child(bom, "parent")).isNull();
    assertThat(managedDependencies(bom)).allSatisfy(d -> assertThat(text(d, "groupId")).isEqualTo(GROUP));
  }

  @Test
  void everyPublishedModuleDescribesItselfAndTheRestBuildNoReleaseJars() throws Exception {
    for (Path module : modules(root, parent)) {
      Element pom = pom(module);
      String artifactId = text(pom, "artifactId");
      if ("true".equals(property(pom, "maven.deploy.skip"))) {
        // The release profile would otherwise build sources and Javadoc jars nobody publishes.
        assertThat(property(pom, "maven.source.skip")).as(artifactId).isEqualTo("true");
        assertThat(property(pom, "maven.javadoc.skip")).as(artifactId).isEqualTo("true");
      } else {
        // Inherited, a description would name the parent's project, not this artifact.
        assertThat(text(pom, "name")).as(artifactId).isNotBlank();
        assertThat(text(pom, "description")).as(artifactId).isNotBlank()
            .isNotEqualTo(text(parent, "description"));
      }
    }
  }

  @Test
  void parentAndBomCarryTheMetadataARepositoryRequires() {
    // Every published module inherits these from the parent; the BOM has no parent.
    for (Element pom : List.of(parent, bom)) {
      String artifactId = text(pom, "artifactId");
      assertThat(text(pom, "url")).as(artifactId).startsWith("https://");
      Element license = child(child(pom, "licenses"), "license");
      assertThat(text(license, "name")).as(artifactId).isEqualTo("Apache-2.0");
      assertThat(text(license, "url")).as(artifactId).contains("apache.org/licenses/LICENSE-2.0");
      Element scm = child(pom, "scm");
      assertThat(text(scm, "url")).as(artifactId).isEqualTo(text(pom, "url"));
      assertThat(text(scm, "connection")).as(artifactId).startsWith("scm:git:");
      assertThat(child(child(pom, "developers"), "developer")).as(artifactId).isNotNull();
    }
  }

  @Test
  void theReleaseProfileBuildsSourcesAndJavadocJars() {
    Element release = null;
    for (Element profile : children(child(parent, "profiles"), "profile")) {
      if (text(profile, "id").equals("release")) {
        release = profile;
      }
    }
    assertThat(release).as("a release profile in the parent pom").isNotNull();
    Set<String> plugins = new TreeSet<>();
    for (Element plugin : children(child(child(release, "build"), "plugins"), "plugin")) {
      plugins.add(text(plugin, "artifactId"));
    }
    assertThat(plugins).contains("maven-source-plugin", "maven-javadoc-plugin");
  }

  @Test
  void bomIsPartOfTheBuild() {
    assertThat(modules(root, parent)).contains(root.resolve("bom"));
  }

  private static Set<String> listedArtifacts() {
    Set<String> listed = new TreeSet<>();
    for (Element d : managedDependencies(bom)) {
      assertThat(listed.add(text(d, "artifactId"))).as("listed twice: %s", text(d, "artifactId")).isTrue();
    }
    return listed;
  }

  /** Every module of the reactor, recursively through aggregator poms. */
  private static List<Path> modules(Path dir, Element pom) {
    List<Path> out = new ArrayList<>();
    Element modules = child(pom, "modules");
    if (modules == null) {
      return out;
    }
    for (Element m : children(modules, "module")) {
      Path module = dir.resolve(m.getTextContent().trim()).normalize();
      out.add(module);
      try {
        out.addAll(modules(module, pom(module)));
      } catch (Exception e) {
        throw new AssertionError("cannot read " + module.resolve("pom.xml"), e);
      }
    }
    return out;
  }

  private static List<Element> managedDependencies(Element pom) {
    Element dm = child(pom, "dependencyManagement");
    Element deps = dm == null ? null : child(dm, "dependencies");
    return deps == null ? List.of() : children(deps, "dependency");
  }

  private static String property(Element pom, String name) {
    Element props = child(pom, "properties");
    Element p = props == null ? null : child(props, name);
    return p == null ? null : p.getTextContent().trim();
  }

  private static Element pom(Path dir) throws Exception {
    Path file = dir.resolve("pom.xml");
    if (!Files.isRegularFile(file)) {
      throw new IOException("no pom.xml in " + dir);
    }
    Document doc = DocumentBuilderFactory.newInstance().newDocumentBuilder().parse(file.toFile());
    return doc.getDocumentElement();
  }

  /** A direct child's text; packaging defaults to jar, as in Maven. */
  private static String text(Element e, String name) {
    assertThat(e).as("the element that should hold <%s>", name).isNotNull();
    Element c = child(e, name);
    if (c == null && name.equals("packaging")) {
      return "jar";
    }
    assertThat(c).as("<%s> in <%s>", name, e.getTagName()).isNotNull();
    return c.getTextContent().trim();
  }

  private static Element child(Element e, String name) {
    List<Element> c = children(e, name);
    return c.isEmpty() ? null : c.get(0);
  }

  private static List<Element> children(Element e, String name) {
    List<Element> out = new ArrayList<>();
    if (e == null) {
      return out;
    }
    for (Node n = e.getFirstChild(); n != null; n = n.getNextSibling()) {
      if (n instanceof Element c && c.getTagName().equals(name)) {
        out.add(c);
      }
    }
    return out;
  }
}
