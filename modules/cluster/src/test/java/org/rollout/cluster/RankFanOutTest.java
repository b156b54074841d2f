package org.rollout.cluster;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.List;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.testkit.typed.javadsl.TestProbe;
import org.apache.pekko.actor.typed.ActorRef;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;

/** The weight version's pause and resume reach every trainer rank's coordinator. */
class RankFanOutTest {
    private static final ActorTestKit kit = ActorTestKit.create();
    private static final Duration WAIT = Duration.ofSeconds(10);

    @AfterAll
    static void shutdown() {
        kit.shutdownTestKit();
    }

    @Test
    void aPauseReachesEveryRankAndAResumeIsConfirmedOnlyOnceEveryRankAdmitsAtTheLowestVersion() {
        TestProbe<RolloutCoordinator.Command> rank0 = kit.createTestProbe();
        TestProbe<RolloutCoordinator.Command> rank1 = kit.createTestProbe();
        ActorRef<RolloutCoordinator.Command> fanOut =
                kit.spawn(RankFanOut.create(List.of(rank0.getRef(), rank1.getRef())));
        fanOut.tell(new RolloutCoordinator.PauseAdmission(7));
        assertThat(rank0.expectMessageClass(RolloutCoordinator.PauseAdmission.class, WAIT)
                        .updateId())
                .isEqualTo(7);
        assertThat(rank1.expectMessageClass(RolloutCoordinator.PauseAdmission.class, WAIT)
                        .updateId())
                .isEqualTo(7);

        TestProbe<Integer> publisher = kit.createTestProbe();
        fanOut.tell(new RolloutCoordinator.ResumeAdmission(7, 3, publisher.getRef()));
        RolloutCoordinator.ResumeAdmission at0 =
                rank0.expectMessageClass(RolloutCoordinator.ResumeAdmission.class, WAIT);
        RolloutCoordinator.ResumeAdmission at1 =
                rank1.expectMessageClass(RolloutCoordinator.ResumeAdmission.class, WAIT);
        assertThat(at0.version()).isEqualTo(3);
        at0.replyTo().tell(3);
        publisher.expectNoMessage(Duration.ofMillis(200));
        at1.replyTo().tell(3);
        assertThat(publisher.receiveMessage(WAIT)).isEqualTo(3);
    }
}
