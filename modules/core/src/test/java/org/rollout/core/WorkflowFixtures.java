package org.rollout.core;

import java.util.Map;
import org.rollout.api.AcceptFilter;
import org.rollout.api.AgentEnv;
import org.rollout.api.AgentWorkflow;
import org.rollout.api.EpisodeResult;
import org.rollout.api.InferenceEngine;
import org.rollout.api.RolloutWorkflow;
import org.rollout.api.TensorDict;

/** Workflow classes for {@link WorkflowResolverTest}, reachable by name as "org.rollout.core.WorkflowFixtures$X". */
public final class WorkflowFixtures {
    private WorkflowFixtures() {}

    /** Takes its kwargs through the Map constructor. */
    public static final class MapWorkflow implements RolloutWorkflow {
        public final Map<String, Object> kwargs;

        public MapWorkflow(Map<String, Object> kwargs) {
            this.kwargs = kwargs;
        }

        @Override
        public EpisodeResult runEpisode(InferenceEngine engine, Map<String, Object> data) {
            return EpisodeResult.rejected("map workflow");
        }
    }

    /** Only a no-arg constructor. */
    public static final class NoArgWorkflow implements RolloutWorkflow {
        @Override
        public EpisodeResult runEpisode(InferenceEngine engine, Map<String, Object> data) {
            return EpisodeResult.rejected("no-arg workflow");
        }
    }

    /** Its constructor fails. */
    public static final class ThrowingWorkflow implements RolloutWorkflow {
        public ThrowingWorkflow(Map<String, Object> kwargs) {
            throw new IllegalStateException("reward_fn is not configured");
        }

        @Override
        public EpisodeResult runEpisode(InferenceEngine engine, Map<String, Object> data) {
            return EpisodeResult.rejected("unreachable");
        }
    }

    /** No public constructor at all. */
    public static final class HiddenWorkflow implements RolloutWorkflow {
        private HiddenWorkflow() {}

        @Override
        public EpisodeResult runEpisode(InferenceEngine engine, Map<String, Object> data) {
            return EpisodeResult.rejected("unreachable");
        }
    }

    public abstract static class AbstractWorkflow implements RolloutWorkflow {}

    /** Both contracts; the RolloutWorkflow rules win. */
    public static final class BothWorkflow implements RolloutWorkflow, AgentWorkflow {
        @Override
        public EpisodeResult runEpisode(InferenceEngine engine, Map<String, Object> data) {
            return EpisodeResult.rejected("both");
        }

        @Override
        public Object run(Map<String, Object> data, AgentEnv env) {
            return 1.0;
        }
    }

    public static final class EchoAgent implements AgentWorkflow {
        @Override
        public Object run(Map<String, Object> data, AgentEnv env) {
            return 1.0;
        }
    }

    public static final class MapAgent implements AgentWorkflow {
        public final Map<String, Object> kwargs;

        public MapAgent(Map<String, Object> kwargs) {
            this.kwargs = kwargs;
        }

        @Override
        public Object run(Map<String, Object> data, AgentEnv env) {
            return 0.0;
        }
    }

    public static final class NotAWorkflow {}

    public static final class KeepAll implements AcceptFilter {
        @Override
        public boolean accept(TensorDict group) {
            return true;
        }
    }

    public static final class FilterNeedingArgs implements AcceptFilter {
        public FilterNeedingArgs(int threshold) {}

        @Override
        public boolean accept(TensorDict group) {
            return false;
        }
    }

    public static final class FailingStaticInit implements RolloutWorkflow {
        static {
            if (Boolean.parseBoolean("true")) {
                throw new IllegalStateException("static setup failed");
            }
        }

        @Override
        public EpisodeResult runEpisode(InferenceEngine engine, Map<String, Object> data) {
            return EpisodeResult.rejected("unreachable");
        }
    }

    /** Static fields, as Python module attributes. */
    public static final class Holder {
        public static final RolloutWorkflow INSTANCE = (engine, data) -> EpisodeResult.rejected("holder");
        public static final AgentWorkflow AGENT = (data, env) -> 0.5;
        public static final Class<?> WORKFLOW_CLASS = NoArgWorkflow.class;
        public static final String NOT_A_WORKFLOW = "text";
        public static final RolloutWorkflow UNSET = null;
        public static final AcceptFilter NON_EMPTY = group -> !group.isEmpty();
        public final RolloutWorkflow perInstance = INSTANCE;
    }
}
