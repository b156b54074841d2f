package org.rollout.api;

import java.net.URI;
import java.net.http.HttpClient;

/**
 * What an {@link AgentWorkflow} gets to talk to the model: an OpenAI-compatible base URL that
 * identifies its episode, an API key for it, and a pooled HTTP client.
 *
 * <p>Every completion requested under {@link #baseUrl()} is recorded token by token, with logprobs
 * and weight versions, and becomes a training row of this episode.
 */
public interface AgentEnv {

    /** The episode's OpenAI-compatible base URL, e.g. {@code http://127.0.0.1:8123/s/42:3/v1}. */
    URI baseUrl();

    /** The key to send as {@code Authorization: Bearer …}. */
    String apiKey();

    /** A pooled client to use for the calls (or use any OpenAI SDK with {@link #baseUrl()}). */
    HttpClient httpClient();

    /** The episode's context. */
    WorkflowContext context();
}
