package org.rollout.api;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

class GroupCacheTest {
    private static final long DEADLINE_SECONDS = 30;

    /** Counts its closes; optionally fails them. */
    static final class Resource implements AutoCloseable {
        final AtomicInteger closes = new AtomicInteger();
        private final boolean failOnClose;

        Resource(boolean failOnClose) {
            this.failOnClose = failOnClose;
        }

        @Override
        public void close() throws IOException {
            closes.incrementAndGet();
            if (failOnClose) {
                throw new IOException("sandbox did not stop");
            }
        }
    }

    @Test
    void computeIfAbsentCreatesOnceUnderEightConcurrentCallers() throws Exception {
        GroupCache cache = GroupCache.create();
        AtomicInteger created = new AtomicInteger();
        CyclicBarrier start = new CyclicBarrier(8);
        ExecutorService pool = Executors.newFixedThreadPool(8);
        try {
            List<Future<Object>> results = new ArrayList<>();
            for (int i = 0; i < 8; i++) {
                results.add(pool.submit(() -> {
                    start.await(DEADLINE_SECONDS, TimeUnit.SECONDS);
                    return cache.computeIfAbsent("problem", () -> {
                        created.incrementAndGet();
                        return new Object();
                    });
                }));
            }
            Object first = results.get(0).get(DEADLINE_SECONDS, TimeUnit.SECONDS);
            for (Future<Object> f : results) {
                assertThat(f.get(DEADLINE_SECONDS, TimeUnit.SECONDS)).isSameAs(first);
            }
        } finally {
            pool.shutdownNow();
        }
        assertThat(created).hasValue(1);
        assertThat(cache.size()).isEqualTo(1);
    }

    @Test
    void getAndPutReadAndReplaceValues() {
        GroupCache cache = GroupCache.create();
        assertThat((Object) cache.get("k")).isNull();
        cache.put("k", "v1");
        cache.put("k", "v2");
        assertThat((String) cache.get("k")).isEqualTo("v2");
        assertThat((String) cache.computeIfAbsent("k", () -> "unused")).isEqualTo("v2");
    }

    @Test
    void aFactoryReturningNullIsAnErrorNamingTheKey() {
        assertThatThrownBy(() -> GroupCache.create().computeIfAbsent("tests", () -> null))
                .isInstanceOf(NullPointerException.class)
                .hasMessage("group cache value for 'tests'");
    }

    @Test
    void releaseClosesEveryCloseableValueOnce() {
        GroupCache cache = GroupCache.create();
        Resource a = new Resource(false);
        Resource b = new Resource(false);
        cache.put("a", a);
        cache.computeIfAbsent("b", () -> b);
        cache.put("plain", "not closeable");

        assertThat(cache.release()).isEmpty();
        assertThat(cache.release()).isEmpty();
        cache.close();

        assertThat(a.closes).hasValue(1);
        assertThat(b.closes).hasValue(1);
        assertThat(cache.isClosed()).isTrue();
        assertThat(cache.size()).isZero();
    }

    @Test
    void releaseReportsCloseFailuresNamingTheKeyAndStillClosesTheRest() {
        GroupCache cache = GroupCache.create();
        Resource bad = new Resource(true);
        Resource good = new Resource(false);
        cache.put("sandbox", bad);
        cache.put("db", good);

        List<Exception> failures = cache.release();

        assertThat(failures).singleElement().satisfies(e -> {
            assertThat(e)
                    .hasMessage(
                            "closing group cache value 'sandbox' failed: java.io.IOException: sandbox did not stop");
            assertThat(e).hasCauseInstanceOf(IOException.class);
        });
        assertThat(good.closes).hasValue(1);
    }

    @Test
    void closeDoesNotThrowTheFailures() {
        GroupCache cache = GroupCache.create();
        Resource bad = new Resource(true);
        cache.put("sandbox", bad);
        cache.close();
        assertThat(bad.closes).hasValue(1);
    }

    @Test
    void useAfterReleaseFailsNamingTheKey() {
        GroupCache cache = GroupCache.create();
        cache.release();
        String message = "group cache is released (the group has ended); key 'tests'";
        assertThatThrownBy(() -> cache.computeIfAbsent("tests", Object::new))
                .isInstanceOf(IllegalStateException.class)
                .hasMessage(message);
        assertThatThrownBy(() -> cache.get("tests"))
                .isInstanceOf(IllegalStateException.class)
                .hasMessage(message);
        assertThatThrownBy(() -> cache.put("tests", 1))
                .isInstanceOf(IllegalStateException.class)
                .hasMessage(message);
    }

    @Test
    void aValueCreatedWhileTheCacheIsReleasedIsClosedAndNotHandedOut() throws Exception {
        GroupCache cache = GroupCache.create();
        Resource late = new Resource(false);
        CountDownLatch inFactory = new CountDownLatch(1);
        ExecutorService pool = Executors.newSingleThreadExecutor();
        try {
            Future<Object> creating = pool.submit(() -> cache.computeIfAbsent("sandbox", () -> {
                inFactory.countDown();
                // The group ends while this slot is still creating its value.
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(DEADLINE_SECONDS);
                while (!cache.isClosed()) {
                    if (System.nanoTime() > deadline) {
                        throw new AssertionError("release() was not called within the deadline");
                    }
                    Thread.onSpinWait();
                }
                return late;
            }));
            assertThat(inFactory.await(DEADLINE_SECONDS, TimeUnit.SECONDS)).isTrue();
            List<Exception> failures = cache.release();

            assertThatThrownBy(() -> creating.get(DEADLINE_SECONDS, TimeUnit.SECONDS))
                    .hasCauseInstanceOf(IllegalStateException.class)
                    .cause()
                    .hasMessage("group cache is released (the group has ended); key 'sandbox'");
            assertThat(failures).isEmpty();
            assertThat(late.closes).hasValue(1);
            assertThat(cache.size()).isZero();
        } finally {
            pool.shutdownNow();
        }
    }

    @Test
    void aValuePutWhileTheCacheIsReleasedIsClosed() {
        GroupCache cache = GroupCache.create();
        Resource r = new Resource(false);
        cache.release();
        assertThatThrownBy(() -> cache.put("k", r)).isInstanceOf(IllegalStateException.class);
        assertThat(r.closes).hasValue(0); // refused before it was stored: the caller still owns it
    }
}
