package org.rollout.workflows.python;

/**
 * A Python reward call that failed: the function raised (the message holds the last line of the
 * Python traceback), or its worker process died, timed out starting, or broke the protocol.
 */
public final class PythonRewardException extends Exception {
    private static final long serialVersionUID = 1L;

    public PythonRewardException(String message) {
        super(message);
    }

    public PythonRewardException(String message, Throwable cause) {
        super(message, cause);
    }
}
