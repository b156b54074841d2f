package org.rollout.gateway;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;

/**
 * Checks {@code Authorization: Bearer <token>} headers against the configured token in constant
 * time: both sides are hashed first, so neither the content nor the length of the expected token
 * shows in how long a comparison takes.
 */
final class BearerToken {
    private static final String SCHEME = "Bearer ";

    /** What a header amounted to. */
    enum Verdict {
        ACCEPTED,
        MISSING,
        WRONG
    }

    private final byte[] expected;

    BearerToken(String token) {
        this.expected = sha256(token);
    }

    Verdict check(String authorizationHeader) {
        if (authorizationHeader == null
                || authorizationHeader.length() <= SCHEME.length()
                || !authorizationHeader.regionMatches(true, 0, SCHEME, 0, SCHEME.length())) {
            return Verdict.MISSING;
        }
        byte[] presented = sha256(authorizationHeader.substring(SCHEME.length()).strip());
        return MessageDigest.isEqual(presented, expected) ? Verdict.ACCEPTED : Verdict.WRONG;
    }

    private static byte[] sha256(String s) {
        try {
            return MessageDigest.getInstance("SHA-256").digest(s.getBytes(StandardCharsets.UTF_8));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("every JDK has SHA-256", e);
        }
    }
}
