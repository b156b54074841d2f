package org.rollout.core;

import java.util.Objects;
import org.rollout.api.RolloutWorkflow;

/**
 * What {@link WorkflowResolver} made of a configured workflow.
 *
 * @param workflow the workflow each slot runs
 * @param description what was resolved and how, for logs: e.g. {@code "class com.acme.MathRlvr
 *     constructed with workflow_kwargs [reward_fn]"}
 */
public record ResolvedWorkflow(RolloutWorkflow workflow, String description) {
    public ResolvedWorkflow {
        Objects.requireNonNull(workflow, "workflow");
        Objects.requireNonNull(description, "description");
    }
}
