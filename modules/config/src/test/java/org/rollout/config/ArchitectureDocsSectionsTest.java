package org.rollout.config;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * docs/architecture.md's picture of the configuration module names every section class the module
 * has: a section added without the picture fails here.
 */
class ArchitectureDocsSectionsTest {
    private static final Path DOC = Path.of("../../docs/architecture.md");
    private static final Path SOURCES = Path.of("src/main/java/org/rollout/config");

    @Test
    void theConfigurationPictureAndTableNameEverySection() throws IOException {
        List<String> sections;
        try (Stream<Path> files = Files.list(SOURCES)) {
            sections = files.map(p -> p.getFileName().toString())
                    .filter(n -> n.endsWith("Section.java"))
                    .map(n -> n.substring(0, n.length() - ".java".length()))
                    .sorted()
                    .toList();
        }
        assertThat(sections).as("the section classes").isNotEmpty();
        String doc = Files.readString(DOC);
        String part = doc.substring(doc.indexOf("## config (org.rollout.config)"));
        part = part.substring(0, part.indexOf("\n## ", 1));
        String picture = part.substring(part.indexOf("```"), part.indexOf("```", part.indexOf("```") + 3));
        String table = part.substring(part.indexOf("| class |"));
        for (String section : sections) {
            assertThat(picture)
                    .as("the configuration picture names %s", section)
                    .contains(section);
            assertThat(table).as("the configuration table names %s", section).contains("`" + section + "`");
        }
    }
}
