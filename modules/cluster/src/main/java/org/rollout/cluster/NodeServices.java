package org.rollout.cluster;

import java.net.http.HttpClient;
import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import org.rollout.api.AcceptFilter;
import org.rollout.api.ControllableEngine;
import org.rollout.api.RolloutWorkflow;
import org.rollout.config.StalenessPolicy;
import org.rollout.core.GroupOptions;
import org.rollout.core.TrajectoryDumper;
import org.rollout.core.TrajectoryFormatChecker;

/**
 * Everything a node's {@link GroupRunner} needs to run groups: the engine, the resolved workflows
 * for training and evaluation, group options, the accept filter, the dumper and format checker,
 * and the shared HTTP client and executor for blocking work. Built once per node at start-up from
 * the validated settings; none of it travels between nodes.
 *
 * @param engine the node's inference engine
 * @param trainWorkflow the slot workflow for training groups (built with {@code gconfig})
 * @param evalWorkflow the slot workflow for evaluation groups (built with {@code eval_gconfig})
 * @param trainGroup group options for training ({@code gconfig.n_samples}, min usable size, …)
 * @param evalGroup group options for evaluation (full groups, no normalisation)
 * @param accept AReaL's {@code should_accept_fn}; applied to training groups only
 * @param dumper writes trajectories when {@code dump_to_file} is on, else null
 * @param formatChecker checks raw results when {@code check_trajectory_format} is on, else null
 * @param stalenessPolicy what to do with groups the version leaves behind
 * @param maxHeadOffpolicyness η, for the cancel policy
 * @param episodeTimeout a group not finished after this long fails with {@code timeout}
 * @param httpClient the pooled client handed to workflows through their context
 * @param blocking where blocking work off the actors runs (virtual threads); a group's slots run on their own
 */
public record NodeServices(
        ControllableEngine engine,
        RolloutWorkflow trainWorkflow,
        RolloutWorkflow evalWorkflow,
        GroupOptions trainGroup,
        GroupOptions evalGroup,
        AcceptFilter accept,
        TrajectoryDumper dumper,
        TrajectoryFormatChecker formatChecker,
        StalenessPolicy stalenessPolicy,
        long maxHeadOffpolicyness,
        Duration episodeTimeout,
        HttpClient httpClient,
        ExecutorService blocking) {

    public NodeServices {
        Objects.requireNonNull(engine, "engine");
        Objects.requireNonNull(trainWorkflow, "trainWorkflow");
        Objects.requireNonNull(evalWorkflow, "evalWorkflow");
        Objects.requireNonNull(trainGroup, "trainGroup");
        Objects.requireNonNull(evalGroup, "evalGroup");
        Objects.requireNonNull(accept, "accept");
        Objects.requireNonNull(stalenessPolicy, "stalenessPolicy");
        Objects.requireNonNull(episodeTimeout, "episodeTimeout");
        Objects.requireNonNull(httpClient, "httpClient");
        Objects.requireNonNull(blocking, "blocking");
    }

    /** An executor that runs each task on a new virtual thread. */
    public static ExecutorService virtualThreads() {
        return Executors.newThreadPerTaskExecutor(
                Thread.ofVirtual().name("rollout-vt-", 0).factory());
    }
}
