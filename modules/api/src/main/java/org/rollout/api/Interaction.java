package org.rollout.api;

import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * One model completion inside an agent episode, with its token-level data and reward: AReaL's
 * {@code InteractionWithTokenLogpReward} (semantics §3.4).
 *
 * <p>An interaction has tensor data when it carries a {@link ModelResponse} (the proxy records one
 * for every completion) or precomputed {@link #tensorData()}. It converts to one trajectory row:
 * prompt positions get loss mask 0, logprob 0, version −1 and turn id −1; generated positions get
 * mask 1, their logprob, their version and turn id 0. With {@link ChatTemplateType#CONCAT} and a
 * {@link #parent()}, the parent's row is prefixed and this turn's id is the parent's last + 1.
 *
 * <p>Rewards: {@code reward} is this row's (possibly discounted) reward; {@code originalReward} is
 * the raw value kept when rollout-time normalisation rewrites {@code reward}; {@code rolloutReward}
 * is the logical rollout's reference reward when rows of one episode differ (semantics §5.6).
 *
 * <p>Immutable; {@code with*} methods return copies.
 */
public final class Interaction {

    /** How a child interaction relates to its parent's tokens (semantics §3.4 {@code chat_template_type}). */
    public enum ChatTemplateType {
        /** Each completion is its own row. */
        HF,
        /** A child's row is prefixed with its parent's, so a conversation becomes one row. */
        CONCAT
    }

    private final String id;
    private final ModelResponse modelResponse;
    private final Double reward;
    private final Double originalReward;
    private final Double rolloutReward;
    private final Interaction parent;
    private final ChatTemplateType chatTemplateType;
    private final List<Map<String, Object>> messages;
    private final List<Map<String, Object>> outputMessages;
    private final TensorDict tensorData;

    private Interaction(Builder b) {
        this.id = Objects.requireNonNull(b.id, "interaction id");
        if (id.isEmpty()) {
            throw new IllegalArgumentException("interaction id must not be empty");
        }
        this.modelResponse = b.modelResponse;
        this.reward = b.reward;
        this.originalReward = b.originalReward;
        this.rolloutReward = b.rolloutReward;
        this.parent = b.parent;
        this.chatTemplateType = Objects.requireNonNull(b.chatTemplateType, "chat_template_type");
        this.messages = List.copyOf(b.messages);
        this.outputMessages = b.outputMessages == null ? List.of() : List.copyOf(b.outputMessages);
        this.tensorData = b.tensorData;
    }

    /** A builder for an interaction with the given completion id. */
    public static Builder builder(String id) {
        return new Builder(id);
    }

    public Builder toBuilder() {
        Builder b = new Builder(id);
        b.modelResponse = modelResponse;
        b.reward = reward;
        b.originalReward = originalReward;
        b.rolloutReward = rolloutReward;
        b.parent = parent;
        b.chatTemplateType = chatTemplateType;
        b.messages = messages;
        b.outputMessages = outputMessages;
        b.tensorData = tensorData;
        return b;
    }

    /** The completion id (or response id) that keys this interaction in its episode. */
    public String id() {
        return id;
    }

    /** Token-level data, or null in external-API mode. */
    public ModelResponse modelResponse() {
        return modelResponse;
    }

    /** The row reward, or null when not yet assigned. */
    public Double reward() {
        return reward;
    }

    /** The reward before rollout-time normalisation, or null when it was never normalised. */
    public Double originalReward() {
        return originalReward;
    }

    /** The logical rollout's reference reward (semantics §5.6), or null. */
    public Double rolloutReward() {
        return rolloutReward;
    }

    /** The conversation-tree parent, or null. */
    public Interaction parent() {
        return parent;
    }

    public ChatTemplateType chatTemplateType() {
        return chatTemplateType;
    }

    /** The request messages (OpenAI chat format), immutable. */
    public List<Map<String, Object>> messages() {
        return messages;
    }

    /** The output messages, immutable (empty when none). */
    public List<Map<String, Object>> outputMessages() {
        return outputMessages;
    }

    /** Precomputed tensor data (AReaL's {@code _cache}), or null. */
    public TensorDict tensorData() {
        return tensorData;
    }

    /** True when this interaction can become a trajectory row. */
    public boolean hasTensorData() {
        return modelResponse != null || tensorData != null;
    }

    public Interaction withReward(Double r) {
        return toBuilder().reward(r).build();
    }

    public Interaction withRewards(Double r, Double original) {
        return toBuilder().reward(r).originalReward(original).build();
    }

    public Interaction withRolloutReward(Double r) {
        return toBuilder().rolloutReward(r).build();
    }

    public Interaction withTensorData(TensorDict d) {
        return toBuilder().tensorData(d).build();
    }

    @Override
    public String toString() {
        return "Interaction{id=" + id + ", reward=" + reward
                + (originalReward != null ? ", original=" + originalReward : "")
                + (modelResponse != null ? ", " + modelResponse : "") + (parent != null ? ", parent=" + parent.id : "")
                + "}";
    }

    /** Builds an {@link Interaction}. */
    public static final class Builder {
        private final String id;
        private ModelResponse modelResponse;
        private Double reward;
        private Double originalReward;
        private Double rolloutReward;
        private Interaction parent;
        private ChatTemplateType chatTemplateType = ChatTemplateType.HF;
        private List<Map<String, Object>> messages = List.of();
        private List<Map<String, Object>> outputMessages = List.of();
        private TensorDict tensorData;

        private Builder(String id) {
            this.id = id;
        }

        public Builder modelResponse(ModelResponse v) {
            modelResponse = v;
            return this;
        }

        public Builder reward(Double v) {
            reward = v;
            return this;
        }

        public Builder originalReward(Double v) {
            originalReward = v;
            return this;
        }

        public Builder rolloutReward(Double v) {
            rolloutReward = v;
            return this;
        }

        public Builder parent(Interaction v) {
            parent = v;
            return this;
        }

        public Builder chatTemplateType(ChatTemplateType v) {
            chatTemplateType = v;
            return this;
        }

        public Builder messages(List<Map<String, Object>> v) {
            messages = Objects.requireNonNull(v, "messages");
            return this;
        }

        public Builder outputMessages(List<Map<String, Object>> v) {
            outputMessages = v;
            return this;
        }

        public Builder tensorData(TensorDict v) {
            tensorData = v;
            return this;
        }

        public Interaction build() {
            return new Interaction(this);
        }
    }
}
