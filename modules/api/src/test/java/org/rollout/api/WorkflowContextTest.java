package org.rollout.api;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.net.http.HttpClient;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

class WorkflowContextTest {
    private static final long DEADLINE_SECONDS = 30;

    private static WorkflowContext slot(long task, int sample) {
        return WorkflowContext.builder()
                .taskId(task)
                .sampleIdx(sample)
                .groupSize(4)
                .build();
    }

    @Test
    void outsideAnyTaskTheContextIsEmpty() {
        WorkflowContext c = WorkflowContext.current();
        assertThat(c).isSameAs(WorkflowContext.empty());
        assertThat(c.isEval()).isFalse();
        assertThat(c.taskId()).isEmpty();
        assertThat(c.sampleIdx()).isEmpty();
        assertThat(c.groupSize()).isEqualTo(1);
        assertThat(c.attempt()).isZero();
        assertThat(c.statScope()).isEqualTo("rollout");
        assertThat(c.episodeKey()).isEmpty();
    }

    @Test
    void callWithBindsTheContextAndRestoresTheEmptyOne() throws Exception {
        WorkflowContext c = slot(7, 3);
        assertThat(WorkflowContext.callWith(c, WorkflowContext::current)).isSameAs(c);
        assertThat(WorkflowContext.current()).isSameAs(WorkflowContext.empty());
    }

    @Test
    void nestedCallWithRestoresTheOuterContext() throws Exception {
        WorkflowContext outer = slot(1, 0);
        WorkflowContext inner = slot(2, 1);
        List<WorkflowContext> seen = new ArrayList<>();
        WorkflowContext.callWith(outer, () -> {
            seen.add(WorkflowContext.current());
            WorkflowContext.callWith(inner, () -> seen.add(WorkflowContext.current()));
            seen.add(WorkflowContext.current());
            return null;
        });
        assertThat(seen).containsExactly(outer, inner, outer);
    }

    @Test
    void callWithRestoresWhenTheBodyThrows() {
        assertThatThrownBy(() -> WorkflowContext.callWith(slot(1, 0), () -> {
                    throw new IllegalStateException("boom");
                }))
                .hasMessage("boom");
        assertThat(WorkflowContext.current()).isSameAs(WorkflowContext.empty());
    }

    @Test
    void callWithRejectsANullContext() {
        assertThatThrownBy(() -> WorkflowContext.callWith(null, () -> 1)).hasMessage("context");
    }

    @Test
    void threadsStartedInsideInheritTheContext() throws Exception {
        WorkflowContext c = slot(9, 2);
        AtomicReference<WorkflowContext> platform = new AtomicReference<>();
        AtomicReference<WorkflowContext> virtual = new AtomicReference<>();
        WorkflowContext.callWith(c, () -> {
            Thread p = new Thread(() -> platform.set(WorkflowContext.current()));
            Thread v = Thread.ofVirtual().unstarted(() -> virtual.set(WorkflowContext.current()));
            p.start();
            v.start();
            p.join(TimeUnit.SECONDS.toMillis(DEADLINE_SECONDS));
            v.join(TimeUnit.SECONDS.toMillis(DEADLINE_SECONDS));
            return null;
        });
        assertThat(platform.get()).isSameAs(c);
        assertThat(virtual.get()).isSameAs(c);
    }

    @Test
    void threadsStartedOutsideSeeTheEmptyContext() throws Exception {
        CompletableFuture<WorkflowContext> other = new CompletableFuture<>();
        Thread t = new Thread(() -> other.complete(WorkflowContext.current()));
        WorkflowContext.callWith(slot(1, 0), () -> {
            t.start();
            return null;
        });
        // Inheritance happens when a thread is created, not when it starts.
        assertThat(other.get(DEADLINE_SECONDS, TimeUnit.SECONDS)).isSameAs(WorkflowContext.empty());
    }

    @Test
    void episodeKeyIsTaskAndSlot() {
        assertThat(slot(7, 3).episodeKey()).isEqualTo("7:3");
        assertThat(WorkflowContext.builder().taskId(7).build().episodeKey()).isEqualTo("7");
    }

    @Test
    void statScopeIsEvalRolloutForEvaluation() {
        assertThat(WorkflowContext.builder().isEval(true).build().statScope()).isEqualTo("eval-rollout");
        assertThat(WorkflowContext.builder().isEval(false).build().statScope()).isEqualTo("rollout");
    }

    @Test
    void groupCacheOutsideAGroupIsAnError() {
        assertThatThrownBy(() -> WorkflowContext.empty().groupCache())
                .isInstanceOf(IllegalStateException.class)
                .hasMessage("no group cache: this code is not running inside a rollout group");
    }

    @Test
    void groupCacheInsideAGroupIsTheGroupsOwn() {
        GroupCache cache = GroupCache.create();
        assertThat(WorkflowContext.builder().groupCache(cache).build().groupCache())
                .isSameAs(cache);
    }

    @Test
    void theDefaultHttpClientIsSharedAndAGivenOneIsUsed() {
        HttpClient shared = WorkflowContext.empty().httpClient();
        assertThat(slot(1, 0).httpClient()).isSameAs(shared);
        HttpClient own = HttpClient.newHttpClient();
        assertThat(WorkflowContext.builder().httpClient(own).build().httpClient())
                .isSameAs(own);
    }

    @Test
    void statsGoToTheGivenRecorderAndOtherwiseNowhere() {
        List<String> recorded = new ArrayList<>();
        WorkflowContext.builder()
                .stats((key, value) -> recorded.add(key + "=" + value))
                .build()
                .stats()
                .scalar("reward", 1.5);
        WorkflowContext.empty().stats().scalar("reward", 1.0);
        assertThat(recorded).containsExactly("reward=1.5");
    }

    @Test
    void builderValidatesGroupSizeSlotAttemptAndTask() {
        assertThatThrownBy(() -> WorkflowContext.builder().groupSize(0).build())
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("group_size must be >= 1, got 0");
        assertThatThrownBy(() ->
                        WorkflowContext.builder().groupSize(2).sampleIdx(2).build())
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("sample_idx 2 out of range for group_size 2");
        assertThatThrownBy(() -> WorkflowContext.builder().attempt(-1).build())
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("attempt must be >= 0, got -1");
        assertThatThrownBy(() -> WorkflowContext.builder().taskId(-1))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("task_id must be >= 0, got -1");
        assertThatThrownBy(() -> WorkflowContext.builder().sampleIdx(-1))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("sample_idx must be >= 0, got -1");
    }

    @Test
    void builderSetsEveryField() {
        WorkflowContext c = WorkflowContext.builder()
                .isEval(true)
                .taskId(5)
                .sampleIdx(1)
                .groupSize(2)
                .attempt(3)
                .build();
        assertThat(c.isEval()).isTrue();
        assertThat(c.taskId()).hasValue(5);
        assertThat(c.sampleIdx()).hasValue(1);
        assertThat(c.groupSize()).isEqualTo(2);
        assertThat(c.attempt()).isEqualTo(3);
        assertThat(c).hasToString("WorkflowContext{is_eval=true, task_id=5, sample_idx=1, group_size=2, attempt=3}");
        assertThat(WorkflowContext.empty())
                .hasToString("WorkflowContext{is_eval=false, task_id=none, sample_idx=none, group_size=1, attempt=0}");
    }
}
