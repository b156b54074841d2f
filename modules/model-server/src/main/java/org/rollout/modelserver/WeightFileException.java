package org.rollout.modelserver;

import java.io.IOException;
import java.nio.file.Path;

/**
 * A weight file that cannot be used: unreadable, wrong magic, unsupported format version, wrong
 * vocabulary size, truncated, trailing bytes, a CRC mismatch, or values out of range. The message
 * always names the path and what is wrong, e.g. {@code weight file /tmp/w.rlm: CRC32 mismatch
 * (stored 0x1234abcd, computed 0x9f00aa11)}.
 */
public final class WeightFileException extends IOException {
    private final transient Path path;
    private final String reason;

    public WeightFileException(Path path, String reason) {
        super("weight file " + path + ": " + reason);
        this.path = path;
        this.reason = reason;
    }

    public WeightFileException(Path path, String reason, Throwable cause) {
        super("weight file " + path + ": " + reason, cause);
        this.path = path;
        this.reason = reason;
    }

    /** The file that was being read or written. */
    public Path path() {
        return path;
    }

    /** What is wrong with it, without the path. */
    public String reason() {
        return reason;
    }
}
