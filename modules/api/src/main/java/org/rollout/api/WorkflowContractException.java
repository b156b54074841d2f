package org.rollout.api;

/**
 * A workflow result that breaks the rollout contract in a way retrying will not fix (semantics §5.8):
 * duplicate completion ids in a group, mixed result kinds, ambiguous reward references,
 * non-finite rewards, tensors of the wrong shape. The message names the task, the slot and the
 * key at fault.
 *
 * <p>It fails the group it occurs in, never the node or the batch, and is counted and reported
 * separately from ordinary rejections so that a systematically broken workflow is loud.
 */
public class WorkflowContractException extends IllegalArgumentException {
    public WorkflowContractException(String message) {
        super(message);
    }

    public WorkflowContractException(String message, Throwable cause) {
        super(message, cause);
    }
}
