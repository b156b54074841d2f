package org.rollout.cluster;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Test;
import org.rollout.api.EpisodeResult;

/** The race between a slot's episode ending and its group cancelling it: exactly one wins. */
class SlotLeaseTest {
    private static final long WAIT_SECONDS = 10;

    @Test
    void aCancelledEpisodeIsInterruptedAndItsResultGoesNowhere() throws Exception {
        CountDownLatch started = new CountDownLatch(1);
        CompletableFuture<Boolean> sawInterrupt = new CompletableFuture<>();
        AtomicBoolean returned = new AtomicBoolean();
        SlotLease lease = new SlotLease("slot-test-0") {
            @Override
            EpisodeResult episode() throws Exception {
                started.countDown();
                try {
                    new CountDownLatch(1).await(WAIT_SECONDS, TimeUnit.SECONDS);
                    sawInterrupt.complete(false);
                } catch (InterruptedException e) {
                    sawInterrupt.complete(true);
                    throw e;
                }
                return EpisodeResult.rejected("never");
            }

            @Override
            void returned(EpisodeResult result, Throwable error) {
                returned.set(true);
            }
        };
        lease.start();
        assertThat(started.await(WAIT_SECONDS, TimeUnit.SECONDS)).isTrue();
        assertThat(lease.running()).isTrue();
        lease.interrupt();
        assertThat(lease.running()).isFalse();
        assertThat(sawInterrupt.get(WAIT_SECONDS, TimeUnit.SECONDS))
                .as("the episode's thread interrupted")
                .isTrue();
        assertThat(returned).as("a cancelled episode reports nothing").isFalse();
    }

    @Test
    void anEpisodeThatReturnedIsNeverInterruptedWhileItsGroupConcludesOnItsThread() throws Exception {
        CountDownLatch inReturned = new CountDownLatch(1);
        CountDownLatch cancelTried = new CountDownLatch(1);
        CompletableFuture<Boolean> interruptedAfter = new CompletableFuture<>();
        SlotLease lease = new SlotLease("slot-test-1") {
            @Override
            EpisodeResult episode() {
                return EpisodeResult.rejected("done");
            }

            @Override
            void returned(EpisodeResult result, Throwable error) {
                inReturned.countDown();
                try {
                    cancelTried.await(WAIT_SECONDS, TimeUnit.SECONDS);
                } catch (InterruptedException e) {
                    interruptedAfter.complete(true);
                    return;
                }
                interruptedAfter.complete(Thread.currentThread().isInterrupted());
            }
        };
        lease.start();
        assertThat(inReturned.await(WAIT_SECONDS, TimeUnit.SECONDS)).isTrue();
        lease.interrupt();
        cancelTried.countDown();
        assertThat(interruptedAfter.get(WAIT_SECONDS, TimeUnit.SECONDS))
                .as("a cancel after the episode returned interrupts the merge on its thread")
                .isFalse();
    }

    @Test
    void whatAnEpisodeThrowsIsHandedToItsGroupOnTheEpisodesThread() throws Exception {
        CompletableFuture<Throwable> reported = new CompletableFuture<>();
        IllegalStateException thrown = new IllegalStateException("workflow bug");
        SlotLease lease = new SlotLease("slot-test-2") {
            @Override
            EpisodeResult episode() {
                throw thrown;
            }

            @Override
            void returned(EpisodeResult result, Throwable error) {
                assertThat(result).isNull();
                reported.complete(error);
            }
        };
        lease.start();
        assertThat(reported.get(WAIT_SECONDS, TimeUnit.SECONDS)).isSameAs(thrown);
        assertThat(lease.running()).isFalse();
    }
}
