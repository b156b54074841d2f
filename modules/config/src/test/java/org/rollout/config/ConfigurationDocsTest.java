package org.rollout.config;

import static org.assertj.core.api.Assertions.assertThat;

import com.typesafe.config.ConfigFactory;
import com.typesafe.config.ConfigObject;
import com.typesafe.config.ConfigParseOptions;
import com.typesafe.config.ConfigValue;
import com.typesafe.config.ConfigValueType;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * docs/configuration.md is the reference page of reference.conf: the same keys, in the same order,
 * with the same defaults; and every key in reference.conf has a comment.
 */
class ConfigurationDocsTest {
    private static final Path REFERENCE = Path.of("src/main/resources/reference.conf");
    private static final Path DOCS = Path.of("../../docs/configuration.md");
    private static final Pattern ROW = Pattern.compile("^\\| `([a-z_.]+)` \\| `([^`]*)` \\|.*");

    /** A leaf of reference.conf: a value that is not a non-empty object. */
    private record Leaf(String path, ConfigValue value) {}

    /**
     * The engine's keys of this module's reference.conf. A {@code pekko} section would hold Pekko's
     * keys, which Pekko documents (the serializer bindings are in the cluster module's
     * reference.conf, and docs/architecture.md explains them).
     */
    private static List<Leaf> referenceLeaves() {
        ConfigObject root = ConfigFactory.parseFile(
                        REFERENCE.toFile(), ConfigParseOptions.defaults().setAllowMissing(false))
                .root()
                .withoutKey(KnownKeys.PEKKO);
        List<Leaf> leaves = new ArrayList<>();
        collect("", root, leaves);
        leaves.sort(Comparator.comparingInt(l -> l.value().origin().lineNumber()));
        return leaves;
    }

    private static void collect(String prefix, ConfigObject o, List<Leaf> out) {
        for (Map.Entry<String, ConfigValue> e : o.entrySet()) {
            String path = prefix.isEmpty() ? e.getKey() : prefix + "." + e.getKey();
            if (e.getValue() instanceof ConfigObject child && !child.isEmpty()) {
                collect(path, child, out);
            } else {
                out.add(new Leaf(path, e.getValue()));
            }
        }
    }

    /** Key → default cell of the tables under "## Keys", in page order. */
    private static Map<String, String> documentedKeys() throws IOException {
        Map<String, String> keys = new LinkedHashMap<>();
        boolean inKeys = false;
        for (String line : Files.readAllLines(DOCS)) {
            if (line.startsWith("## ")) {
                inKeys = line.equals("## Keys");
                continue;
            }
            Matcher m = ROW.matcher(line);
            if (inKeys && m.matches()) {
                assertThat(keys.put(m.group(1), m.group(2)))
                        .as("%s documented twice", m.group(1))
                        .isNull();
            }
        }
        return keys;
    }

    @Test
    void everyKeyOfReferenceConfIsDocumented() throws IOException {
        Map<String, String> documented = documentedKeys();
        List<String> missing = referenceLeaves().stream()
                .map(Leaf::path)
                .filter(k -> !documented.containsKey(k))
                .toList();
        assertThat(missing)
                .as("keys of reference.conf missing from docs/configuration.md")
                .isEmpty();
    }

    @Test
    void everyDocumentedKeyIsInReferenceConf() throws IOException {
        List<String> reference = referenceLeaves().stream().map(Leaf::path).toList();
        List<String> extra = documentedKeys().keySet().stream()
                .filter(k -> !reference.contains(k))
                .toList();
        assertThat(extra)
                .as("keys in docs/configuration.md that reference.conf does not have")
                .isEmpty();
    }

    @Test
    void keysAreDocumentedInTheOrderOfReferenceConf() throws IOException {
        assertThat(List.copyOf(documentedKeys().keySet()))
                .containsExactlyElementsOf(
                        referenceLeaves().stream().map(Leaf::path).toList());
    }

    @Test
    void documentedDefaultsAreThoseOfReferenceConf() throws IOException {
        Map<String, String> documented = documentedKeys();
        for (Leaf leaf : referenceLeaves()) {
            String cell = documented.get(leaf.path());
            if (cell == null) {
                continue; // reported by everyKeyOfReferenceConfIsDocumented
            }
            ConfigValue doc = ConfigFactory.parseString("v = " + cell).root().get("v");
            assertThat(sameValue(doc, leaf.value()))
                    .as(
                            "default of %s: docs say %s, reference.conf has %s",
                            leaf.path(), cell, leaf.value().render())
                    .isTrue();
        }
    }

    @Test
    void everyKeyOfReferenceConfHasAComment() {
        List<String> uncommented = referenceLeaves().stream()
                .filter(l -> l.value().origin().comments().stream().allMatch(String::isBlank))
                .map(Leaf::path)
                .toList();
        assertThat(uncommented).as("keys of reference.conf without a comment").isEmpty();
    }

    @Test
    void theSettingsKnowExactlyTheKeysOfReferenceConf() {
        List<String> known = KnownKeys.of(RolloutConfig.reference()).leaves().stream()
                .filter(k -> !k.startsWith("eval_gconfig."))
                .toList();
        assertThat(known)
                .containsExactlyElementsOf(
                        referenceLeaves().stream().map(Leaf::path).toList());
    }

    private static boolean sameValue(ConfigValue a, ConfigValue b) {
        if (a.valueType() == ConfigValueType.NUMBER && b.valueType() == ConfigValueType.NUMBER) {
            return ((Number) a.unwrapped()).doubleValue() == ((Number) b.unwrapped()).doubleValue();
        }
        return a.valueType() == b.valueType() && Objects.equals(a.unwrapped(), b.unwrapped());
    }
}
