/**
 * What users of the Rollout Engine code against: workflows ({@link org.rollout.api.RolloutWorkflow},
 * {@link org.rollout.api.AgentWorkflow}), the engine they call ({@link
 * org.rollout.api.InferenceEngine}), requests, responses and sampling parameters, trajectory data
 * ({@link org.rollout.api.TensorDict} of typed {@link org.rollout.api.Tensor}s), interactions, and
 * the per-episode {@link org.rollout.api.WorkflowContext}.
 *
 * <p>This package has no dependency beyond the JDK: no actors, no HTTP server. Everything in it is
 * immutable or documented as thread-safe.
 */
package org.rollout.api;
