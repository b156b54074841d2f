package org.rollout.trainer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.net.URI;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.rollout.api.Float32Tensor;
import org.rollout.api.TensorDict;
import org.rollout.api.TrainingBatch;
import org.rollout.api.TrainingGroup;
import org.rollout.trainer.wire.BatchWireFormat;
import org.rollout.trainer.wire.GatewayJson;

/** The HTTP client against scripted gateways on 127.0.0.1: fail-over, retries, errors, stalls, interruption. */
class HttpRolloutClientTest {
    private static final RolloutStatus STATUS = new RolloutStatus(2, 1, 8, 0, 3, 4, 1, 0, 99, Map.of(), Map.of());
    private static final Duration DEADLINE = Duration.ofSeconds(20);

    private final java.util.List<AutoCloseable> toClose = new java.util.ArrayList<>();

    @AfterEach
    void closeAll() throws Exception {
        for (AutoCloseable c : toClose) {
            c.close();
        }
    }

    private StubGateway stub(StubGateway.Script script) throws IOException {
        StubGateway s = new StubGateway(script);
        toClose.add(s);
        return s;
    }

    private RolloutClient client(ClientConfig config) {
        RolloutClient c = RolloutClient.connect(config);
        toClose.add(c);
        return c;
    }

    private static ClientConfig fast(URI... contacts) {
        return ClientConfig.of(List.of(contacts))
                .withRetry(Duration.ofMillis(20), Duration.ofMillis(100), Duration.ofSeconds(10));
    }

    private static void status(com.sun.net.httpserver.HttpExchange ex, int n) throws IOException {
        StubGateway.json(ex, 200, GatewayJson.status(STATUS));
    }

    private static TrainingBatch batch(long id) {
        TensorDict rows = TensorDict.builder()
                .put(TensorDict.REWARDS, Float32Tensor.vector(0.5f, 1f))
                .build();
        return new TrainingBatch(
                id, List.of(new TrainingGroup(4, 0, rows, new int[] {0, 1}, new int[] {1, 1}, 1, 1, 1, 1)), 1);
    }

    @Test
    void failsOverToTheNextContactPointAndKeepsUsingIt() throws Exception {
        URI dead = StubGateway.closedPort();
        StubGateway live = stub(HttpRolloutClientTest::status);
        RolloutClient c = client(fast(dead, live.uri()));
        assertThat(c.status()).isEqualTo(STATUS);
        assertThat(c.status()).isEqualTo(STATUS);
        assertThat(live.seen).hasSize(2);
    }

    @Test
    void namesEveryContactPointAndItsLastErrorWhenNoneAnswers() throws Exception {
        URI a = StubGateway.closedPort();
        StubGateway unavailable =
                stub((ex, n) -> StubGateway.error(ex, 503, "unavailable", "the gateway is shutting down"));
        RolloutClient c = client(ClientConfig.of(List.of(a, unavailable.uri()))
                .withRetry(Duration.ofMillis(20), Duration.ofMillis(50), Duration.ofMillis(300)));
        assertThatThrownBy(c::status)
                .isInstanceOfSatisfying(
                        EngineUnreachableException.class,
                        e -> assertThat(e.lastErrors())
                                .containsOnlyKeys(a, unavailable.uri())
                                .containsEntry(unavailable.uri(), "HTTP 503 unavailable: the gateway is shutting down"))
                .hasMessageStartingWith("could not read status: no trainer gateway answered after retrying for ")
                .hasMessageContaining("ms (retry_deadline); " + a + " → connection refused;")
                .hasMessageEndingWith(
                        "; " + unavailable.uri() + " → HTTP 503 unavailable: the gateway is shutting down");
        assertThat(unavailable.seen).hasSizeGreaterThan(1);
    }

    @Test
    void retriesAGatewayThatAnswers503UntilItRecovers() throws Exception {
        StubGateway g = stub((ex, n) -> {
            if (n <= 2) {
                StubGateway.error(ex, 503, "unavailable", "starting");
            } else {
                status(ex, n);
            }
        });
        assertThat(client(fast(g.uri())).status()).isEqualTo(STATUS);
        assertThat(g.seen).hasSize(3);
    }

    @Test
    void sendsTheBearerTokenOnEveryRequest() throws Exception {
        StubGateway g = stub(HttpRolloutClientTest::status);
        client(fast(g.uri()).withToken("t0ken")).status();
        assertThat(g.seen).extracting(StubGateway.Seen::authorization).containsExactly("Bearer t0ken");
    }

    @Test
    void anUnauthorizedAnswerIsAGatewayRequestExceptionWithTheGatewaysMessage() throws Exception {
        StubGateway g = stub((ex, n) -> StubGateway.error(ex, 401, "unauthorized", "bearer token does not match"));
        assertThatThrownBy(() -> client(fast(g.uri())).status())
                .isInstanceOfSatisfying(GatewayRequestException.class, e -> {
                    assertThat(e.status()).isEqualTo(401);
                    assertThat(e.code()).isEqualTo("unauthorized");
                    assertThat(e.gateway()).isEqualTo(g.uri());
                })
                .hasMessage("could not read status: the trainer gateway at " + g.uri()
                        + " answered HTTP 401 unauthorized: bearer token does not match");
        assertThat(g.seen).hasSize(1);
    }

    @Test
    void aRefusedPublishIsAWeightPublishExceptionWithTheEnginesReason() throws Exception {
        String reason = "version 1 is not newer than the current version 3; a publish must increase the version";
        StubGateway g = stub((ex, n) -> StubGateway.error(ex, 409, "version_refused", reason));
        assertThatThrownBy(() -> client(fast(g.uri())).publishWeights(1, Path.of("/w/v1.rlm")))
                .isInstanceOfSatisfying(
                        WeightPublishException.class,
                        e -> assertThat(e.kind()).isEqualTo(WeightPublishException.Kind.REFUSED))
                .hasMessage(reason);
        assertThat(g.seen).extracting(StubGateway.Seen::pathAndQuery).containsExactly("/v1/weights");
    }

    @Test
    void weightsNoServerLoadedAreAWeightPublishExceptionOfKindNotLoaded() throws Exception {
        String reason = "no server loaded /w/v4.rlm as version 4: {127.0.0.1:30000=HTTP 500}";
        StubGateway g = stub((ex, n) -> StubGateway.error(ex, 502, "weights_not_loaded", reason));
        assertThatThrownBy(() -> client(fast(g.uri())).publishWeights(4, Path.of("/w/v4.rlm")))
                .isInstanceOfSatisfying(
                        WeightPublishException.class,
                        e -> assertThat(e.kind()).isEqualTo(WeightPublishException.Kind.NOT_LOADED))
                .hasMessage(reason);
    }

    @Test
    void aPublishRepeatedAfterABrokenFirstAttemptSaysTheFirstMayHaveBeenApplied() throws Exception {
        StubGateway g = stub((ex, n) -> {
            if (n == 1) {
                throw new IllegalStateException("the gateway died mid-publish"); // the connection drops, no answer
            }
            StubGateway.error(ex, 409, "version_refused", "version 5 is not newer than the current version 5");
        });
        assertThatThrownBy(() -> client(fast(g.uri())).publishWeights(5, Path.of("/w/v5.rlm")))
                .isInstanceOf(WeightPublishException.class)
                .hasMessageStartingWith("version 5 is not newer than the current version 5 (an earlier attempt of this"
                        + " publish broke off with '")
                .hasMessageEndingWith("' and may have been applied)");
        assertThat(g.seen).hasSize(2);
    }

    @Test
    void aPublishSendsTheAbsolutePathAndReturnsTheResult() throws Exception {
        PublishResult result = new PublishResult(6, Duration.ofMillis(40), 2, Map.of());
        StubGateway g = stub((ex, n) -> StubGateway.json(ex, 200, GatewayJson.publishResult(result)));
        assertThat(client(fast(g.uri())).publishWeights(6, Path.of("w/v6.rlm"))).isEqualTo(result);
    }

    @Test
    void pullsABatchAndLongPollsWithTheRemainingWait() throws Exception {
        TrainingBatch b = batch(17);
        StubGateway g = stub((ex, n) -> {
            if (n == 1) {
                ex.sendResponseHeaders(204, -1);
                return;
            }
            ex.getResponseHeaders().set("Content-Type", BatchWireFormat.CONTENT_TYPE);
            ex.sendResponseHeaders(200, 0);
            try (OutputStream out = ex.getResponseBody()) {
                BatchWireFormat.write(b, out);
            }
        });
        RolloutClient c =
                client(fast(g.uri()).withPollWait(Duration.ofMillis(250)).withLease(null));
        assertThat(c.nextBatch()).isEqualTo(b);
        assertThat(g.seen)
                .extracting(StubGateway.Seen::pathAndQuery)
                .containsExactly("/v1/batches/next?wait=0.250", "/v1/batches/next?wait=0.250");
    }

    @Test
    void nextBatchWithATimeoutIsEmptyWhenNoneComes() throws Exception {
        StubGateway g = stub((ex, n) -> ex.sendResponseHeaders(204, -1));
        assertThat(client(fast(g.uri()).withLease(null)).nextBatch(Duration.ZERO))
                .isEqualTo(Optional.empty());
        assertThat(g.seen).extracting(StubGateway.Seen::pathAndQuery).containsExactly("/v1/batches/next?wait=0.000");
    }

    @Test
    void pullsUnderALeaseNamingItsHolderAndRenewsWithTheHoldersNameAndDuration() throws Exception {
        TrainingBatch b = batch(17);
        StubGateway g = stub((ex, n) -> {
            if (ex.getRequestURI().getPath().equals("/v1/leases/renew")) {
                StubGateway.json(
                        ex, 200, GatewayJson.renewed(new BatchLease("h", Duration.ofSeconds(30)), List.of(17L)));
                return;
            }
            java.io.ByteArrayOutputStream bytes = new java.io.ByteArrayOutputStream();
            BatchWireFormat.write(b, bytes);
            ex.getResponseHeaders().set("Content-Type", BatchWireFormat.CONTENT_TYPE);
            ex.sendResponseHeaders(200, bytes.size());
            try (OutputStream out = ex.getResponseBody()) {
                bytes.writeTo(out);
            }
        });
        // A lease long enough that the client's own renewal thread stays out of this test.
        HttpRolloutClient c = (HttpRolloutClient) client(fast(g.uri()).withLease(Duration.ofSeconds(30)));
        assertThat(c.nextBatch()).isEqualTo(b);
        assertThat(g.seen.get(0).pathAndQuery())
                .matches("/v1/batches/next\\?wait=20\\.000&lease=30\\.000&holder=.+%3A"
                        + ProcessHandle.current().pid() + "%3A[0-9a-f]+");
        assertThat(c.leasedBatches()).containsExactly(17L);
        assertThat(c.renewLease(new BatchLease("host:1:ab", Duration.ofSeconds(30))))
                .containsExactly(17L);
        assertThat(g.seen.get(1).pathAndQuery()).isEqualTo("/v1/leases/renew");
        assertThat(g.seen.get(1).body()).isEqualTo("{\"holder\":\"host:1:ab\",\"lease\":30.0}");
    }

    @Test
    void acknowledgesById() throws Exception {
        StubGateway g = stub((ex, n) -> StubGateway.json(ex, 200, GatewayJson.ack(17, true)));
        client(fast(g.uri())).acknowledge(batch(17));
        assertThat(g.seen)
                .extracting(StubGateway.Seen::method, StubGateway.Seen::pathAndQuery)
                .containsExactly(org.assertj.core.groups.Tuple.tuple("POST", "/v1/batches/17/ack"));
    }

    @Test
    void anAcknowledgementCarriesTheBatchsTaskIdsSoThatAnyGatewayCanRetireThem() throws Exception {
        StubGateway g = stub((ex, n) -> StubGateway.json(ex, 200, GatewayJson.ack(17, false)));
        client(fast(g.uri())).acknowledge(batch(17));
        assertThat(g.seen).extracting(StubGateway.Seen::body).containsExactly("{\"task_ids\":[4]}");
    }

    @Test
    void anAcknowledgementByIdAloneHasNoBody() throws Exception {
        StubGateway g = stub((ex, n) -> StubGateway.json(ex, 200, GatewayJson.ack(17, true)));
        client(fast(g.uri())).acknowledge(17L);
        assertThat(g.seen).extracting(StubGateway.Seen::body).containsExactly("");
    }

    @Test
    void aMalformedBatchIsAnErrorNamingTheGateway() throws Exception {
        StubGateway g = stub((ex, n) -> {
            ex.sendResponseHeaders(200, 0);
            try (OutputStream out = ex.getResponseBody()) {
                out.write("hello, this is not a rollout batch".getBytes(java.nio.charset.StandardCharsets.US_ASCII));
            }
        });
        assertThatThrownBy(() -> client(fast(g.uri())).nextBatch(Duration.ZERO))
                .isInstanceOf(IllegalStateException.class)
                .hasMessage("could not pull a batch: the trainer gateway at " + g.uri()
                        + " sent a malformed batch: not a rollout batch stream: expected the magic \"RBATCH\","
                        + " got 0x68656c6c6f2c");
    }

    @Test
    void aBatchBodyCutBeforeItsContentLengthIsABrokenPullAndTheNextAttemptGetsTheBatch() throws Exception {
        // As the gateway sends it: the exact Content-Length, then the bytes; the first answer
        // breaks off half-way (the connection drops), the second is whole.
        BatchWireFormat.Prepared prepared = BatchWireFormat.prepare(batch(8));
        ByteArrayOutputStream encoded = new ByteArrayOutputStream();
        prepared.writeTo(encoded);
        byte[] bytes = encoded.toByteArray();
        StubGateway g = stub((ex, n) -> {
            ex.sendResponseHeaders(200, prepared.length());
            OutputStream out = ex.getResponseBody();
            if (n == 1) {
                out.write(bytes, 0, bytes.length / 2);
                out.flush();
                throw new IllegalStateException("the gateway died mid-batch"); // the connection drops
            }
            out.write(bytes);
            out.close();
        });
        TrainingBatch received = client(fast(g.uri())).nextBatch(Duration.ZERO).orElseThrow();
        assertThat(received).isEqualTo(batch(8));
        assertThat(g.seen).hasSize(2);
    }

    @Test
    void aBatchBodyThatStallsIsAbandonedAfterTheReadIdleTimeout() throws Exception {
        ByteArrayOutputStream encoded = new ByteArrayOutputStream();
        BatchWireFormat.write(batch(3), encoded);
        StubGateway g = stub(null);
        g.script = (ex, n) -> {
            ex.sendResponseHeaders(200, 0);
            OutputStream out = ex.getResponseBody();
            out.write(encoded.toByteArray(), 0, 30);
            out.flush();
            g.release.await(DEADLINE.toSeconds(), TimeUnit.SECONDS); // stalls mid-batch
        };
        RolloutClient c = client(ClientConfig.of(List.of(g.uri()))
                .withReadIdleTimeout(Duration.ofMillis(300))
                .withRetry(Duration.ofMillis(20), Duration.ofMillis(20), Duration.ZERO));
        assertThatThrownBy(() -> c.nextBatch(Duration.ZERO))
                .isInstanceOf(EngineUnreachableException.class)
                .hasMessageContaining(g.uri() + " → IOException: no data from " + g.uri()
                        + " for 300 ms (read_idle_timeout) while trying to pull a batch");
    }

    @Test
    void interruptionEndsALongPollAtOnce() throws Exception {
        StubGateway g = stub(null);
        g.script = (ex, n) -> g.release.await(DEADLINE.toSeconds(), TimeUnit.SECONDS);
        RolloutClient c = client(fast(g.uri()));
        assertThat(interruptedWhile(() -> c.nextBatch(), g)).isInstanceOf(InterruptedException.class);
    }

    @Test
    void interruptionEndsALongPollOfAPlatformThreadAtOnce() throws Exception {
        // A trainer's main thread is a platform thread: its pull reads a socket of its own.
        StubGateway g = stub(null);
        g.script = (ex, n) -> g.release.await(DEADLINE.toSeconds(), TimeUnit.SECONDS);
        RolloutClient c = client(fast(g.uri()));
        CompletableFuture<Throwable> outcome = new CompletableFuture<>();
        Thread t = Thread.ofPlatform().start(() -> outcome.complete(thrownBy(c::nextBatch)));
        TestWaits.await("the stub to receive the pull", DEADLINE, () -> !g.seen.isEmpty());
        t.interrupt();
        assertThat(outcome.get(DEADLINE.toSeconds(), TimeUnit.SECONDS)).isInstanceOf(InterruptedException.class);
        assertThat(t.isInterrupted())
                .as("the flag is consumed by the InterruptedException")
                .isFalse();
    }

    @Test
    void closingTheClientEndsAPullInFlight() throws Exception {
        StubGateway g = stub(null);
        g.script = (ex, n) -> g.release.await(DEADLINE.toSeconds(), TimeUnit.SECONDS);
        RolloutClient c = client(fast(g.uri()));
        CompletableFuture<Throwable> outcome = new CompletableFuture<>();
        Thread.ofPlatform().start(() -> outcome.complete(thrownBy(c::nextBatch)));
        TestWaits.await("the stub to receive the pull", DEADLINE, () -> !g.seen.isEmpty());
        c.close();
        assertThat(outcome.get(DEADLINE.toSeconds(), TimeUnit.SECONDS))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("the client was closed");
    }

    @Test
    void interruptionEndsTheBackoffBetweenRetries() throws Exception {
        URI dead = StubGateway.closedPort();
        RolloutClient c = client(ClientConfig.of(List.of(dead))
                .withRetry(Duration.ofSeconds(30), Duration.ofSeconds(30), Duration.ofMinutes(5)));
        CompletableFuture<Throwable> outcome = new CompletableFuture<>();
        Thread t = Thread.ofVirtual().start(() -> {
            try {
                c.status();
                outcome.complete(null);
            } catch (Throwable e) {
                outcome.complete(e);
            }
        });
        // The first round fails at once (connection refused); the thread then sleeps for 30 s.
        TestWaits.await("the trainer thread to back off", DEADLINE, () -> t.getState() == Thread.State.TIMED_WAITING);
        t.interrupt();
        assertThat(outcome.get(DEADLINE.toSeconds(), TimeUnit.SECONDS)).isInstanceOf(InterruptedException.class);
    }

    @Test
    void aClosedClientRefusesCalls() {
        RolloutClient c = RolloutClient.connect(ClientConfig.of("http://127.0.0.1:1"));
        c.close();
        c.close();
        assertThatThrownBy(c::status)
                .isInstanceOf(IllegalStateException.class)
                .hasMessage("could not read status: the client is closed");
    }

    /** What {@code call} threw, or null. */
    private static Throwable thrownBy(InterruptibleCall call) {
        try {
            call.run();
            return null;
        } catch (Throwable e) {
            return e;
        }
    }

    /** Runs {@code call} on a thread, interrupts it once the stub has its request, returns what it threw. */
    private static Throwable interruptedWhile(InterruptibleCall call, StubGateway g)
            throws InterruptedException, ExecutionException, java.util.concurrent.TimeoutException {
        CompletableFuture<Throwable> outcome = new CompletableFuture<>();
        Thread t = Thread.ofVirtual().start(() -> {
            try {
                call.run();
                outcome.complete(null);
            } catch (Throwable e) {
                outcome.complete(e);
            }
        });
        TestWaits.await("the stub to receive the request", DEADLINE, () -> !g.seen.isEmpty());
        t.interrupt();
        return outcome.get(DEADLINE.toSeconds(), TimeUnit.SECONDS);
    }

    @FunctionalInterface
    private interface InterruptibleCall {
        void run() throws Exception;
    }
}
