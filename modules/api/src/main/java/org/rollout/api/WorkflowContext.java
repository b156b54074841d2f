package org.rollout.api;

import java.net.http.HttpClient;
import java.time.Duration;
import java.util.Objects;
import java.util.OptionalInt;
import java.util.OptionalLong;
import java.util.concurrent.Callable;

/**
 * Who a workflow call is working for (semantics §4): evaluation or training, which task, which slot of how
 * large a group, which dispatch attempt; plus the group-scoped cache, a shared HTTP client for
 * tools and reward services, and where to record statistics.
 *
 * <p>Inside {@link RolloutWorkflow#runEpisode} call {@link #current()}. The engine binds a context
 * to each slot's thread before the call and unbinds it after; threads the workflow starts itself
 * inherit it. Outside any task {@code current()} returns an empty context (not eval, no task id,
 * group size 1).
 *
 * <pre>
 *   var ctx = WorkflowContext.current();
 *   var gc = ctx.isEval() ? evalConfig : trainConfig;
 *   ctx.stats().scalar("reward", reward);               // under "rollout" or "eval-rollout"
 *   var tests = ctx.groupCache().computeIfAbsent("tests", () -> parse(data));
 * </pre>
 *
 * <p>Immutable and thread-safe.
 */
public final class WorkflowContext {
    /** Statistics scope of training rollouts. */
    public static final String ROLLOUT_SCOPE = "rollout";
    /** Statistics scope (and dump directory) of evaluation rollouts. */
    public static final String EVAL_ROLLOUT_SCOPE = "eval-rollout";

    private static final InheritableThreadLocal<WorkflowContext> CURRENT = new InheritableThreadLocal<>();
    private static final WorkflowContext EMPTY = new Builder().build();

    private final boolean isEval;
    private final long taskId;
    private final int sampleIdx;
    private final int groupSize;
    private final int attempt;
    private final GroupCache groupCache;
    private final HttpClient httpClient;
    private final StatsRecorder stats;

    private WorkflowContext(Builder b) {
        if (b.groupSize < 1) {
            throw new IllegalArgumentException("group_size must be >= 1, got " + b.groupSize);
        }
        if (b.sampleIdx >= b.groupSize) {
            throw new IllegalArgumentException(
                    "sample_idx " + b.sampleIdx + " out of range for group_size " + b.groupSize);
        }
        if (b.attempt < 0) {
            throw new IllegalArgumentException("attempt must be >= 0, got " + b.attempt);
        }
        this.isEval = b.isEval;
        this.taskId = b.taskId;
        this.sampleIdx = b.sampleIdx;
        this.groupSize = b.groupSize;
        this.attempt = b.attempt;
        this.groupCache = b.groupCache;
        this.httpClient = b.httpClient;
        this.stats = b.stats == null ? StatsRecorder.none() : b.stats;
    }

    /** The context bound to this thread, or the empty context. */
    public static WorkflowContext current() {
        WorkflowContext c = CURRENT.get();
        return c == null ? EMPTY : c;
    }

    /** The empty context: not eval, no task, group size 1. */
    public static WorkflowContext empty() {
        return EMPTY;
    }

    /** Runs {@code body} with {@code context} bound to the calling thread, then restores the previous one. */
    public static <T> T callWith(WorkflowContext context, Callable<T> body) throws Exception {
        Objects.requireNonNull(context, "context");
        WorkflowContext previous = CURRENT.get();
        CURRENT.set(context);
        try {
            return body.call();
        } finally {
            if (previous == null) {
                CURRENT.remove();
            } else {
                CURRENT.set(previous);
            }
        }
    }

    public static Builder builder() {
        return new Builder();
    }

    /** True for evaluation rollouts (no staleness bound, {@code eval-rollout} scope and dumps). */
    public boolean isEval() {
        return isEval;
    }

    /** The task (prompt group) id, absent outside a task. */
    public OptionalLong taskId() {
        return taskId < 0 ? OptionalLong.empty() : OptionalLong.of(taskId);
    }

    /** This slot's index in its group, {@code 0 .. groupSize-1}; absent outside a group. */
    public OptionalInt sampleIdx() {
        return sampleIdx < 0 ? OptionalInt.empty() : OptionalInt.of(sampleIdx);
    }

    /** The number of slots in this group (1 outside a group). */
    public int groupSize() {
        return groupSize;
    }

    /** The dispatch attempt: 0 first, + 1 each time the task is re-dispatched after a lost node. */
    public int attempt() {
        return attempt;
    }

    /** {@code "eval-rollout"} when evaluating, else {@code "rollout"}. */
    public String statScope() {
        return isEval ? EVAL_ROLLOUT_SCOPE : ROLLOUT_SCOPE;
    }

    /**
     * {@code "{task_id}:{sample_idx}"}, or {@code "{task_id}"} without a slot: the key of this
     * episode's proxy session. Empty outside a task.
     */
    public String episodeKey() {
        if (taskId < 0) {
            return "";
        }
        return sampleIdx < 0 ? Long.toString(taskId) : taskId + ":" + sampleIdx;
    }

    /**
     * The cache shared by this group's slots, released when the group ends.
     *
     * @throws IllegalStateException outside a group
     */
    public GroupCache groupCache() {
        if (groupCache == null) {
            throw new IllegalStateException("no group cache: this code is not running inside a rollout group");
        }
        return groupCache;
    }

    /** A pooled HTTP client shared by the node's workflows; never close it. */
    public HttpClient httpClient() {
        return httpClient != null ? httpClient : SharedClient.INSTANCE;
    }

    /** Where to record statistics under {@link #statScope()}. */
    public StatsRecorder stats() {
        return stats;
    }

    @Override
    public String toString() {
        return "WorkflowContext{is_eval=" + isEval + ", task_id=" + (taskId < 0 ? "none" : taskId) + ", sample_idx="
                + (sampleIdx < 0 ? "none" : sampleIdx) + ", group_size=" + groupSize + ", attempt=" + attempt + "}";
    }

    /** The JVM-wide default client, created on first use. */
    private static final class SharedClient {
        static final HttpClient INSTANCE = HttpClient.newBuilder()
                .connectTimeout(Duration.ofSeconds(30))
                .version(HttpClient.Version.HTTP_1_1)
                .build();
    }

    /** Builds a context; the engine does this for every slot. */
    public static final class Builder {
        private boolean isEval;
        private long taskId = -1;
        private int sampleIdx = -1;
        private int groupSize = 1;
        private int attempt;
        private GroupCache groupCache;
        private HttpClient httpClient;
        private StatsRecorder stats;

        private Builder() {}

        public Builder isEval(boolean v) {
            isEval = v;
            return this;
        }

        public Builder taskId(long v) {
            if (v < 0) {
                throw new IllegalArgumentException("task_id must be >= 0, got " + v);
            }
            taskId = v;
            return this;
        }

        public Builder sampleIdx(int v) {
            if (v < 0) {
                throw new IllegalArgumentException("sample_idx must be >= 0, got " + v);
            }
            sampleIdx = v;
            return this;
        }

        public Builder groupSize(int v) {
            groupSize = v;
            return this;
        }

        public Builder attempt(int v) {
            attempt = v;
            return this;
        }

        public Builder groupCache(GroupCache v) {
            groupCache = v;
            return this;
        }

        public Builder httpClient(HttpClient v) {
            httpClient = v;
            return this;
        }

        public Builder stats(StatsRecorder v) {
            stats = v;
            return this;
        }

        public WorkflowContext build() {
            return new WorkflowContext(this);
        }
    }
}
