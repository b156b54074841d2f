package org.rollout.cluster;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.lang.reflect.Modifier;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * docs/architecture.md's serialization table names every message of the cluster module by its
 * marker, and nothing else: a message added, removed or re-marked without the table fails here.
 * Messages are named {@code Owner.Message} (or a top-level class's name) in backticks; private messages (timers, piped results,
 * adapted listings) are NodeLocal by rule and not listed.
 */
class SerializationTableTest {
    private static final Path DOC = Path.of("../../docs/architecture.md");
    private static final Pattern NAMED = Pattern.compile("`([A-Z][A-Za-z0-9]*(?:\\.[A-Z][A-Za-z0-9]*)*)`");

    @Test
    void theTableListsEveryCborMessageAndNoOther() throws Exception {
        assertThat(listed("CborSerializable")).isEqualTo(marked(CborSerializable.class, false));
    }

    @Test
    void theTableListsEveryKryoMessageAndNoOther() throws Exception {
        assertThat(listed("KryoSerializable")).isEqualTo(marked(KryoSerializable.class, false));
    }

    @Test
    void theTableListsEveryLedgerEntryAndNoOther() throws Exception {
        assertThat(listed("DurableState.LedgerEntry")).isEqualTo(marked(DurableState.LedgerEntry.class, false));
    }

    @Test
    void theTableListsEveryNodeLocalMessageOtherClassesCanSendAndNoOther() throws Exception {
        assertThat(listed("NodeLocal")).isEqualTo(marked(NodeLocal.class, true));
    }

    /** The names in backticks in the messages column of the table row of {@code marker}. */
    private static Set<String> listed(String marker) throws IOException {
        assertThat(DOC).as("docs/architecture.md from the module's directory").exists();
        String row = Files.readAllLines(DOC).stream()
                .filter(l -> l.startsWith("| `" + marker + "` |"))
                .findFirst()
                .orElseThrow(() -> new AssertionError("no row for " + marker + " in the serialization table"));
        Set<String> names = new TreeSet<>();
        Matcher m = NAMED.matcher(row.substring(row.indexOf('|', row.indexOf('|', 1) + 1)));
        while (m.find()) {
            names.add(m.group(1));
        }
        return names;
    }

    /**
     * The module's message classes with {@code marker}, as {@code Owner.Message}; with {@code
     * skipPrivate}, private ones are left out.
     */
    private static Set<String> marked(Class<?> marker, boolean skipPrivate) throws IOException, URISyntaxException {
        Path classes = Path.of(
                marker.getProtectionDomain().getCodeSource().getLocation().toURI());
        Path pkg = classes.resolve("org/rollout/cluster");
        Set<String> names = new TreeSet<>();
        List<Path> files;
        try (Stream<Path> s = Files.list(pkg)) {
            files = s.filter(p -> p.getFileName().toString().endsWith(".class")).toList();
        }
        for (Path f : files) {
            String binary = "org.rollout.cluster." + f.getFileName().toString().replace(".class", "");
            Class<?> c;
            try {
                c = Class.forName(binary, false, marker.getClassLoader());
            } catch (ClassNotFoundException | LinkageError e) {
                throw new AssertionError("cannot load " + binary, e);
            }
            if (c == marker
                    || c.isInterface()
                    || c.isAnonymousClass()
                    || c.isSynthetic()
                    || !marker.isAssignableFrom(c)) {
                continue;
            }
            if (skipPrivate && Modifier.isPrivate(c.getModifiers())) {
                continue;
            }
            names.add(c.getName().substring("org.rollout.cluster.".length()).replace('$', '.'));
        }
        return names;
    }
}
