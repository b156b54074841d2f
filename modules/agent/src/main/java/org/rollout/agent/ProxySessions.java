package org.rollout.agent;

import java.net.URI;
import java.util.ArrayList;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.rollout.api.Interaction;

/**
 * The proxy's open sessions by id, and the online sessions no client has claimed yet. A session
 * leaves both when it closes; {@link #closeAll} refuses new sessions and closes every open one.
 */
final class ProxySessions {
    private final String baseUrl;
    private final Map<String, ProxySession> sessions = new ConcurrentHashMap<>();
    private final LinkedBlockingQueue<ProxySession> waitingOnline = new LinkedBlockingQueue<>();
    private volatile boolean closing;

    /** @param baseUrl the proxy's {@code http://host:port}, under which session URLs are made */
    ProxySessions(String baseUrl) {
        this.baseUrl = baseUrl;
    }

    /**
     * Opens a session; a blank key gets a random one, a key in use a suffix {@code ~2}, {@code ~3}, …
     *
     * @param data the data an online session's claimant receives, or null for an agent's session
     * @throws IllegalStateException when the proxy is closing
     */
    ProxySession open(String episodeKey, Interaction.ChatTemplateType type, Map<String, Object> data) {
        if (closing) {
            throw new IllegalStateException("the OpenAI proxy at " + baseUrl + " is closing; no new sessions");
        }
        String base = episodeKey == null || episodeKey.isBlank() ? "episode-" + RandomIds.hex(8) : episodeKey;
        for (int n = 1; ; n++) {
            String id = n == 1 ? base : base + "~" + n;
            URI url = URI.create(baseUrl + "/s/" + id + "/v1");
            ProxySession s = new ProxySession(id, "sk-rollout-" + RandomIds.hex(16), url, type, data, this::forget);
            if (sessions.putIfAbsent(id, s) == null) {
                return s;
            }
        }
    }

    /** Opens a session that waits to be claimed ({@link #claim}) with {@code data}. */
    ProxySession openOnline(String episodeKey, Interaction.ChatTemplateType type, Map<String, Object> data) {
        ProxySession s = open(episodeKey, type, Objects.requireNonNull(data, "data"));
        waitingOnline.add(s);
        return s;
    }

    private void forget(ProxySession s) {
        sessions.remove(s.id(), s);
        waitingOnline.remove(s);
    }

    /** The open session {@code id}, or null. */
    ProxySession get(String id) {
        return sessions.get(id);
    }

    int size() {
        return sessions.size();
    }

    boolean isClosing() {
        return closing;
    }

    /**
     * The next online session no one has claimed, waiting up to {@code nanos}; null when none came.
     * The caller skips one that closed meanwhile.
     */
    ProxySession claim(long nanos) throws InterruptedException {
        return waitingOnline.poll(nanos, TimeUnit.NANOSECONDS);
    }

    /** No new sessions; every open one is closed (its generations aborted). */
    void closeAll() {
        closing = true;
        for (ProxySession s : new ArrayList<>(sessions.values())) {
            s.close();
        }
    }
}
