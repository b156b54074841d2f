package org.rollout.cluster;

import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.function.Supplier;
import org.apache.pekko.actor.typed.ActorRef;
import org.rollout.cluster.TaskLedger.Task;
import org.slf4j.Logger;

/**
 * Carries out the coordinator's admissions ({@link AdmissionPlanner}): the tasks to dispatch are
 * written to the ledger first, then each goes to its runner, unless it finished or was dispatched
 * again meanwhile. A task whose runner's node is no longer known waits to be dispatched again.
 */
final class Dispatches {

    private final AdmissionPlanner<ActorRef<GroupRunner.Command>> planner;
    private final TaskLedger<ActorRef<GroupRunner.Command>> tasks;
    private final LedgerWriter ledger;
    private final Supplier<ActorRef<Collector.Command>> collector;
    private final Logger log;

    Dispatches(
            AdmissionPlanner<ActorRef<GroupRunner.Command>> planner,
            TaskLedger<ActorRef<GroupRunner.Command>> tasks,
            LedgerWriter ledger,
            Supplier<ActorRef<Collector.Command>> collector,
            Logger log) {
        this.planner = planner;
        this.tasks = tasks;
        this.ledger = ledger;
        this.collector = collector;
        this.log = log;
    }

    /** Dispatches re-dispatches first, then evaluation and training, as far as limits allow. */
    void admit() {
        AdmissionPlanner.Admission<ActorRef<GroupRunner.Command>> admission = planner.admit();
        if (admission.promptsRanOut()) {
            log.info("training prompts exhausted after {} prompts", planner.trainTaken());
        }
        if (admission.dispatches().isEmpty()) {
            return;
        }
        List<DurableState.OpenTask> written = new ArrayList<>();
        for (AdmissionPlanner.Dispatch<ActorRef<GroupRunner.Command>> d : admission.dispatches()) {
            written.add(d.task().entry(false));
        }
        // Written before it is sent: a task on a lost node is always in the ledger.
        ledger.write(written, List.of(), () -> admission.dispatches().forEach(d -> send(d.task())));
    }

    private void send(Task<ActorRef<GroupRunner.Command>> f) {
        if (!tasks.isCurrent(f)) {
            return; // finished or dispatched again while the write was on its way
        }
        Optional<String> node = tasks.node(f.runner());
        if (node.isEmpty()) {
            tasks.redispatchLater(f);
            admit();
            return;
        }
        TaskJournal.dispatched(f.taskId(), f.attempt(), f.isEval(), f.sourceIndex(), f.dispatchVersion(), node.get());
        f.runner()
                .tell(new GroupRunner.RunGroup(
                        f.taskId(), f.attempt(), f.data(), f.isEval(), f.dispatchVersion(), collector.get()));
    }
}
