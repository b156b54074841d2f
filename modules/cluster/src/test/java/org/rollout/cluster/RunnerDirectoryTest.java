package org.rollout.cluster;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.rollout.cluster.RunnerDirectory.AskHoldings;
import org.rollout.cluster.RunnerDirectory.AskInfo;
import org.rollout.cluster.RunnerDirectory.Gone;
import org.rollout.cluster.RunnerDirectory.Recheck;
import org.rollout.cluster.RunnerDirectory.Step;
import org.rollout.cluster.RunnerDirectory.Watch;

/** What the coordinator does as runners are listed, join and go: one rule per test. */
class RunnerDirectoryTest {

    private final TaskLedger<String> tasks = new TaskLedger<>();
    private final RunnerDirectory<String> directory = new RunnerDirectory<>(tasks);

    private void dispatch(long id, String runner) {
        tasks.dispatch(new TaskLedger.Task<>(id, 0, Map.of(), false, id, runner, 0, 0L, false));
    }

    @Test
    void aListedRunnerThatHasNotJoinedIsAskedForItsInfoOnce() {
        assertThat(directory.listing(Set.of("a"))).containsExactly(new AskInfo<>("a"));
        assertThat(directory.listing(Set.of("a"))).isEmpty();
        assertThat(directory.recheck()).isEmpty();
    }

    @Test
    void aRunnerThatAnswersJoinsIsWatchedAndIsNotAskedAgain() {
        directory.listing(Set.of("a"));

        assertThat(directory.joined("a", "node-a", 4)).containsExactly(new Watch<>("a", "node-a", 4));
        assertThat(tasks.hasRunner("a")).isTrue();
        assertThat(directory.joined("a", "node-a", 4)).isEmpty();
        assertThat(directory.listing(Set.of("a"))).isEmpty();
    }

    @Test
    void aRunnerNoLongerListedIsGoneAndItsTasksWaitToBeDispatchedAgain() {
        directory.listing(Set.of("a", "b"));
        directory.joined("a", "node-a", 4);
        directory.joined("b", "node-b", 4);
        dispatch(1, "a");
        dispatch(2, "a");
        dispatch(3, "b");

        List<Step<String>> steps = directory.listing(Set.of("b"));

        assertThat(steps).singleElement().isInstanceOfSatisfying(Gone.class, g -> {
            assertThat(g.runner()).isEqualTo("a");
            assertThat(g.node()).contains("node-a");
            assertThat(g.orphans())
                    .extracting(t -> ((TaskLedger.Task<?>) t).taskId())
                    .containsExactlyInAnyOrder(1L, 2L);
        });
        assertThat(tasks.hasRedispatches()).isTrue();
        assertThat(tasks.hasRunner("a")).isFalse();
    }

    @Test
    void aGoneRunnersTasksAreOrphanedExactlyOnce() {
        directory.listing(Set.of("a"));
        directory.joined("a", "node-a", 4);
        dispatch(1, "a");

        List<Step<String>> first = directory.gone("a"); // its watch fired
        List<Step<String>> second = directory.listing(Set.of()); // then the listing dropped it
        List<Step<String>> third = directory.gone("a"); // and its GetInfo ask failed

        assertThat(first)
                .filteredOn(Gone.class::isInstance)
                .singleElement()
                .satisfies(g -> assertThat(((Gone<?>) g).orphans()).hasSize(1));
        assertThat(second).isEmpty();
        assertThat(third).isEmpty();
        assertThat(tasks.nextToRedispatch()).isPresent();
        assertThat(tasks.nextToRedispatch()).isEmpty();
    }

    @Test
    void aRunnerGoneButStillListedIsAskedAgainAfterTheRecheck() {
        // A node restarted on the same host and port: the removal of its previous incarnation
        // fires the new runner's watch, and no later listing names it again.
        directory.listing(Set.of("a"));
        directory.joined("a", "node-a", 4);

        List<Step<String>> gone = directory.gone("a");

        assertThat(gone).containsExactly(new Recheck<>(), new Gone<>("a", Optional.of("node-a"), List.of()));
        assertThat(directory.recheck()).containsExactly(new AskInfo<>("a"));
        assertThat(directory.joined("a", "node-a", 4)).containsExactly(new Watch<>("a", "node-a", 4));
    }

    @Test
    void aRunnerThatDoesNotAnswerButIsStillListedIsAskedAgainAfterTheRecheck() {
        directory.listing(Set.of("a"));

        assertThat(directory.gone("a")).containsExactly(new Recheck<>());
        assertThat(directory.recheck()).containsExactly(new AskInfo<>("a"));
    }

    @Test
    void aRunnerGoneAndNoLongerListedIsNotRechecked() {
        directory.listing(Set.of("a"));
        directory.joined("a", "node-a", 4);
        directory.listing(Set.of());

        assertThat(directory.gone("a")).isEmpty();
        assertThat(directory.recheck()).isEmpty();
    }

    @Test
    void aRunnerThatNeverJoinedButRunsTasksOfAPredecessorOrphansThemWhenGone() {
        dispatch(1, "a"); // learnt from its holdings during a recovery

        assertThat(directory.gone("a")).singleElement().isInstanceOfSatisfying(Gone.class, g -> {
            assertThat(g.node()).isEmpty();
            assertThat(g.orphans()).hasSize(1);
        });
    }

    static Stream<Arguments> holdings() {
        return Stream.of(
                Arguments.of("listed before holdings are wanted", List.of("a"), List.of()),
                Arguments.of("listed and joined", List.of("a", "b"), List.of("b")),
                Arguments.of("none", List.of(), List.of()));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("holdings")
    void onceHoldingsAreWantedEveryKnownRunnerIsAskedOnce(String name, List<String> listed, List<String> joined) {
        directory.listing(Set.copyOf(listed));
        joined.forEach(r -> directory.joined(r, "node-" + r, 1));

        List<Step<String>> steps = directory.askHoldings();

        assertThat(steps)
                .containsExactlyInAnyOrderElementsOf(listed.stream()
                        .map(r -> (Step<String>) new AskHoldings<>(r))
                        .toList());
        assertThat(directory.askHoldings()).isEmpty();
        assertThat(directory.holdingsAsked()).isEqualTo(listed.size());
    }

    @Test
    void aRunnerListedAfterHoldingsAreWantedIsAskedWhatItHoldsBeforeItsInfo() {
        directory.askHoldings();

        assertThat(directory.listing(Set.of("a"))).containsExactly(new AskHoldings<>("a"), new AskInfo<>("a"));
        assertThat(directory.recheck()).isEmpty();
        assertThat(directory.askHoldings("a")).isEmpty();
    }

    @Test
    void beforeHoldingsAreWantedNoRunnerIsAskedWhatItHolds() {
        assertThat(directory.listing(Set.of("a"))).containsExactly(new AskInfo<>("a"));
        assertThat(directory.askHoldings("a")).isEmpty();
        assertThat(directory.holdingsAsked()).isZero();
    }
}
