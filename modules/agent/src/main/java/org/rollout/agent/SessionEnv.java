package org.rollout.agent;

import java.net.URI;
import java.net.http.HttpClient;
import java.util.Objects;
import org.rollout.api.AgentEnv;
import org.rollout.api.WorkflowContext;

/** The {@link AgentEnv} of one proxy session. Immutable. */
record SessionEnv(URI baseUrl, String apiKey, HttpClient httpClient, WorkflowContext context) implements AgentEnv {
    SessionEnv {
        Objects.requireNonNull(baseUrl, "baseUrl");
        Objects.requireNonNull(apiKey, "apiKey");
        Objects.requireNonNull(httpClient, "httpClient");
        Objects.requireNonNull(context, "context");
    }
}
