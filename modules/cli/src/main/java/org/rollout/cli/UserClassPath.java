package org.rollout.cli;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigValue;
import com.typesafe.config.ConfigValueType;
import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.MalformedURLException;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.InvalidPathException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import org.rollout.api.InvalidConfigException;

/**
 * The user's own classes: the jars and class directories of {@code --classpath} and {@code
 * rollout.classpath}, in that order, behind one class loader whose parent is the engine's. Every
 * class named in the configuration ({@code rollout.workflow}, a {@code reward_fn} kwarg, {@code
 * rollout.accept}, agent workflows) is loaded through it: the CLI makes it the context class loader
 * of the thread that builds the node, which {@code WorkflowResolver} and the built-in workflows'
 * kwargs read.
 *
 * <pre>
 *   entry          means                                   as java -cp
 *   lib/a.jar      that jar (or zip)                       yes
 *   build/classes  that directory of .class files          yes
 *   libs/*         every .jar/.JAR directly in libs        yes (not recursive, no other patterns)
 * </pre>
 *
 * <p>Entries are separated by {@code :} (the platform's path separator) in a string; {@code
 * rollout.classpath} may also be a list. Relative paths resolve against the working directory, as
 * every path of the configuration does (docs/configuration.md). An entry that does not exist, a
 * {@code dir/*} whose directory does not exist, and any other {@code *} pattern are refused,
 * naming the key and the entry. Immutable.
 */
final class UserClassPath {
    static final String FLAG = "--classpath";
    static final String KEY = "rollout.classpath";
    private static final String ALLOWED = "existing jar files or class directories, or dir/* for every jar in dir,"
            + " separated by '" + File.pathSeparator + "' (relative to the working directory)";

    private final List<Path> entries;

    private UserClassPath(List<Path> entries) {
        this.entries = List.copyOf(entries);
    }

    static final UserClassPath EMPTY = new UserClassPath(List.of());

    /**
     * The entries of {@code flag} (may be null) then those of {@code rollout.classpath} in {@code
     * config} (absent, {@code []} or {@code ""}: none).
     *
     * @throws InvalidConfigException naming {@code --classpath} or {@code rollout.classpath} and the
     *     entry at fault
     */
    static UserClassPath of(String flag, Config config) {
        List<Path> paths = new ArrayList<>();
        if (flag != null) {
            paths.addAll(expand(FLAG, split(flag)));
        }
        if (config != null && config.hasPath(KEY)) {
            paths.addAll(expand(KEY, configEntries(config.getValue(KEY))));
        }
        return new UserClassPath(paths);
    }

    /** The jars and directories, wildcards expanded, in order. */
    List<Path> entries() {
        return entries;
    }

    boolean isEmpty() {
        return entries.isEmpty();
    }

    /** A class loader over the entries with {@code parent} above them; {@code parent} itself when there are none. */
    ClassLoader loader(ClassLoader parent) {
        if (entries.isEmpty()) {
            return parent;
        }
        URL[] urls = new URL[entries.size()];
        for (int i = 0; i < urls.length; i++) {
            try {
                urls[i] = entries.get(i).toUri().toURL();
            } catch (MalformedURLException e) {
                throw new InvalidConfigException(KEY, entries.get(i).toString(), ALLOWED);
            }
        }
        return new URLClassLoader("rollout-user-classpath", urls, parent);
    }

    @Override
    public String toString() {
        return String.join(
                File.pathSeparator, entries.stream().map(Path::toString).toList());
    }

    private static List<String> configEntries(ConfigValue v) {
        if (v.valueType() == ConfigValueType.NULL) {
            return List.of();
        }
        if (v.valueType() == ConfigValueType.STRING) {
            return split((String) v.unwrapped());
        }
        if (v.valueType() == ConfigValueType.LIST) {
            List<String> out = new ArrayList<>();
            for (Object o : (List<?>) v.unwrapped()) {
                if (!(o instanceof String s)) {
                    throw new InvalidConfigException(
                            KEY, v.unwrapped(), "a list of strings, or one string; " + ALLOWED);
                }
                out.addAll(split(s));
            }
            return out;
        }
        throw new InvalidConfigException(KEY, v.unwrapped(), "a list of strings, or one string; " + ALLOWED);
    }

    private static List<String> split(String text) {
        List<String> out = new ArrayList<>();
        for (String part : text.split(File.pathSeparator, -1)) {
            if (!part.isBlank()) {
                out.add(part.strip());
            }
        }
        return out;
    }

    private static List<Path> expand(String key, List<String> texts) {
        List<Path> out = new ArrayList<>();
        for (String text : texts) {
            boolean wildcard = text.equals("*") || text.endsWith("/*");
            if (!wildcard && text.contains("*")) {
                throw new InvalidConfigException(key, text, ALLOWED + "; '*' is only allowed as a whole last element");
            }
            Path p;
            try {
                p = Path.of(wildcard ? text.substring(0, text.length() - 1) + "." : text)
                        .toAbsolutePath()
                        .normalize();
            } catch (InvalidPathException e) {
                throw new InvalidConfigException(key, text, ALLOWED + " (" + e.getReason() + ")");
            }
            if (wildcard) {
                if (!Files.isDirectory(p)) {
                    throw new InvalidConfigException(key, text, ALLOWED + "; no directory " + p);
                }
                out.addAll(jarsIn(p));
            } else if (!Files.exists(p)) {
                throw new InvalidConfigException(key, text, ALLOWED + "; " + p + " does not exist");
            } else if (!Files.isReadable(p)) {
                throw new InvalidConfigException(key, text, ALLOWED + "; " + p + " is not readable");
            } else {
                out.add(p);
            }
        }
        return out;
    }

    private static List<Path> jarsIn(Path dir) {
        List<Path> jars = new ArrayList<>();
        try (DirectoryStream<Path> files = Files.newDirectoryStream(dir)) {
            for (Path f : files) {
                if (Files.isRegularFile(f)
                        && f.getFileName().toString().toLowerCase(Locale.ROOT).endsWith(".jar")) {
                    jars.add(f);
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException("listing " + dir + " for " + dir + "/*", e);
        }
        jars.sort(null);
        return jars;
    }
}
