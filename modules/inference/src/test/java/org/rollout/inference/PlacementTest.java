package org.rollout.inference;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;
import org.rollout.api.ModelRequest;
import org.rollout.api.WorkflowContext;
import org.rollout.config.InferenceConfig;
import org.rollout.config.RoutingStrategy;
import org.rollout.config.ServerAddress;

/**
 * Affine placement in a {@link ServerPool} ({@code group_affinity}, {@code prefix_aware}): groups and
 * trajectories stay together within the load bound, a hot prefix cannot overload a server, and a
 * server out of rotation or with new weights loses what placement knew of it at once.
 */
class PlacementTest {
    private static final List<ServerAddress> FOUR = List.of(
            new ServerAddress("127.0.0.1", 2001),
            new ServerAddress("127.0.0.1", 2002),
            new ServerAddress("127.0.0.1", 2003),
            new ServerAddress("127.0.0.1", 2004));

    private static ServerPool pool(RoutingStrategy strategy, int slack, double factor) {
        InferenceConfig config = InferenceConfig.builder()
                .serverAddresses(FOUR)
                .routingStrategy(strategy)
                .affinitySlack(slack)
                .affinityLoadFactor(factor)
                .prefixViewTokens(1 << 16)
                .build();
        return ServerPool.of(config, new SplittableRandom(7));
    }

    private static int[] tokens(int length, int seed) {
        int[] t = new int[length];
        SplittableRandom r = new SplittableRandom(seed);
        for (int i = 0; i < length; i++) {
            t[i] = r.nextInt(32_000);
        }
        return t;
    }

    private static Placement sample(long task, int sample, int[] prompt, boolean blocks) {
        WorkflowContext ctx = WorkflowContext.builder()
                .taskId(task)
                .sampleIdx(sample)
                .groupSize(1 << 20)
                .build();
        return Placement.of(Map.of(), ctx, prompt, new int[0], 0, blocks);
    }

    private static ServerPool.Lease take(ServerPool pool, Placement p) throws InterruptedException {
        return pool.acquire(ModelRequest.newRid(), p, Set.of(), Duration.ZERO);
    }

    @Test
    void aGroupOfSixteenGoesToOneServerOfAnIdleFleetAndSpillsPastTheBound() throws Exception {
        for (RoutingStrategy strategy : List.of(RoutingStrategy.GROUP_AFFINITY, RoutingStrategy.PREFIX_AWARE)) {
            ServerPool pool = pool(strategy, 16, 1.25);
            int[] prompt = tokens(2000, 1);
            List<ServerPool.Lease> held = new ArrayList<>();
            for (int i = 0; i < 16; i++) {
                held.add(take(pool, sample(5, i, prompt, true)));
            }
            assertThat(held.stream().map(ServerPool.Lease::address).distinct())
                    .as("%s: servers of one group of 16 on an idle fleet", strategy)
                    .hasSize(1);
            // The 17th sample: the group's server has 16 outstanding, the least loaded 0, slack 16.
            ServerPool.Lease spilled = take(pool, sample(5, 16, prompt, true));
            assertThat(spilled.address())
                    .as("%s: a sample past the bound spills", strategy)
                    .isNotEqualTo(held.get(0).address());
            // The group's next sample goes to one of its own servers, not a third.
            held.forEach(ServerPool.Lease::close);
            ServerPool.Lease again = take(pool, sample(5, 17, prompt, true));
            assertThat(again.address()).isIn(held.get(0).address(), spilled.address());
        }
    }

    @Test
    void groupsOfLeastRequestsSpreadOverTheFleet() throws Exception {
        ServerPool pool = pool(RoutingStrategy.LEAST_REQUESTS, 16, 1.25);
        int[] prompt = tokens(2000, 1);
        Set<ServerAddress> used = new HashSet<>();
        for (int i = 0; i < 16; i++) {
            used.add(take(pool, sample(5, i, prompt, false)).address());
        }
        assertThat(used).as("today's default spreads a group over every server").hasSize(4);
    }

    @Test
    void aTrajectorysNextTurnGoesBackToItsServerWhileItsLoadIsWithinTheBound() throws Exception {
        ServerPool pool = pool(RoutingStrategy.GROUP_AFFINITY, 4, 1.25);
        int[] turn1 = tokens(500, 2);
        ServerAddress first;
        try (ServerPool.Lease l = take(pool, sample(9, 3, turn1, false))) {
            first = l.address();
        }
        // Other work makes the first server the busiest, within the slack.
        List<ServerPool.Lease> load = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            load.add(pool.acquire("other-" + i, Set.of(), Duration.ZERO));
        }
        int[] turn2 = tokens(900, 2);
        try (ServerPool.Lease l = take(pool, sample(9, 3, turn2, false))) {
            assertThat(l.address()).as("the trajectory's next turn").isEqualTo(first);
        }
        // An agent session names its trajectory in the request's metadata.
        Map<String, Object> session = Map.of(ModelRequest.AFFINITY_KEY, "session-1");
        Placement p = Placement.of(session, WorkflowContext.empty(), turn1, new int[0], 0, false);
        ServerAddress sessionServer;
        try (ServerPool.Lease l = pool.acquire("s1", p, Set.of(), Duration.ZERO)) {
            sessionServer = l.address();
        }
        for (int turn = 0; turn < 5; turn++) {
            try (ServerPool.Lease l = pool.acquire("s1-" + turn, p, Set.of(), Duration.ZERO)) {
                assertThat(l.address()).as("session turn %d", turn).isEqualTo(sessionServer);
            }
        }
        load.forEach(ServerPool.Lease::close);
    }

    @Test
    void prefixAwarePlacementFindsTheServerHoldingTheLongestPrefix() throws Exception {
        ServerPool pool = pool(RoutingStrategy.PREFIX_AWARE, 8, 1.25);
        int[] system = tokens(1024, 3);
        // Two unrelated histories on two servers.
        int[] a = concat(system, tokens(3000, 4));
        int[] b = tokens(4000, 5);
        ServerAddress onA;
        ServerAddress onB;
        try (ServerPool.Lease la = take(pool, untracked(a));
                ServerPool.Lease lb = take(pool, untracked(b))) {
            onA = la.address();
            onB = lb.address();
        }
        assertThat(onA).isNotEqualTo(onB);
        // A request extending a (no group, no trajectory in common) goes where a's prefix is.
        try (ServerPool.Lease l = take(pool, untracked(concat(a, tokens(200, 6))))) {
            assertThat(l.address()).isEqualTo(onA);
        }
        try (ServerPool.Lease l = take(pool, untracked(concat(b, tokens(200, 7))))) {
            assertThat(l.address()).isEqualTo(onB);
        }
        // Sharing only the 1024-token system prompt: still a's server, the longest match.
        try (ServerPool.Lease l = take(pool, untracked(concat(system, tokens(500, 8))))) {
            assertThat(l.address()).isEqualTo(onA);
        }
    }

    private static Placement untracked(int[] prompt) {
        return Placement.of(Map.of(), WorkflowContext.empty(), prompt, new int[0], 0, true);
    }

    private static int[] concat(int[] x, int[] y) {
        int[] z = java.util.Arrays.copyOf(x, x.length + y.length);
        System.arraycopy(y, 0, z, x.length, y.length);
        return z;
    }

    @Test
    void oneHotPrefixForEveryoneNeverPushesAServerPastTheLoadBound() throws Exception {
        for (RoutingStrategy strategy : List.of(RoutingStrategy.GROUP_AFFINITY, RoutingStrategy.PREFIX_AWARE)) {
            ServerPool pool = pool(strategy, 4, 1.25);
            int[] hot = tokens(2048, 9);
            SplittableRandom random = new SplittableRandom(11);
            List<ServerPool.Lease> held = new ArrayList<>();
            int worst = 0;
            for (int step = 0; step < 2000; step++) {
                if (!held.isEmpty() && (held.size() >= 200 || random.nextInt(3) == 0)) {
                    held.remove(random.nextInt(held.size())).close();
                }
                // Everyone is one group with one prompt: the hottest prefix there is.
                held.add(take(pool, sample(1, step, hot, true)));
                int total = 0;
                int max = 0;
                int least = Integer.MAX_VALUE;
                for (ServerStats s : pool.stats()) {
                    total += s.outstanding();
                    max = Math.max(max, s.outstanding());
                    least = Math.min(least, s.outstanding());
                }
                int bound = Math.max(least + 4, (int) Math.ceil(1.25 * total / 4.0));
                assertThat(max)
                        .as(
                                "%s step %d: busiest server against the bound (total %d, least %d)",
                                strategy, step, total, least)
                        .isLessThanOrEqualTo(bound);
                worst = Math.max(worst, max - least);
            }
            assertThat(worst).as("%s: the largest imbalance seen", strategy).isLessThanOrEqualTo(60);
            held.forEach(ServerPool.Lease::close);
        }
    }

    @Test
    void aServerOutOfRotationLosesItsAffinitiesAtOnceAndDoesNotGetThemBack() throws Exception {
        ServerPool pool = pool(RoutingStrategy.PREFIX_AWARE, 16, 1.25);
        int[] prompt = tokens(1000, 12);
        ServerAddress home;
        try (ServerPool.Lease l = take(pool, sample(3, 0, prompt, true))) {
            home = l.address();
        }
        pool.recordFailure(home, "connection refused", true);
        ServerAddress moved;
        try (ServerPool.Lease l = take(pool, sample(3, 0, prompt, true))) {
            moved = l.address();
        }
        assertThat(moved).as("nothing waits on an ejected server").isNotEqualTo(home);
        pool.readmit(home);
        for (int i = 0; i < 5; i++) {
            try (ServerPool.Lease l = take(pool, sample(3, 0, prompt, true))) {
                assertThat(l.address())
                        .as("the trajectory stays where it moved: the readmitted server lost its cache view")
                        .isEqualTo(moved);
            }
        }
        // A drained server likewise.
        pool.drain(moved);
        try (ServerPool.Lease l = take(pool, sample(3, 0, prompt, true))) {
            assertThat(l.address()).isNotEqualTo(moved);
        }
    }

    @Test
    void newWeightsResetTheServersCacheViewButNotWhereTrajectoriesLive() throws Exception {
        ServerPool pool = pool(RoutingStrategy.PREFIX_AWARE, 16, 1.25);
        int[] prompt = tokens(1000, 13);
        ServerAddress home;
        try (ServerPool.Lease l = take(pool, untracked(prompt))) {
            home = l.address();
        }
        try (ServerPool.Lease l = take(pool, untracked(prompt))) {
            assertThat(l.address()).as("the same prefix, before the update").isEqualTo(home);
        }
        for (ServerAddress s : FOUR) {
            pool.setServerVersion(s, 1);
        }
        Map<ServerAddress, Integer> after = new HashMap<>();
        for (int i = 0; i < 4; i++) {
            try (ServerPool.Lease l = take(pool, untracked(concat(tokens(64, 100 + i), prompt)))) {
                after.merge(l.address(), 1, Integer::sum);
            }
        }
        // With nothing viewed, unrelated prompts take turns over the idle fleet (least requests).
        assertThat(after).hasSize(4);
    }

    @Test
    void blockNamesAreEqualExactlyAsFarAsThePrefixesAre() {
        int[] a = tokens(100, 14);
        int[] b = a.clone();
        b[40] = b[40] + 1;
        long[] na = PrefixView.blockNames(a, new int[0], 0);
        long[] nb = PrefixView.blockNames(b, new int[0], 0);
        assertThat(na).hasSize(100 / PrefixView.BLOCK);
        assertThat(na[0]).isEqualTo(nb[0]);
        assertThat(na[1]).isNotEqualTo(nb[1]);
        assertThat(na[2])
                .as("chained: a change in block 1 renames every later block")
                .isNotEqualTo(nb[2]);
        // The prompt and the tokens generated so far name the same blocks as one prompt.
        long[] split =
                PrefixView.blockNames(java.util.Arrays.copyOf(a, 50), java.util.Arrays.copyOfRange(a, 50, 100), 50);
        assertThat(split).containsExactly(na);
    }

    @Test
    void theViewForgetsTheLeastRecentlyUsedTailsFirstAndStaysWithinItsCapacity() {
        PrefixView view = new PrefixView(10 * PrefixView.BLOCK);
        ServerSlot s = new ServerSlot(FOUR.get(0), 0);
        int[] shared = tokens(4 * PrefixView.BLOCK, 15);
        long[] first = PrefixView.blockNames(concat(shared, tokens(4 * PrefixView.BLOCK, 16)), new int[0], 0);
        long[] second = PrefixView.blockNames(concat(shared, tokens(4 * PrefixView.BLOCK, 17)), new int[0], 0);
        view.sent(s, first);
        view.sent(s, second); // 12 distinct blocks into 10: two of first's tail go
        assertThat(view.heldTokens(s)).isEqualTo(10 * PrefixView.BLOCK);
        assertThat(view.cachedTokens(s, second)).isEqualTo(8 * PrefixView.BLOCK);
        assertThat(view.cachedTokens(s, first))
                .as("the shared prefix was touched last, so the first tail's last blocks went")
                .isEqualTo(6 * PrefixView.BLOCK);
        view.forget(s);
        assertThat(view.cachedTokens(s, second)).isZero();
    }
}
