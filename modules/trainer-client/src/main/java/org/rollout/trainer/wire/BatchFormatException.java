package org.rollout.trainer.wire;

import java.io.IOException;

/**
 * A batch stream that is not well-formed RBATCH v1, or that ended early. The message names the
 * batch, group, task and tensor key where reading stopped, and the byte position.
 */
public class BatchFormatException extends IOException {
    public BatchFormatException(String message) {
        super(message);
    }

    public BatchFormatException(String message, Throwable cause) {
        super(message, cause);
    }
}
