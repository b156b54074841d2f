package org.rollout.core;

import java.nio.file.InvalidPathException;
import java.nio.file.Path;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.rollout.api.InvalidConfigException;
import org.rollout.api.Tokenizer;
import org.rollout.config.RolloutSettings;

/**
 * Chooses the tokenizer that {@code rollout.tokenizer_path} names.
 *
 * <pre>
 *   ""  "builtin"  "byte-level"  (or null)   → ByteLevelTokenizer.INSTANCE
 *   /models/qwen2.5                         → HuggingFaceTokenizer of /models/qwen2.5/tokenizer.json
 *   /models/qwen2.5/tokenizer.json          → the same instance
 * </pre>
 *
 * <p>Hugging Face tokenizers are cached for the life of the JVM, one per real path of their
 * {@code tokenizer.json} (so a directory, the file inside it, and a symlink to either share one
 * instance); loading one takes about 0.4 s. A path that fails to load is not cached, so a fixed
 * file is picked up by the next call. Relative paths resolve against the working directory.
 *
 * <p>Thread-safe; concurrent first loads of one path load it once.
 */
public final class Tokenizers {
    /** The values that select the built-in byte-level tokenizer. */
    public static final Set<String> BUILTIN_NAMES = RolloutSettings.BUILTIN_TOKENIZER_NAMES;

    private static final ConcurrentHashMap<Path, HuggingFaceTokenizer> CACHE = new ConcurrentHashMap<>();

    private Tokenizers() {}

    /**
     * The tokenizer for {@code tokenizerPath}.
     *
     * @throws InvalidConfigException for key {@code tokenizer_path} when the path does not exist,
     *     holds no {@code tokenizer.json}, or its files are unreadable or invalid; the message
     *     names the value, what is allowed and what is wrong
     */
    public static Tokenizer load(String tokenizerPath) {
        if (tokenizerPath == null || BUILTIN_NAMES.contains(tokenizerPath)) {
            return ByteLevelTokenizer.INSTANCE;
        }
        Path path;
        try {
            path = Path.of(tokenizerPath);
        } catch (InvalidPathException e) {
            throw HuggingFaceTokenizer.invalid(tokenizerPath, "not a valid path: " + e.getMessage(), e);
        }
        Path tokenizerFile = HuggingFaceTokenizer.locate(path, tokenizerPath);
        // computeIfAbsent stores nothing when loading throws, so failures are retried next time.
        return CACHE.computeIfAbsent(tokenizerFile, file -> HuggingFaceTokenizer.load(file, tokenizerPath));
    }
}
