package org.rollout.agent;

import java.net.URI;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Consumer;
import org.rollout.api.Interaction;

/**
 * One episode's session on the {@link OpenAIProxy}: its base URL and API key, and the completions
 * recorded under it. Opened by the episode wrapper ({@link OpenAIProxy#openSession}), closed by it
 * when the episode ends.
 *
 * <pre>
 *   open ──► completions recorded (each with its parent) ──► close ──► interactions() read
 *              │ online sessions: a reward posted to /s/{id}/v1/reward completes {@link #awaitReward}
 *              └ close() interrupts completions still generating; later requests get 404
 * </pre>
 *
 * <p>Parents (AReaL's rule, used by {@code concat} export): a new completion's parent is the most
 * recent recorded completion whose request messages followed by its answer are a prefix of the new
 * request's messages, preferring the longest such prefix. Messages are compared by {@link
 * MessageEquivalence} rather than byte-equal JSON, so an SDK that re-serialises the assistant
 * message with extra null fields or a JSON string of the same arguments still links.
 *
 * <p>Thread-safe: requests of one session may run concurrently; recording order is completion
 * order.
 */
public final class ProxySession implements AutoCloseable {
    private final String id;
    private final String apiKey;
    private final URI baseUrl;
    private final Interaction.ChatTemplateType chatTemplateType;
    private final Map<String, Object> onlineData;
    private final Consumer<ProxySession> onClose;
    private final List<Interaction> recorded = new ArrayList<>();
    private final Map<String, List<Map<String, Object>>> conversations = new HashMap<>();
    private final Map<String, Map<String, Object>> outputItems = new HashMap<>();
    private final Set<Thread> generating = new HashSet<>();
    private final CompletableFuture<Object> reward = new CompletableFuture<>();
    private boolean closed;

    ProxySession(
            String id,
            String apiKey,
            URI baseUrl,
            Interaction.ChatTemplateType chatTemplateType,
            Map<String, Object> onlineData,
            Consumer<ProxySession> onClose) {
        this.id = Objects.requireNonNull(id, "id");
        this.apiKey = Objects.requireNonNull(apiKey, "apiKey");
        this.baseUrl = Objects.requireNonNull(baseUrl, "baseUrl");
        this.chatTemplateType = Objects.requireNonNull(chatTemplateType, "chatTemplateType");
        this.onlineData = onlineData;
        this.onClose = onClose;
    }

    /** The session id: the episode key {@code {task_id}:{sample_idx}}, plus {@code ~N} if that was taken. */
    public String id() {
        return id;
    }

    /** The key clients send as {@code Authorization: Bearer …}. */
    public String apiKey() {
        return apiKey;
    }

    /** {@code http://host:port/s/{id}/v1}: the OpenAI base URL of this session. */
    public URI baseUrl() {
        return baseUrl;
    }

    /** {@code CONCAT} when the episode exports in concat style: prompts then extend their parents' tokens. */
    public Interaction.ChatTemplateType chatTemplateType() {
        return chatTemplateType;
    }

    /** True for a session opened for an external (online-mode) client. */
    public boolean isOnline() {
        return onlineData != null;
    }

    /** The data item an online client receives when it claims this session, or null. */
    Map<String, Object> onlineData() {
        return onlineData;
    }

    /** The completions recorded so far, in recording order. */
    public synchronized List<Interaction> interactions() {
        return List.copyOf(recorded);
    }

    public synchronized boolean isClosed() {
        return closed;
    }

    /**
     * Waits for the reward an online client posts.
     *
     * @return the posted reward: a {@code Double} or a {@code Map<String, Object>} of numbers
     * @throws TimeoutException when none arrives in time
     * @throws EpisodeRejectedException when the session is closed first (the proxy is closing)
     * @throws InterruptedException when interrupted
     */
    public Object awaitReward(Duration timeout)
            throws TimeoutException, EpisodeRejectedException, InterruptedException {
        try {
            return reward.get(timeout.toNanos(), TimeUnit.NANOSECONDS);
        } catch (ExecutionException e) {
            throw new EpisodeRejectedException("online session " + id + " was closed before its reward arrived");
        }
    }

    /** Stores an online client's reward; false when one was already stored. */
    boolean postReward(Object value) {
        return reward.complete(value);
    }

    /** Keeps a Responses API answer's conversation (chat messages), for {@code previous_response_id}. */
    synchronized void rememberConversation(String responseId, List<Map<String, Object>> conversation) {
        conversations.put(responseId, List.copyOf(conversation));
    }

    /** Keeps a Responses API answer's output items by their ids, for {@code item_reference} input items. */
    synchronized void rememberOutputItems(List<Map<String, Object>> items) {
        for (Map<String, Object> item : items) {
            outputItems.put((String) item.get("id"), item);
        }
    }

    /** The output item of that id of an answered response, or null when this session did not answer it. */
    synchronized Map<String, Object> outputItem(String itemId) {
        return outputItems.get(itemId);
    }

    /** The conversation of an answered response, or null when this session did not answer it. */
    synchronized List<Map<String, Object>> conversation(String responseId) {
        return conversations.get(responseId);
    }

    /** The parent of a request with {@code messages} by the rule above, or null. */
    synchronized Interaction findParent(List<Map<String, Object>> messages) {
        Interaction best = null;
        int bestLength = -1;
        for (Interaction it : recorded) {
            int length = it.messages().size() + it.outputMessages().size();
            if (length >= bestLength && length <= messages.size() && continues(messages, it)) {
                best = it;
                bestLength = length;
            }
        }
        return best;
    }

    private static boolean continues(List<Map<String, Object>> messages, Interaction candidate) {
        List<Map<String, Object>> prefix = new ArrayList<>(candidate.messages());
        prefix.addAll(candidate.outputMessages());
        if (prefix.isEmpty()) {
            return false;
        }
        for (int i = 0; i < prefix.size(); i++) {
            if (!MessageEquivalence.same(prefix.get(i), messages.get(i))) {
                return false;
            }
        }
        return true;
    }

    /**
     * Marks the calling thread as generating for this session, so that {@link #close()} interrupts it.
     *
     * @return false when the session is already closed
     */
    synchronized boolean beginGenerating() {
        if (closed) {
            return false;
        }
        generating.add(Thread.currentThread());
        return true;
    }

    synchronized void endGenerating() {
        generating.remove(Thread.currentThread());
    }

    /**
     * Records a finished completion.
     *
     * @return false when the session closed meanwhile (the completion is dropped)
     */
    synchronized boolean record(Interaction it) {
        if (closed) {
            return false;
        }
        recorded.add(it);
        return true;
    }

    /**
     * Closes the session: later requests get 404, completions still generating are interrupted
     * (their generation aborted) and not recorded, and an online wait ends. Idempotent.
     */
    @Override
    public void close() {
        synchronized (this) {
            if (closed) {
                return;
            }
            closed = true;
            // An online episode still waiting learns that no reward can come any more.
            reward.completeExceptionally(new IllegalStateException("session " + id + " closed"));
            for (Thread t : generating) {
                t.interrupt();
            }
        }
        if (onClose != null) {
            onClose.accept(this);
        }
    }

    @Override
    public synchronized String toString() {
        return "ProxySession{" + id + ", " + recorded.size() + " completions" + (closed ? ", closed" : "")
                + (isOnline() ? ", online" : "") + "}";
    }
}
