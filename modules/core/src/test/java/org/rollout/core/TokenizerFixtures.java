package org.rollout.core;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URISyntaxException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;

/**
 * The hand-written test tokenizer and helpers to build tokenizer directories around it.
 *
 * <p>{@code tokenizers/tiny/tokenizer.json} is a character-level BPE (ids 0–98: {@code <unk>},
 * punctuation, digits, letters, and merges up to {@code hello}, {@code world}, {@code user},
 * {@code assistant}) with a Fuse decoder, so decoding is exact, and a post-processor that would
 * prepend {@code <|begin_of_text|>} if special tokens were added. Added tokens: 99 {@code
 * <|endoftext|>}, 100 {@code <|im_start|>}, 101 {@code <|im_end|>}, 102 {@code <think>} (not
 * special), 103 {@code <|begin_of_text|>}, 104 {@code <|start_header_id|>}, 105 {@code
 * <|end_header_id|>}, 106 {@code <|eot_id|>}.
 */
final class TokenizerFixtures {
    static final int HELLO = 80;
    static final int WORLD = 84;
    static final int USER = 98;
    static final int SPACE = 1;
    static final int NEWLINE = 2;
    static final int ENDOFTEXT = 99;
    static final int IM_START = 100;
    static final int IM_END = 101;
    static final int THINK = 102;
    static final int BEGIN_OF_TEXT = 103;
    static final int EOT_ID = 106;
    static final int VOCAB_SIZE = 107;

    private static final ObjectMapper JSON = new ObjectMapper();

    private TokenizerFixtures() {}

    static Path resource(String name) {
        try {
            return Path.of(TokenizerFixtures.class.getResource("/" + name).toURI());
        } catch (URISyntaxException e) {
            throw new IllegalStateException(e);
        }
    }

    /** The resource directory with tokenizer.json and tokenizer_config.json (Qwen2.5-style template). */
    static Path tinyDir() {
        return resource("tokenizers/tiny");
    }

    static String template(String name) {
        return read(resource("chat-templates/" + name));
    }

    /** {@code dir} with a copy of the tiny tokenizer.json and nothing else. */
    static Path bareTokenizerIn(Path dir) {
        try {
            Files.createDirectories(dir);
            Files.copy(tinyDir().resolve("tokenizer.json"), dir.resolve("tokenizer.json"));
            return dir;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    static void writeJson(Path file, Map<String, ?> content) {
        write(file, toJson(content));
    }

    static String toJson(Object content) {
        try {
            return JSON.writeValueAsString(content);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    static void write(Path file, String content) {
        try {
            Files.writeString(file, content, StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    static String read(Path file) {
        try {
            return Files.readString(file, StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
