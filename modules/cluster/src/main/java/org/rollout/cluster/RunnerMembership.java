package org.rollout.cluster;

import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.function.Supplier;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.javadsl.ActorContext;
import org.apache.pekko.actor.typed.javadsl.TimerScheduler;
import org.rollout.cluster.RolloutCoordinator.HoldingsReceived;
import org.rollout.cluster.RolloutCoordinator.RecheckRunners;
import org.rollout.cluster.RolloutCoordinator.RunnerGone;
import org.rollout.cluster.RolloutCoordinator.RunnerJoined;
import org.rollout.cluster.RunnerDirectory.AskHoldings;
import org.rollout.cluster.RunnerDirectory.AskInfo;
import org.rollout.cluster.RunnerDirectory.Gone;
import org.rollout.cluster.RunnerDirectory.Recheck;
import org.rollout.cluster.RunnerDirectory.Step;
import org.rollout.cluster.RunnerDirectory.Watch;

/**
 * The coordinator's side of runner membership: feeds listings, answers and losses to its {@link
 * RunnerDirectory} and carries out the steps it returns (asks, watches, the recheck timer, log
 * lines). Used by both of the coordinator's behaviours, recovering and admitting.
 */
final class RunnerMembership {

    /** How long a listed runner that was lost here waits before the listing is looked at again. */
    static final Duration RECHECK_RUNNERS_AFTER = Duration.ofSeconds(2);

    private static final Duration INFO_TIMEOUT = Duration.ofSeconds(10);

    private final ActorContext<RolloutCoordinator.Command> ctx;
    private final TimerScheduler<RolloutCoordinator.Command> timers;
    private final RunnerDirectory<ActorRef<GroupRunner.Command>> directory;
    private final Supplier<ActorRef<Collector.Command>> collector;
    /** The trainer rank whose tasks the coordinator runs: its share of each runner's capacity. */
    private final RankShare share;

    private final Duration holdingsTimeout;

    /**
     * @param collector the collector known now, named in a {@link GroupRunner.GetHoldings}
     * @param holdingsTimeout how long a runner has to say what it holds
     * @param share the trainer rank whose tasks runners are asked about, and its share of each
     *     runner's capacity
     */
    RunnerMembership(
            ActorContext<RolloutCoordinator.Command> ctx,
            TimerScheduler<RolloutCoordinator.Command> timers,
            RunnerDirectory<ActorRef<GroupRunner.Command>> directory,
            Supplier<ActorRef<Collector.Command>> collector,
            Duration holdingsTimeout,
            RankShare share) {
        this.ctx = ctx;
        this.timers = timers;
        this.directory = directory;
        this.collector = collector;
        this.share = share;
        this.holdingsTimeout = holdingsTimeout;
    }

    /** The Receptionist listed {@code runners}. */
    void listing(Set<ActorRef<GroupRunner.Command>> runners) {
        carryOut(directory.listing(runners));
    }

    /** The recheck timer fired. */
    void recheck() {
        carryOut(directory.recheck());
    }

    void joined(GroupRunner.Info info) {
        carryOut(directory.joined(info.runner(), info.node(), share.capacity(info.capacity())));
    }

    void gone(ActorRef<GroupRunner.Command> runner) {
        carryOut(directory.gone(runner));
    }

    /** Asks every runner known, and from now on every runner listed, what it holds. */
    void askHoldings() {
        carryOut(directory.askHoldings());
    }

    /** Asks {@code runner} what it holds, when holdings are wanted and it was not asked yet. */
    void askHoldings(ActorRef<GroupRunner.Command> runner) {
        carryOut(directory.askHoldings(runner));
    }

    /** How many runners were asked what they hold. */
    int holdingsAsked() {
        return directory.holdingsAsked();
    }

    private void carryOut(List<Step<ActorRef<GroupRunner.Command>>> steps) {
        for (Step<ActorRef<GroupRunner.Command>> step : steps) {
            switch (step) {
                case AskInfo<ActorRef<GroupRunner.Command>> ask -> {
                    ActorRef<GroupRunner.Command> r = ask.runner();
                    ctx.ask(
                            GroupRunner.Info.class,
                            r,
                            INFO_TIMEOUT,
                            GroupRunner.GetInfo::new,
                            (info, error) -> info != null ? new RunnerJoined(info) : new RunnerGone(r));
                }
                case AskHoldings<ActorRef<GroupRunner.Command>> ask -> {
                    ActorRef<GroupRunner.Command> r = ask.runner();
                    ActorRef<Collector.Command> to = collector.get();
                    ctx.ask(
                            GroupRunner.Holdings.class,
                            r,
                            holdingsTimeout,
                            reply -> new GroupRunner.GetHoldings(to, share.rank(), share.ranks(), reply),
                            (h, error) -> new HoldingsReceived(r, h));
                }
                case Watch<ActorRef<GroupRunner.Command>> w -> {
                    ctx.watchWith(w.runner(), new RunnerGone(w.runner()));
                    ctx.getLog().info("runner on {} joined with capacity {}", w.node(), w.capacity());
                }
                case Recheck<ActorRef<GroupRunner.Command>> r ->
                    timers.startSingleTimer(RecheckRunners.class, new RecheckRunners(), RECHECK_RUNNERS_AFTER);
                case Gone<ActorRef<GroupRunner.Command>> g ->
                    ctx.getLog()
                            .warn(
                                    "runner on {} is gone with {} task(s) in flight; dispatching them again",
                                    g.node().orElse(g.runner().path().address().toString()),
                                    g.orphans().size());
            }
        }
    }
}
