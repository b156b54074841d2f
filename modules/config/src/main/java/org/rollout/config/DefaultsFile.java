package org.rollout.config;

import com.typesafe.config.ConfigFactory;
import com.typesafe.config.ConfigObject;
import com.typesafe.config.ConfigParseOptions;
import com.typesafe.config.ConfigRenderOptions;
import com.typesafe.config.ConfigValue;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.URISyntaxException;
import java.net.URL;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;

/**
 * The release's {@code conf/rollout.conf}: every key of this module's {@code reference.conf}, in
 * its order, with its documentation and its default, commented out. Uncommenting a line sets that
 * key alone (each is written as its full path, {@code #rollout.consumer_batch_size = 1}). The
 * distribution's build writes it from the reference at package time ({@link #main}), so it cannot
 * drift from the defaults the engine reads.
 */
public final class DefaultsFile {
    private DefaultsFile() {}

    private static final String HEADER = """
            # The Rollout Engine's settings: every key with its documentation and its default, commented out.
            # Written from the engine's reference.conf when this release was built; docs/configuration.md
            # describes each key. Copy this file, uncomment (remove the leading '#' of) the lines you change,
            # and pass it with --config (rollout local --config my.conf, rollout node --config my.conf).
            # Unknown keys, wrong types and impossible combinations are refused at start-up, naming the key.
            """;

    /** Writes the file to {@code args[0]}, creating its directory. */
    public static void main(String[] args) throws IOException {
        if (args.length != 1) {
            throw new IllegalArgumentException("usage: DefaultsFile OUTPUT_FILE");
        }
        Path out = Path.of(args[0]);
        if (out.getParent() != null) {
            Files.createDirectories(out.getParent());
        }
        Files.writeString(out, render(), StandardCharsets.UTF_8);
    }

    /** The text of the commented defaults file. */
    public static String render() {
        ConfigObject root = ConfigFactory.parseURL(
                        ownReference(), ConfigParseOptions.defaults().setAllowMissing(false))
                .root();
        List<String[]> leaves = new ArrayList<>();
        for (String s : KnownKeys.SECTIONS) {
            ConfigValue v = root.get(s);
            if (v == null) {
                throw new IllegalStateException("reference.conf has no section '" + s + "'");
            }
            collect(s, v, leaves);
        }
        leaves.sort(Comparator.comparingInt(l -> Integer.parseInt(l[0])));
        StringBuilder b = new StringBuilder(HEADER);
        String section = "";
        for (String[] l : leaves) {
            String path = l[1];
            String top = path.contains(".") ? path.substring(0, path.indexOf('.')) : path;
            if (!top.equals(section)) {
                section = top;
                b.append("\n# ---- ").append(top).append(" ----\n");
            }
            b.append('\n');
            if (!l[2].isEmpty()) {
                for (String c : l[2].split("\n", -1)) {
                    b.append("#")
                            .append(c.isEmpty() || c.startsWith(" ") ? c : " " + c)
                            .append('\n');
                }
            }
            b.append('#').append(path).append(" = ").append(l[3]).append('\n');
        }
        return b.toString();
    }

    /** [line, path, comment, rendered value] of each leaf (a free-form or empty object counts as one). */
    private static void collect(String path, ConfigValue v, List<String[]> out) {
        if (v instanceof ConfigObject o && !o.isEmpty() && !KnownKeys.FREE_FORM.contains(path)) {
            for (Map.Entry<String, ConfigValue> e : o.entrySet()) {
                collect(path + "." + e.getKey(), e.getValue(), out);
            }
            return;
        }
        out.add(new String[] {
            Integer.toString(v.origin().lineNumber()),
            path,
            String.join("\n", v.origin().comments()),
            v.render(ConfigRenderOptions.concise())
        });
    }

    /** This module's reference.conf (others, Pekko's, are on the class path too). */
    static URL ownReference() {
        try {
            URL location =
                    DefaultsFile.class.getProtectionDomain().getCodeSource().getLocation();
            URI uri = location.toURI();
            if (location.getPath().endsWith(".jar")) {
                return URI.create("jar:" + uri + "!/reference.conf").toURL();
            }
            return Path.of(uri).resolve("reference.conf").toUri().toURL();
        } catch (URISyntaxException | IOException e) {
            throw new UncheckedIOException(
                    new IOException("cannot locate the config module's reference.conf: " + e, e));
        }
    }
}
