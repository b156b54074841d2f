package org.rollout.inference;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.random.RandomGenerator;
import org.junit.jupiter.api.Test;
import org.rollout.api.GenerationException;
import org.rollout.api.ModelRequest;
import org.rollout.config.RoutingStrategy;
import org.rollout.config.ServerAddress;

class ServerPoolTest {
    private static final ServerAddress A = new ServerAddress("127.0.0.1", 1001);
    private static final ServerAddress B = new ServerAddress("127.0.0.1", 1002);
    private static final ServerAddress C = new ServerAddress("127.0.0.1", 1003);
    private static final List<ServerAddress> ABC = List.of(A, B, C);
    /** Makes the round-robin start index 0. */
    private static final RandomGenerator START_AT_ZERO = () -> 0L;

    private static ServerPool pool(RoutingStrategy strategy, boolean sticky, int slack, RandomGenerator random) {
        return new ServerPool(ABC, strategy, sticky, slack, random);
    }

    /** Acquires and releases at once, returning the chosen server. */
    private static ServerAddress pick(ServerPool pool, String rid) throws InterruptedException {
        try (ServerPool.Lease lease = pool.acquire(rid, Set.of(), Duration.ZERO)) {
            return lease.address();
        }
    }

    @Test
    void roundRobinVisitsServersInOrderFromARandomStart() throws Exception {
        for (long seed = 0; seed < 6; seed++) {
            ServerPool pool = pool(RoutingStrategy.ROUND_ROBIN, false, 8, new SplittableRandom(seed));
            List<ServerAddress> order = new ArrayList<>();
            for (int i = 0; i < 6; i++) {
                order.add(pick(pool, ModelRequest.newRid()));
            }
            int start = ABC.indexOf(order.get(0));
            for (int i = 0; i < 6; i++) {
                assertThat(order.get(i)).isEqualTo(ABC.get((start + i) % 3));
            }
        }
    }

    @Test
    void roundRobinStartIndexIsRandom() throws Exception {
        Set<ServerAddress> firsts = new HashSet<>();
        for (long seed = 0; seed < 32; seed++) {
            firsts.add(pick(pool(RoutingStrategy.ROUND_ROBIN, false, 8, new SplittableRandom(seed)), null));
        }
        assertThat(firsts).containsExactlyInAnyOrderElementsOf(ABC);
    }

    @Test
    void roundRobinSkipsEjectedServers() throws Exception {
        ServerPool pool = pool(RoutingStrategy.ROUND_ROBIN, false, 8, START_AT_ZERO);
        pool.recordFailure(B, "HTTP 500", true);
        assertThat(List.of(pick(pool, null), pick(pool, null), pick(pool, null)))
                .containsExactly(A, C, A);
    }

    @Test
    void leastRequestsChoosesTheServerWithFewestOutstanding() throws Exception {
        ServerPool pool = pool(RoutingStrategy.LEAST_REQUESTS, false, 8, START_AT_ZERO);
        ServerPool.Lease a1 = pool.acquire(null, Set.of(), Duration.ZERO);
        ServerPool.Lease b1 = pool.acquire(null, Set.of(), Duration.ZERO);
        ServerPool.Lease c1 = pool.acquire(null, Set.of(), Duration.ZERO);
        assertThat(List.of(a1.address(), b1.address(), c1.address())).containsExactly(A, B, C);
        ServerPool.Lease a2 = pool.acquire(null, Set.of(), Duration.ZERO);
        assertThat(a2.address()).isEqualTo(A);
        b1.close();
        c1.close();
        // A has 2 outstanding, B and C none: the tie between B and C goes round-robin.
        assertThat(pick(pool, null)).isEqualTo(B);
        assertThat(pick(pool, null)).isEqualTo(C);
        assertThat(pool.stats(A).outstanding()).isEqualTo(2);
        a1.close();
        a2.close();
        assertThat(pool.stats(A).outstanding()).isZero();
    }

    @Test
    void leaseCloseIsIdempotent() throws Exception {
        ServerPool pool = pool(RoutingStrategy.LEAST_REQUESTS, false, 8, START_AT_ZERO);
        ServerPool.Lease lease = pool.acquire(null, Set.of(), Duration.ZERO);
        lease.close();
        lease.close();
        assertThat(pool.stats(lease.address()).outstanding()).isZero();
    }

    @Test
    void stickyResumptionGoesBackToTheRidsServer() throws Exception {
        ServerPool pool = pool(RoutingStrategy.ROUND_ROBIN, true, 8, START_AT_ZERO);
        assertThat(pick(pool, "r1")).isEqualTo(A);
        assertThat(pick(pool, "r2")).isEqualTo(B);
        assertThat(pick(pool, "r1")).isEqualTo(A);
        assertThat(pick(pool, "r1")).isEqualTo(A);
        assertThat(pool.stickyServer("r1")).contains(A);
    }

    @Test
    void stickinessYieldsWhenTheServerIsMoreThanSlackAboveTheLeastLoaded() throws Exception {
        ServerPool pool = pool(RoutingStrategy.LEAST_REQUESTS, true, 2, START_AT_ZERO);
        assertThat(pick(pool, "r1")).isEqualTo(A);
        assertThat(pool.acquire("other1", Set.of(), Duration.ZERO).address()).isEqualTo(B);
        assertThat(pool.acquire("other2", Set.of(), Duration.ZERO).address()).isEqualTo(C);
        // B and C carry 1 each. A stays preferred for r1 while its load is at most 1 + slack 2.
        for (int held = 0; held <= 3; held++) {
            assertThat(pool.stats(A).outstanding()).isEqualTo(held);
            assertThat(pool.acquire("r1", Set.of(), Duration.ZERO).address()).isEqualTo(A);
        }
        // A now carries 4 > 1 + 2: the next segment of r1 goes to the least-loaded server instead.
        ServerPool.Lease moved = pool.acquire("r1", Set.of(), Duration.ZERO);
        assertThat(moved.address()).isIn(B, C);
        assertThat(pool.stickyServer("r1")).contains(moved.address());
    }

    @Test
    void stickinessNeverChoosesAServerOutOfRotation() throws Exception {
        ServerPool pool = pool(RoutingStrategy.ROUND_ROBIN, true, 8, START_AT_ZERO);
        assertThat(pick(pool, "r1")).isEqualTo(A);
        pool.recordFailure(A, "connection refused", true);
        assertThat(pick(pool, "r1")).isNotEqualTo(A);
        pool.readmit(A);
        pool.markResyncPending(pool.stickyServer("r1").orElseThrow(), "update failed");
        ServerAddress now = pick(pool, "r1");
        assertThat(pool.stats(now).inRotation()).isTrue();
    }

    @Test
    void withoutStickinessARidDoesNotPinItsServer() throws Exception {
        ServerPool pool = pool(RoutingStrategy.ROUND_ROBIN, false, 8, START_AT_ZERO);
        assertThat(List.of(pick(pool, "r1"), pick(pool, "r1"), pick(pool, "r1")))
                .containsExactly(A, B, C);
        assertThat(pool.stickyServer("r1")).isEmpty();
    }

    @Test
    void theStickyMapForgetsTheLeastRecentlyUsedRidBeyond128() throws Exception {
        ServerPool pool = pool(RoutingStrategy.ROUND_ROBIN, true, 8, START_AT_ZERO);
        pick(pool, "first");
        for (int i = 0; i < ServerPool.RID_CACHE_SIZE - 1; i++) {
            pick(pool, "rid" + i);
        }
        assertThat(pool.stickyServer("first")).isPresent();
        pick(pool, "one-more");
        assertThat(pool.stickyServer("first")).isEmpty();
        assertThat(pool.stickyServer("one-more")).isPresent();
    }

    @Test
    void avoidsServersThatFailedTheSegmentWhileOthersAreInRotation() throws Exception {
        ServerPool pool = pool(RoutingStrategy.ROUND_ROBIN, true, 8, START_AT_ZERO);
        assertThat(pick(pool, "r1")).isEqualTo(A);
        try (ServerPool.Lease l = pool.acquire("r1", Set.of(A), Duration.ZERO)) {
            assertThat(l.address()).isNotEqualTo(A);
        }
        try (ServerPool.Lease l = pool.acquire("r1", Set.of(A, B, C), Duration.ZERO)) {
            assertThat(l.address()).isIn(ABC);
        }
    }

    @Test
    void withNoServerInRotationWaitsThenFailsNamingEachServerAndItsLastError() {
        ServerPool pool = pool(RoutingStrategy.LEAST_REQUESTS, true, 8, START_AT_ZERO);
        pool.recordFailure(A, "connection refused or unreachable", true);
        pool.recordFailure(B, "HTTP 503: busy", true);
        pool.markResyncPending(C, "POST /update_weights_from_disk: HTTP 400: bad path");
        assertThatThrownBy(() -> pool.acquire("r9", Set.of(), Duration.ofMillis(200)))
                .isInstanceOf(GenerationException.class)
                .hasMessageContaining(
                        "no inference server in rotation for rid r9 after waiting 0.2 s (request_timeout)")
                .hasMessageContaining("127.0.0.1:1001 ejected (last error: connection refused or unreachable)")
                .hasMessageContaining("127.0.0.1:1002 ejected (last error: HTTP 503: busy)")
                .hasMessageContaining(
                        "127.0.0.1:1003 waiting for a weight re-sync (last error: POST /update_weights_from_disk");
    }

    @Test
    void aWaitingAcquireProceedsAsSoonAsAServerIsReadmitted() throws Exception {
        ServerPool pool = new ServerPool(List.of(A), RoutingStrategy.LEAST_REQUESTS, true, 8, START_AT_ZERO);
        pool.recordFailure(A, "timed out", true);
        CompletableFuture<ServerAddress> waiting = CompletableFuture.supplyAsync(() -> {
            try (ServerPool.Lease l = pool.acquire("r", Set.of(), Duration.ofSeconds(30))) {
                return l.address();
            } catch (InterruptedException e) {
                throw new IllegalStateException(e);
            }
        });
        pool.readmit(A);
        assertThat(waiting.get(10, TimeUnit.SECONDS)).isEqualTo(A);
    }

    @Test
    void countsRequestsAndFailuresAndKeepsTheLastError() throws Exception {
        ServerPool pool = new ServerPool(List.of(A), RoutingStrategy.LEAST_REQUESTS, true, 8, START_AT_ZERO);
        pick(pool, "r");
        pick(pool, "r");
        pool.recordFailure(A, "HTTP 429: slow down", false);
        ServerStats s = pool.stats(A);
        assertThat(s.requests()).isEqualTo(2);
        assertThat(s.failures()).isEqualTo(1);
        assertThat(s.ejected()).isFalse();
        assertThat(s.lastError()).contains("HTTP 429: slow down");
        assertThat(s.inRotation()).isTrue();
    }

    @Test
    void rejectsUnknownServersNamingThePool() {
        ServerPool pool = pool(RoutingStrategy.LEAST_REQUESTS, true, 8, START_AT_ZERO);
        assertThatThrownBy(() -> pool.readmit(new ServerAddress("127.0.0.1", 9)))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("unknown server 127.0.0.1:9");
    }

    @Test
    void aClosedPoolFailsAcquire() {
        ServerPool pool = pool(RoutingStrategy.LEAST_REQUESTS, true, 8, START_AT_ZERO);
        pool.close();
        assertThatThrownBy(() -> pool.acquire("r", Set.of(), Duration.ZERO))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("closed");
    }
}
