package org.rollout.python;

/**
 * A Python workflow cannot run: its module does not import, it has no such class, the class is not
 * a workflow, its constructor refused its keyword arguments, or its worker would not start. The
 * message names the workflow and why; the node's assembly keys it to {@code rollout.workflow}.
 */
public final class WorkflowRefusedException extends RuntimeException {
    public WorkflowRefusedException(String message) {
        super(message);
    }
}
