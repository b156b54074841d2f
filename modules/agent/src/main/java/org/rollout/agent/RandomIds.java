package org.rollout.agent;

import java.security.SecureRandom;
import java.util.HexFormat;

/** Random hex for the proxy's ids: session keys, API keys and completion ids ({@code chatcmpl-…}). */
final class RandomIds {
    private static final SecureRandom RANDOM = new SecureRandom();

    private RandomIds() {}

    /** {@code bytes} random bytes as lower-case hex. */
    static String hex(int bytes) {
        byte[] b = new byte[bytes];
        RANDOM.nextBytes(b);
        return HexFormat.of().formatHex(b);
    }
}
