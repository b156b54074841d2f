package org.rollout.gateway;

import static org.assertj.core.api.Assertions.assertThat;
import static org.rollout.gateway.TestRollout.await;

import java.io.IOException;
import java.io.InputStream;
import java.lang.management.ManagementFactory;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.rollout.api.TrainingBatch;
import org.rollout.api.TrainingGroup;
import org.rollout.cluster.LocalRollout;
import org.rollout.trainer.ClientConfig;
import org.rollout.trainer.RolloutClient;

/**
 * A trainer that opens thousands of pulls and never reads an answer, on one gateway of a run with
 * two (a real engine, LocalRollout, behind both): the gateway serves at most {@code
 * gateway.max_waiting_pulls} of them at once and answers the rest 503 {@code too_many_pulls} naming
 * the limit; a batch it streams to an unread socket is dropped after {@code gateway.write_timeout}
 * and goes to the next pull; meanwhile a well-behaved trainer (whose
 * client lists the flooded gateway first) trains on, and in the end it has received every task of
 * the run exactly once.
 */
@Timeout(180)
class UnreadPullsTest {
    private static final int UNREAD_PULLS = 2000;
    private static final int MAX_WAITING_PULLS = 64;
    private static final Duration WRITE_TIMEOUT = Duration.ofSeconds(2);
    /** 40 prompts: 20 batches of 2 groups, each about 8 MB (4 rows × 60 000 tokens a group), more than socket buffers hold. */
    private static final int PROMPTS = 40;

    @Test
    void unreadPullsAreBoundedAndReportedAndAnotherTrainerLosesNothing() throws Exception {
        TestRollout t = new TestRollout(60_000);
        t.maxNewTokens = 60_000;
        t.prompts = PROMPTS;
        t.eta = 100; // no staleness limit: the trainer below need not publish
        t.maxConcurrent = 8;
        t.ackTimeout = Duration.ofSeconds(3);
        GatewayConfig limited =
                GatewayConfig.defaults().withMaxWaitingPulls(MAX_WAITING_PULLS).withWriteTimeout(WRITE_TIMEOUT);
        List<Socket> unread = new ArrayList<>();
        try (LocalRollout rollout = t.start();
                TrainerGateway flooded = TrainerGateway.start(limited, rollout.client());
                TrainerGateway other = TrainerGateway.start(limited, rollout.client());
                RolloutClient trainer = RolloutClient.connect(
                        ClientConfig.of(flooded.uri().toString(), other.uri().toString())
                                .withPollWait(Duration.ofSeconds(1))
                                .withRetry(Duration.ofMillis(50), Duration.ofMillis(200), Duration.ofSeconds(60)))) {
            GatewayHandler h = flooded.handler();
            try {
                // The flood: pull requests sent, answers never read (a small receive window each).
                for (int i = 0; i < UNREAD_PULLS; i++) {
                    unread.add(unreadPull(flooded));
                }
                await(
                        "the flooded gateway answering every pull, served or refused",
                        Duration.ofSeconds(60),
                        () -> h.pullsRefused() + h.pullsAdmitted() >= UNREAD_PULLS);
                assertThat(h.pullsRefused()).as("pulls refused").isGreaterThan(UNREAD_PULLS / 2);
                AtomicInteger mostUnderWay = new AtomicInteger(h.pullsUnderWay());
                assertThat(h.pullsUnderWay()).isLessThanOrEqualTo(MAX_WAITING_PULLS);

                // One more pull, read this time: the refusal names the limit and its key. Pulls of the
                // flood end meanwhile (a wait runs out, a stalled stream is dropped), so the limit is
                // filled again with unread pulls just before it, as often as a slot freed in between.
                String refusal = "";
                for (int attempt = 0; attempt < 5 && !refusal.startsWith("HTTP/1.1 503"); attempt++) {
                    long refusedBefore = h.pullsRefused();
                    for (int i = 0; i < MAX_WAITING_PULLS + 1; i++) {
                        unread.add(unreadPull(flooded));
                    }
                    await(
                            "the limit full again, a pull of the top-up refused",
                            Duration.ofSeconds(30),
                            () -> h.pullsRefused() > refusedBefore);
                    refusal = rawPull(flooded);
                }
                assertThat(refusal)
                        .startsWith("HTTP/1.1 503")
                        .contains("too_many_pulls", "gateway.max_waiting_pulls", "--gateway-max-waiting-pulls")
                        .containsIgnoringCase("Retry-After: 1");

                // The other trainer trains through it all: every task exactly once.
                List<Long> tasks = new ArrayList<>();
                Set<Long> batches = new HashSet<>();
                long deadline = System.nanoTime() + Duration.ofSeconds(120).toNanos();
                while (tasks.size() < PROMPTS && System.nanoTime() < deadline) {
                    Optional<TrainingBatch> b = trainer.nextBatch(Duration.ofSeconds(2));
                    mostUnderWay.accumulateAndGet(h.pullsUnderWay(), Math::max);
                    if (b.isEmpty()) {
                        continue;
                    }
                    assertThat(batches.add(b.get().batchId()))
                            .as(
                                    "batch %d delivered to the trainer once",
                                    b.get().batchId())
                            .isTrue();
                    for (TrainingGroup g : b.get().groups()) {
                        tasks.add(g.taskId());
                    }
                    trainer.acknowledge(b.get());
                }
                assertThat(tasks)
                        .as("tasks the trainer received")
                        .hasSize(PROMPTS)
                        .doesNotHaveDuplicates();
                assertThat(mostUnderWay.get())
                        .as("pulls under way on the flooded gateway")
                        .isLessThanOrEqualTo(MAX_WAITING_PULLS);
                assertThat(h.writesTimedOut())
                        .as("batches stuck on unread sockets, dropped after gateway.write_timeout")
                        .isPositive();
                assertThat(h.batchesReleased())
                        .as("dropped batches handed back for the next pull")
                        .isGreaterThanOrEqualTo(h.writesTimedOut());
                // Unread pulls still waiting end at their 20 s wait; streams stuck on unread sockets were dropped.
                await(
                        "every pull slot of the flooded gateway released",
                        Duration.ofSeconds(60),
                        () -> h.pullsUnderWay() == 0);
                System.gc();
                long heap =
                        ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed();
                System.out.printf(
                        "unread pulls: %d sent, %d served, %d refused, at most %d under way, %d streams dropped after %d ms;"
                                + " trainer got %d tasks in %d batches; heap after GC %d MB%n",
                        UNREAD_PULLS,
                        h.pullsAdmitted(),
                        h.pullsRefused(),
                        mostUnderWay.get(),
                        h.writesTimedOut(),
                        WRITE_TIMEOUT.toMillis(),
                        tasks.size(),
                        batches.size(),
                        heap >> 20);
            } finally {
                for (Socket s : unread) {
                    s.close();
                }
            }
        }
    }

    /** A pull whose answer is read: its status line, headers and body. */
    /** A pull request sent on a socket with a small receive window, its answer never read. */
    private static Socket unreadPull(TrainerGateway g) throws IOException {
        Socket s = new Socket();
        s.setReceiveBufferSize(4096);
        s.connect(g.address());
        s.getOutputStream()
                .write(("POST /v1/batches/next?wait=20 HTTP/1.1\r\nHost: gateway\r\n" + "Content-Length: 0\r\n\r\n")
                        .getBytes(StandardCharsets.US_ASCII));
        return s;
    }

    private static String rawPull(TrainerGateway g) throws IOException {
        try (Socket s = new Socket()) {
            s.connect(g.address());
            s.setSoTimeout(10_000);
            s.getOutputStream()
                    .write(("POST /v1/batches/next?wait=0 HTTP/1.1\r\nHost: gateway\r\nContent-Length: 0\r\n"
                                    + "Connection: close\r\n\r\n")
                            .getBytes(StandardCharsets.US_ASCII));
            InputStream in = s.getInputStream();
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        }
    }
}
