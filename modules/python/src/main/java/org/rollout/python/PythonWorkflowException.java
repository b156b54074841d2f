package org.rollout.python;

/**
 * A Python episode raised, or its worker died: the message names the workflow's class and the
 * error's last line (or the worker and its last stderr line); {@link #pythonTraceback()} has the
 * whole Python traceback when there is one. The episode's group fails as when a Java workflow throws.
 */
public final class PythonWorkflowException extends RuntimeException {
    private final String traceback;

    public PythonWorkflowException(String message, String traceback) {
        super(message);
        this.traceback = traceback == null ? "" : traceback;
    }

    /** The Python traceback, or "" when the worker died or sent none. */
    public String pythonTraceback() {
        return traceback;
    }
}
