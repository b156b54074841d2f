package org.rollout.modelserver;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

/** A blocking and async JSON client for one model server, with bounded waits. */
final class ServerClient {
    static final ObjectMapper JSON = new ObjectMapper();
    static final Duration TIMEOUT = Duration.ofSeconds(30);

    private final String baseUrl;
    private final HttpClient http;

    ServerClient(ModelServer server) {
        this(server.baseUrl());
    }

    ServerClient(String baseUrl) {
        this.baseUrl = baseUrl;
        this.http = HttpClient.newBuilder()
                .version(HttpClient.Version.HTTP_1_1)
                .connectTimeout(TIMEOUT)
                .build();
    }

    /** A response: status, raw body and its JSON (null when the body is not JSON). */
    record Reply(int status, String body, JsonNode json) {}

    Reply post(String path, String body) {
        return join(postAsync(path, body));
    }

    Reply get(String path) {
        HttpRequest req = HttpRequest.newBuilder(URI.create(baseUrl + path))
                .timeout(TIMEOUT)
                .GET()
                .build();
        return join(http.sendAsync(req, HttpResponse.BodyHandlers.ofString()).thenApply(ServerClient::reply));
    }

    CompletableFuture<Reply> postAsync(String path, String body) {
        HttpRequest req = HttpRequest.newBuilder(URI.create(baseUrl + path))
                .timeout(TIMEOUT)
                .header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(body))
                .build();
        return http.sendAsync(req, HttpResponse.BodyHandlers.ofString()).thenApply(ServerClient::reply);
    }

    static Reply reply(HttpResponse<String> r) {
        JsonNode json;
        try {
            json = r.body().isEmpty() ? null : JSON.readTree(r.body());
        } catch (IOException e) {
            json = null;
        }
        return new Reply(r.statusCode(), r.body(), json);
    }

    static <T> T join(CompletableFuture<T> f) {
        try {
            return f.get(TIMEOUT.toSeconds(), TimeUnit.SECONDS);
        } catch (Exception e) {
            throw new AssertionError("request did not complete within " + TIMEOUT + ": " + e, e);
        }
    }

    /** Waits until {@code condition} holds, failing after {@code TIMEOUT} with {@code what}. */
    static void await(String what, BooleanSupplier condition) {
        long deadline = System.nanoTime() + TIMEOUT.toNanos();
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("timed out after " + TIMEOUT + " waiting for " + what);
            }
            Thread.onSpinWait();
            java.util.concurrent.locks.LockSupport.parkNanos(1_000_000);
        }
    }

    /** A /generate body. */
    static String generate(String rid, int[] inputIds, String samplingParams) {
        StringBuilder ids = new StringBuilder();
        for (int i = 0; i < inputIds.length; i++) {
            ids.append(i == 0 ? "" : ",").append(inputIds[i]);
        }
        return "{" + (rid == null ? "" : "\"rid\":\"" + rid + "\",") + "\"input_ids\":[" + ids
                + "],\"sampling_params\":{" + samplingParams + "},\"return_logprob\":true,\"stream\":false}";
    }
}
