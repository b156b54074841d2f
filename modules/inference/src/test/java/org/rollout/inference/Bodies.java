package org.rollout.inference;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;

/** Recorded response bodies under {@code src/test/resources/bodies/}. */
final class Bodies {
    private Bodies() {}

    static byte[] load(String name) {
        try (InputStream in = Bodies.class.getResourceAsStream("/bodies/" + name)) {
            if (in == null) {
                throw new IllegalArgumentException("no recorded body " + name);
            }
            return in.readAllBytes();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    static byte[] utf8(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }
}
