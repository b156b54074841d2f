package org.rollout.inference;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import org.rollout.config.ServerAddress;

/**
 * A scripted stand-in for an SGLang or vLLM server on 127.0.0.1, over real HTTP (the JDK's
 * {@link HttpServer}), for tests.
 *
 * <p>Each path has a queue of scripted {@link Reply replies}, consumed one per request; when the
 * queue is empty the path's default answers (health: 200 while {@link #setHealthy healthy}, else
 * 503; control endpoints: {@code {"success": true}}; anything else: 500 "unscripted"). Every request
 * is recorded, in arrival order, before it is answered, and tests wait for requests with
 * {@link #awaitRequests} (a deadline, never a sleep). Handlers run on virtual threads, so a hanging
 * reply does not block other requests; {@link #close()} releases every hang.
 *
 * <p>The real model server can replace it in integration tests: the engine only needs an address.
 */
final class FakeInferenceServer implements AutoCloseable {
    static final ObjectMapper JSON = new ObjectMapper();

    /** One request as the server received it. */
    record Recorded(String method, String path, String body, JsonNode json) {
        /** {@code input_ids} (SGLang) or {@code prompt} (vLLM) as an int array. */
        int[] promptIds() {
            JsonNode ids = json.has("input_ids") ? json.get("input_ids") : json.get("prompt");
            int[] out = new int[ids.size()];
            for (int i = 0; i < out.length; i++) {
                out[i] = ids.get(i).intValue();
            }
            return out;
        }

        /** {@code sampling_params.max_new_tokens} (SGLang) or {@code max_tokens} (vLLM). */
        int maxNewTokens() {
            return json.has("sampling_params")
                    ? json.get("sampling_params").get("max_new_tokens").intValue()
                    : json.get("max_tokens").intValue();
        }

        String rid() {
            return json.get("rid").textValue();
        }
    }

    /** How the server answers one request. */
    @FunctionalInterface
    interface Reply {
        void send(HttpExchange exchange, Recorded request, FakeInferenceServer server)
                throws IOException, InterruptedException;
    }

    private final HttpServer http;
    private final ExecutorService executor = Executors.newVirtualThreadPerTaskExecutor();
    private final Map<String, Deque<Reply>> scripts = new ConcurrentHashMap<>();
    private final Map<String, Reply> defaults = new ConcurrentHashMap<>();
    private final List<Recorded> requests = new ArrayList<>();
    private final CountDownLatch closed = new CountDownLatch(1);
    private volatile boolean healthy = true;

    private FakeInferenceServer(HttpServer http) {
        this.http = http;
    }

    static FakeInferenceServer start() {
        try {
            HttpServer http = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 64);
            FakeInferenceServer server = new FakeInferenceServer(http);
            http.setExecutor(server.executor);
            http.createContext("/", server::handle);
            http.start();
            return server;
        } catch (IOException e) {
            throw new IllegalStateException("cannot start a fake server on 127.0.0.1", e);
        }
    }

    /** An address on 127.0.0.1 where nothing listens: connections are refused. */
    static ServerAddress unusedAddress() {
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            return new ServerAddress("127.0.0.1", s.getLocalPort());
        } catch (IOException e) {
            throw new IllegalStateException("cannot find a free port", e);
        }
    }

    ServerAddress address() {
        return new ServerAddress("127.0.0.1", http.getAddress().getPort());
    }

    /** Queues {@code replies} for {@code path}, answered in order after those already queued. */
    FakeInferenceServer on(String path, Reply... replies) {
        Deque<Reply> q = scripts.computeIfAbsent(path, p -> new ArrayDeque<>());
        synchronized (q) {
            q.addAll(List.of(replies));
        }
        return this;
    }

    /** Answers {@code path} with {@code reply} whenever its queue is empty. */
    FakeInferenceServer otherwise(String path, Reply reply) {
        defaults.put(path, reply);
        return this;
    }

    void setHealthy(boolean healthy) {
        this.healthy = healthy;
    }

    /** Every request so far, in arrival order. */
    List<Recorded> requests() {
        synchronized (requests) {
            return List.copyOf(requests);
        }
    }

    /** The requests to {@code path} so far. */
    List<Recorded> requests(String path) {
        return requests().stream().filter(r -> r.path().equals(path)).toList();
    }

    /** The paths requested so far, in order, without health probes. */
    List<String> controlPaths() {
        return requests().stream()
                .map(Recorded::path)
                .filter(p -> !p.equals("/health"))
                .toList();
    }

    /**
     * Waits until {@code path} has received at least {@code count} requests.
     *
     * @throws AssertionError naming what was received when the deadline passes
     */
    List<Recorded> awaitRequests(String path, int count, Duration timeout) throws InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        synchronized (requests) {
            while (true) {
                List<Recorded> matching =
                        requests.stream().filter(r -> r.path().equals(path)).toList();
                if (matching.size() >= count) {
                    return matching;
                }
                long remaining = deadline - System.nanoTime();
                if (remaining <= 0) {
                    throw new AssertionError("expected " + count + " request(s) to " + path + " on " + address()
                            + " within " + timeout + ", got " + matching.size() + "; all paths: "
                            + requests.stream().map(Recorded::path).toList());
                }
                TimeUnit.NANOSECONDS.timedWait(requests, remaining);
            }
        }
    }

    /** Stops listening (later connections are refused) and releases every hanging reply. */
    @Override
    public void close() {
        closed.countDown();
        http.stop(0);
        executor.shutdownNow();
    }

    private void handle(HttpExchange exchange) {
        try (exchange) {
            String body = new String(exchange.getRequestBody().readAllBytes(), StandardCharsets.UTF_8);
            JsonNode json = body.isBlank() ? JSON.createObjectNode() : JSON.readTree(body);
            String path = exchange.getRequestURI().getPath();
            Recorded recorded = new Recorded(exchange.getRequestMethod(), path, body, json);
            synchronized (requests) {
                requests.add(recorded);
                requests.notifyAll();
            }
            nextReply(path).send(exchange, recorded, this);
        } catch (IOException | InterruptedException e) {
            // The client went away (cancelled or timed out) or the fake is closing: nothing to answer.
        }
    }

    private Reply nextReply(String path) {
        Deque<Reply> q = scripts.get(path);
        if (q != null) {
            synchronized (q) {
                Reply r = q.poll();
                if (r != null) {
                    return r;
                }
            }
        }
        Reply d = defaults.get(path);
        if (d != null) {
            return d;
        }
        if (path.equals("/health")) {
            return (ex, req, s) -> send(ex, s.healthy ? 200 : 503, s.healthy ? "" : "{\"error\":\"unhealthy\"}");
        }
        if (path.equals("/generate") || path.equals("/v1/completions")) {
            return json(500, "{\"error\":\"unscripted request\"}");
        }
        return json(200, "{\"success\":true}");
    }

    // ---- replies ----

    static void send(HttpExchange ex, int status, String body) throws IOException {
        byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
        ex.getResponseHeaders().set("Content-Type", "application/json");
        ex.sendResponseHeaders(status, bytes.length == 0 ? -1 : bytes.length);
        if (bytes.length > 0) {
            try (OutputStream out = ex.getResponseBody()) {
                out.write(bytes);
            }
        }
    }

    static Reply json(int status, String body) {
        return (ex, req, s) -> send(ex, status, body);
    }

    /** Computes the reply from the request. */
    static Reply dynamic(Function<Recorded, Reply> f) {
        return (ex, req, s) -> f.apply(req).send(ex, req, s);
    }

    /** Runs {@code action} (e.g. a version bump), then answers with {@code reply}. */
    static Reply after(ThrowingRunnable action, Reply reply) {
        return (ex, req, s) -> {
            action.run();
            reply.send(ex, req, s);
        };
    }

    /** Waits until {@code release} opens (or the fake closes), then answers with {@code reply}. */
    static Reply when(CountDownLatch release, Reply reply) {
        return (ex, req, s) -> {
            while (!release.await(50, TimeUnit.MILLISECONDS)) {
                if (s.closed.getCount() == 0) {
                    return;
                }
            }
            reply.send(ex, req, s);
        };
    }

    /** Never answers (until the fake closes). */
    static Reply hang() {
        return (ex, req, s) -> s.closed.await();
    }

    /** An SGLang body of {@code count} tokens {@code first, first+1, …} ending with {@code finish}. */
    static Reply sglang(int first, int count, String finish) {
        return json(200, sglangBody(first, count, finish));
    }

    /** An SGLang body that serves exactly the requested max_new_tokens, from {@code first}, with {@code length}. */
    static Reply sglangFillBudget(int first) {
        return dynamic(req -> sglang(first, req.maxNewTokens(), "length"));
    }

    /** Like {@link #sglang}, with {@code meta_info.weight_version} reported as {@code weightVersion}. */
    static Reply sglangAtVersion(int first, int count, String finish, String weightVersion) {
        String body = sglangBody(first, count, finish);
        return json(200, body.substring(0, body.length() - 2) + ",\"weight_version\":\"" + weightVersion + "\"}}");
    }

    /** A vLLM body of {@code count} tokens {@code first, first+1, …} ending with {@code finish}. */
    static Reply vllm(int first, int count, String finish) {
        return json(200, vllmBody(first, count, finish));
    }

    /** The logprob the fake gives its i-th token: exactly representable as a float. */
    static float logprob(int i) {
        return -0.125f * (i % 8) - 0.0625f;
    }

    static String sglangBody(int first, int count, String finish) {
        StringBuilder ids = new StringBuilder();
        StringBuilder lps = new StringBuilder();
        for (int i = 0; i < count; i++) {
            if (i > 0) {
                ids.append(',');
                lps.append(',');
            }
            ids.append(first + i);
            lps.append('[').append(logprob(i)).append(',').append(first + i).append(",null]");
        }
        String reason = finish.equals("stop")
                ? "{\"type\":\"stop\",\"matched\":" + (first + count - 1) + "}"
                : finish.equals("length")
                        ? "{\"type\":\"length\",\"length\":" + count + "}"
                        : "{\"type\":\"" + finish + "\"}";
        return String.format(
                Locale.ROOT,
                "{\"text\":\"\",\"output_ids\":[%s],\"meta_info\":{\"id\":\"fake\",\"finish_reason\":%s,"
                        + "\"prompt_tokens\":1,\"completion_tokens\":%d,\"output_token_logprobs\":[%s]}}",
                ids,
                reason,
                count,
                lps);
    }

    static String vllmBody(int first, int count, String finish) {
        StringBuilder tokens = new StringBuilder();
        StringBuilder lps = new StringBuilder();
        for (int i = 0; i < count; i++) {
            if (i > 0) {
                tokens.append(',');
                lps.append(',');
            }
            tokens.append("\"token_id:").append(first + i).append('"');
            lps.append(logprob(i));
        }
        return "{\"id\":\"cmpl-fake\",\"object\":\"text_completion\",\"choices\":[{\"index\":0,\"text\":\"\","
                + "\"logprobs\":{\"tokens\":[" + tokens + "],\"token_logprobs\":[" + lps + "]},"
                + "\"finish_reason\":\"" + finish + "\"}],\"usage\":{\"completion_tokens\":" + count + "}}";
    }

    /** A runnable that may block or throw, for {@link #after}. */
    @FunctionalInterface
    interface ThrowingRunnable {
        void run() throws InterruptedException, IOException;
    }
}
