package org.rollout.gateway;

import static org.assertj.core.api.Assertions.assertThat;
import static org.rollout.gateway.TestRollout.await;

import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.rollout.api.TrainingBatch;
import org.rollout.api.TrainingGroup;
import org.rollout.cluster.LocalRollout;
import org.rollout.trainer.ClientConfig;
import org.rollout.trainer.RolloutClient;

/**
 * Pulls whose clients closed their connections while they waited for a batch (a trainer that
 * crashed or timed out mid-pull, or a flood of pulls): the gateway learns of each only when it
 * writes a batch to it. Such a batch never reached anyone, so it goes to the next pull at once.
 * Here {@code batch_ack_timeout} is far longer than the test may run: a batch left to wait it out
 * would never reach the live trainer, so receiving every task shows the hand-back.
 */
@Timeout(120)
class DeadPullTest {
    private static final int DEAD_PULLS = 50;
    /** 20 batches of 2 groups: fewer than the dead pulls, so each batch meets several. */
    private static final int PROMPTS = 40;

    @Test
    void aBatchWrittenToAClosedPullGoesToTheNextPull() throws Exception {
        TestRollout t = new TestRollout(2_000);
        t.maxNewTokens = 2_000;
        t.prompts = PROMPTS;
        t.eta = 100; // no staleness limit: the trainer below need not publish
        t.maxConcurrent = 8;
        t.ackTimeout = Duration.ofMinutes(30);
        t.engine.pause(); // no batch before every dead pull waits
        List<Socket> dead = new ArrayList<>();
        try (LocalRollout rollout = t.start();
                TrainerGateway gateway = TrainerGateway.start(GatewayConfig.defaults(), rollout.client());
                RolloutClient trainer = RolloutClient.connect(
                        ClientConfig.of(gateway.uri().toString()).withPollWait(Duration.ofSeconds(1)))) {
            GatewayHandler h = gateway.handler();
            for (int i = 0; i < DEAD_PULLS; i++) {
                Socket s = new Socket();
                s.connect(gateway.address());
                s.getOutputStream()
                        .write(("POST /v1/batches/next?wait=60 HTTP/1.1\r\nHost: gateway\r\nContent-Length: 0\r\n\r\n")
                                .getBytes(StandardCharsets.US_ASCII));
                dead.add(s);
            }
            await("every dead pull waiting for a batch", Duration.ofSeconds(30), () -> h.pullsUnderWay() == DEAD_PULLS);
            for (Socket s : dead) {
                s.close();
            }
            t.engine.resume();

            List<Long> tasks = new ArrayList<>();
            Set<Long> batches = new HashSet<>();
            long deadline = System.nanoTime() + Duration.ofSeconds(90).toNanos();
            while (tasks.size() < PROMPTS && System.nanoTime() < deadline) {
                Optional<TrainingBatch> b = trainer.nextBatch(Duration.ofSeconds(1));
                if (b.isEmpty()) {
                    continue;
                }
                assertThat(batches.add(b.get().batchId()))
                        .as("batch %d delivered to the trainer once", b.get().batchId())
                        .isTrue();
                for (TrainingGroup g : b.get().groups()) {
                    tasks.add(g.taskId());
                }
                trainer.acknowledge(b.get());
            }
            assertThat(tasks)
                    .as("tasks the live trainer received, with %d batches written to closed pulls", h.batchesReleased())
                    .hasSize(PROMPTS)
                    .doesNotHaveDuplicates();
            assertThat(h.batchesReleased())
                    .as("batches handed back after a write to a closed pull failed")
                    .isPositive()
                    .isLessThanOrEqualTo(DEAD_PULLS);
            await("every pull slot released", Duration.ofSeconds(30), () -> h.pullsUnderWay() == 0);
            System.out.printf(
                    "dead pulls: %d closed while waiting, %d batches handed back; the trainer got %d tasks in %d batches%n",
                    DEAD_PULLS, h.batchesReleased(), tasks.size(), batches.size());
        }
    }
}
