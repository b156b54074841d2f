package org.rollout.modelserver;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.LockSupport;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Continuous batching on one thread, the way SGLang's scheduler works.
 *
 * <pre>
 *   handler threads ──submit──► waiting ──admit (prefill + first token)──► running ──► finished
 *        │  wait on Generation.result                                   one token per step  │
 *        └──control (pause, continue, abort, swap weights) ─► commands, run between steps ◄─┘
 * </pre>
 *
 * <p>Each loop iteration runs the queued control commands, then, unless paused, one step: admit
 * waiting requests up to {@code max_running_requests}, decode one token for every running
 * sequence, and, with a {@link LatencyModel}, park until the modelled step time has passed before
 * delivering the step's finished results. Because commands only run between steps, a weight swap
 * or an abort is atomic with respect to decoding: no token is ever produced half under old weights.
 *
 * <p>Pause modes follow SGLang: {@code abort} finishes every running and waiting request with
 * {@code abort} (partial output; "Abort before prefill" and no tokens for requests not yet
 * admitted) and then holds new requests in the queue; {@code in_place} keeps running sequences
 * where they are and holds new requests, and {@link #resume()} carries on with both.
 *
 * <p>Prefix cache ({@link RadixCache}): on admission a request's longest cached prompt prefix is
 * looked up and its prompt inserted, and only the uncached prompt tokens are charged to the step's
 * prefill; when it ends, its computed sequence is inserted (an abort after prefill included, as in
 * SGLang). The cache changes no output: the model always computes its whole context. A weight swap
 * flushes it.
 *
 * <p>Every submitted generation ends exactly once: its {@link Generation#result} completes with a
 * result (stop, length or abort), or exceptionally with the cause when its decoding failed or the
 * server crashed. Thread-safe: all public methods may be called from any thread.
 */
final class GenerationScheduler {
    private static final Logger log = LoggerFactory.getLogger(GenerationScheduler.class);
    private static final int V = TinyLmWeights.VOCAB_SIZE;
    static final String ABORT_BEFORE_PREFILL = "Abort before prefill";

    private final ReentrantLock lock = new ReentrantLock();
    private final Condition wake = lock.newCondition();
    // Guarded by lock.
    private final ArrayDeque<Generation> waiting = new ArrayDeque<>();
    private final ArrayDeque<Runnable> commands = new ArrayDeque<>();
    private boolean paused;
    private String pauseMode = "none";
    private volatile boolean stopping;

    // Scheduler-thread confined.
    private final List<Generation> running = new ArrayList<>();
    private final TokenSampler sampler = new TokenSampler();
    private final double[] logits = new double[V];
    private final double[] distribution = new double[V];
    private TinyLmWeights weights;

    private volatile TinyLmWeights servedWeights;
    private volatile int runningCount;
    private final ConcurrentHashMap<String, Generation> inFlight = new ConcurrentHashMap<>();
    private final LatencyModel latency;
    private final int maxRunning;
    private final Thread thread;
    private final long startNanos = System.nanoTime();
    private final AtomicLong requestsTotal = new AtomicLong();
    private final AtomicLong requestsFinished = new AtomicLong();
    private final AtomicLong requestsAborted = new AtomicLong();
    private final AtomicLong tokensGenerated = new AtomicLong();
    private final AtomicLong prefillTokensTotal = new AtomicLong();
    private final AtomicLong busyNanos = new AtomicLong();

    private final SimulatedLengths simulatedLengths;
    private final RadixCache prefixCache;

    GenerationScheduler(TinyLmWeights initial, LatencyModel latency, int maxRunning, String name) {
        this(initial, latency, maxRunning, null, 0, name);
    }

    /**
     * @param outputLengths simulated output lengths, or null for the model's own stopping
     * @param prefixCacheTokens the prefix cache's capacity in tokens; 0 for none
     */
    GenerationScheduler(
            TinyLmWeights initial,
            LatencyModel latency,
            int maxRunning,
            OutputLengths outputLengths,
            int prefixCacheTokens,
            String name) {
        this.prefixCache = new RadixCache(prefixCacheTokens);
        this.simulatedLengths = outputLengths == null ? null : new SimulatedLengths(outputLengths);
        this.weights = initial;
        this.servedWeights = initial;
        this.latency = latency;
        this.maxRunning = maxRunning;
        this.thread = Thread.ofPlatform().name(name).daemon(true).unstarted(this::run);
    }

    void start() {
        thread.start();
    }

    /** A rid that is already being generated. */
    static final class DuplicateRidException extends RuntimeException {
        DuplicateRidException(String rid) {
            super("rid '" + rid + "' is already in flight on this server");
        }
    }

    /** The server is closing or has crashed; nothing new is accepted. */
    static final class StoppedException extends IllegalStateException {
        StoppedException(String what) {
            super(what);
        }
    }

    /**
     * Queues {@code g}; while paused it waits in the queue until {@link #resume()}.
     *
     * @throws DuplicateRidException when a generation with the same rid is in flight
     * @throws StoppedException when the scheduler is stopping
     */
    CompletableFuture<GenerationResult> submit(Generation g) {
        if (inFlight.putIfAbsent(g.rid, g) != null) {
            throw new DuplicateRidException(g.rid);
        }
        lock.lock();
        try {
            if (stopping) {
                inFlight.remove(g.rid, g);
                throw new StoppedException("the model server is shutting down; rid '" + g.rid + "' was not accepted");
            }
            waiting.add(g);
            requestsTotal.incrementAndGet();
            wake.signalAll();
        } finally {
            lock.unlock();
        }
        return g.result;
    }

    /** Pauses in {@code abort} or {@code in_place} mode; completes when the pause is in force. */
    CompletableFuture<Integer> pause(boolean abortInFlight) {
        return onScheduler(() -> {
            int aborted = abortInFlight ? abortEverything("Aborted by pause_generation") : 0;
            lock.lock();
            try {
                paused = true;
                pauseMode = abortInFlight ? "abort" : "in_place";
            } finally {
                lock.unlock();
            }
            return aborted;
        });
    }

    /**
     * Lifts a pause; held and running requests carry on. When the scheduler is not paused and no
     * command waits (a weight update's continue after a load that needed no pause), there is
     * nothing to lift and it answers at once, without waking the scheduler thread: the same answer,
     * since a pause that has answered is already in force and one still queued keeps this on the
     * queue behind it.
     */
    CompletableFuture<Void> resume() {
        lock.lock();
        try {
            if (!paused && !stopping && commands.isEmpty()) {
                return CompletableFuture.completedFuture(null);
            }
        } finally {
            lock.unlock();
        }
        return onScheduler(() -> {
            lock.lock();
            try {
                paused = false;
                pauseMode = "none";
            } finally {
                lock.unlock();
            }
            return null;
        });
    }

    /** Aborts the request with {@code rid}, if any; completes with whether one was found. */
    CompletableFuture<Boolean> abort(String rid) {
        return onScheduler(() -> {
            Generation g = inFlight.get(rid);
            return g != null && abortOne(g, "Aborted by abort_request");
        });
    }

    /** Aborts {@code g} (its client went away); no-op when it has finished. */
    CompletableFuture<Boolean> abort(Generation g, String message) {
        return onScheduler(() -> abortOne(g, message));
    }

    /** Aborts every running and waiting request; completes with how many. */
    CompletableFuture<Integer> abortAllRequests(String why) {
        return onScheduler(() -> abortEverything(why));
    }

    /**
     * Serves {@code next} from the next step on, after aborting everything in flight when {@code
     * abortAll}; completes with the number of aborted requests.
     */
    CompletableFuture<Integer> swapWeights(TinyLmWeights next, boolean abortAll) {
        return onScheduler(() -> {
            int aborted = abortAll ? abortEverything("Aborted by a weight update") : 0;
            weights = next;
            servedWeights = next;
            // Every cached KV entry was computed with the old weights.
            prefixCache.flush();
            return aborted;
        });
    }

    /** The weights the next step uses (or the step in progress). */
    TinyLmWeights weights() {
        return servedWeights;
    }

    PrefixCacheStats prefixCacheStats() {
        return prefixCache.stats();
    }

    ModelServerStats stats(int hungRequests) {
        int queued;
        boolean p;
        String mode;
        lock.lock();
        try {
            queued = waiting.size();
            p = paused;
            mode = pauseMode;
        } finally {
            lock.unlock();
        }
        long elapsed = Math.max(1, System.nanoTime() - startNanos);
        return new ModelServerStats(
                runningCount,
                queued,
                p,
                mode,
                servedWeights.version(),
                requestsTotal.get(),
                requestsFinished.get(),
                requestsAborted.get(),
                tokensGenerated.get(),
                prefillTokensTotal.get(),
                hungRequests,
                Math.min(1.0, busyNanos.get() / (double) elapsed),
                elapsed / 1e9);
    }

    /**
     * Graceful stop: every request in flight is answered with {@code abort} ("server shutting
     * down"), then the thread ends. Waits for the thread at most {@code timeoutMillis}.
     */
    void close(long timeoutMillis) throws InterruptedException {
        if (!stopping) {
            CompletableFuture<Integer> drained = abortAllRequests("Aborted: the model server is shutting down");
            try {
                drained.get(timeoutMillis, TimeUnit.MILLISECONDS);
            } catch (ExecutionException | TimeoutException e) {
                log.warn("model server scheduler did not drain within {} ms: {}", timeoutMillis, e.toString());
            }
        }
        halt();
        thread.join(timeoutMillis);
        failLeftovers(new StoppedException("the model server closed"));
    }

    /** Abrupt stop: the thread ends at once; every request in flight fails with {@code cause}. */
    void crash(RuntimeException cause) throws InterruptedException {
        halt();
        thread.join(10_000);
        failLeftovers(cause);
    }

    private void halt() {
        lock.lock();
        try {
            stopping = true;
            wake.signalAll();
        } finally {
            lock.unlock();
        }
        LockSupport.unpark(thread);
    }

    private void failLeftovers(RuntimeException cause) {
        List<Runnable> pending;
        lock.lock();
        try {
            pending = new ArrayList<>(commands);
            commands.clear();
            waiting.clear();
        } finally {
            lock.unlock();
        }
        if (!thread.isAlive()) {
            running.clear(); // the thread has ended: its confinement is over
        }
        for (Generation g : inFlight.values()) {
            g.result.completeExceptionally(cause);
        }
        inFlight.clear();
        runningCount = 0;
        for (Runnable r : pending) {
            if (r instanceof Command<?> c) {
                c.future.completeExceptionally(cause);
            }
        }
    }

    /** A control action run by the scheduler thread between steps. */
    private static final class Command<T> implements Runnable {
        final Supplier<T> action;
        final CompletableFuture<T> future = new CompletableFuture<>();

        Command(Supplier<T> action) {
            this.action = action;
        }

        @Override
        public void run() {
            try {
                future.complete(action.get());
            } catch (RuntimeException | Error e) {
                future.completeExceptionally(e);
            }
        }
    }

    private <T> CompletableFuture<T> onScheduler(Supplier<T> action) {
        Command<T> c = new Command<>(action);
        lock.lock();
        try {
            if (stopping) {
                c.future.completeExceptionally(new StoppedException("the model server is shutting down"));
            } else {
                commands.add(c);
                wake.signalAll();
            }
        } finally {
            lock.unlock();
        }
        return c.future;
    }

    private void run() {
        try {
            while (true) {
                List<Runnable> batch = new ArrayList<>();
                lock.lock();
                try {
                    while (!stopping && commands.isEmpty() && (paused || (running.isEmpty() && waiting.isEmpty()))) {
                        wake.await();
                    }
                    if (stopping) {
                        return;
                    }
                    batch.addAll(commands);
                    commands.clear();
                } finally {
                    lock.unlock();
                }
                for (Runnable r : batch) {
                    r.run();
                }
                step();
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (RuntimeException | Error e) {
            log.error("model server scheduler failed; failing every request in flight", e);
            stopping = true;
            failLeftovers(new IllegalStateException("the model server scheduler failed: " + e, e));
        }
    }

    private void step() {
        long t0 = System.nanoTime();
        List<Generation> admitted = new ArrayList<>();
        lock.lock();
        try {
            if (paused || stopping) {
                return;
            }
            while (running.size() + admitted.size() < maxRunning && !waiting.isEmpty()) {
                admitted.add(waiting.poll());
            }
        } finally {
            lock.unlock();
        }
        if (admitted.isEmpty() && running.isEmpty()) {
            return;
        }
        TinyLmWeights w = weights;
        List<Generation> done = new ArrayList<>();
        int prefillTokens = 0;
        for (Generation g : admitted) {
            g.prefill(w.decay());
            g.scorePrompt(w);
            g.prefixLease = prefixCache.admit(g.prefixNamespace(), g.prompt, g.reusablePrefix());
            prefillTokens += g.prompt.length - g.cachedTokens();
            if (simulatedLengths != null) {
                g.simulatedEnd = simulatedLengths.endOf(g.rid, g.prompt.length);
            }
            if (g.params.maxNewTokens() == 0) {
                g.finish = new FinishReason.Length(0);
                done.add(g);
            } else {
                running.add(g);
            }
        }
        int decoding = running.size();
        for (Iterator<Generation> it = running.iterator(); it.hasNext(); ) {
            Generation g = it.next();
            try {
                decodeOne(g, w);
            } catch (RuntimeException e) {
                it.remove();
                inFlight.remove(g.rid, g);
                releasePrefix(g, false);
                log.error("decoding rid '{}' failed after {} tokens", g.rid, g.length, e);
                g.result.completeExceptionally(new IllegalStateException(
                        "decoding rid '" + g.rid + "' failed after " + g.length + " tokens: " + e, e));
                continue;
            }
            if (g.finish != null) {
                it.remove();
                done.add(g);
            }
        }
        tokensGenerated.addAndGet(decoding);
        prefillTokensTotal.addAndGet(prefillTokens);
        runningCount = running.size();
        if (!latency.isNone()) {
            parkUntil(t0 + latency.stepNanos(prefillTokens, decoding));
        }
        busyNanos.addAndGet(System.nanoTime() - t0);
        for (Generation g : done) {
            complete(g);
        }
    }

    private void parkUntil(long deadline) {
        long left;
        while (!stopping && (left = deadline - System.nanoTime()) > 0) {
            LockSupport.parkNanos(this, left);
        }
    }

    /** Samples one token for {@code g} and decides, in SGLang's order, whether it is finished. */
    private void decodeOne(Generation g, TinyLmWeights served) {
        SamplingParams p = g.params;
        TinyLm.logits(g.weightsUnder(served), g.context, logits);
        if (g.counts != null) {
            double penalty = p.frequencyPenalty();
            for (int j = 0; j < V; j++) {
                logits[j] -= penalty * g.counts[j];
            }
        }
        if (g.length < p.minNewTokens()) {
            logits[SamplingParams.EOS] = Double.NEGATIVE_INFINITY;
            for (int id : p.stopTokenIds()) {
                logits[id] = Double.NEGATIVE_INFINITY;
            }
        }
        int token = sampler.sample(logits, p.temperature(), p.topK(), p.topP(), g.random);
        g.append(token, sampler.lastLogprob());
        if (g.sampledAlternatives > 0) {
            // From the same penalised logits the token was drawn from, so the chosen logprob is the one reported.
            g.appendAlternatives(TopLogprobs.at(
                    TokenSampler.logprobs(logits, p.temperature(), distribution), token, g.sampledAlternatives));
        }
        if (g.simulatedEnd > 0) {
            // OutputLengths: the drawn length alone ends the sequence (capped by max_new_tokens).
            if (g.length >= p.maxNewTokens() || g.prompt.length + g.length >= g.simulatedEnd) {
                g.finish = new FinishReason.Length(g.length);
            }
            return;
        }
        // SGLang checks the length first: a stop token sampled as the last allowed token is "length".
        boolean full = g.length >= p.maxNewTokens();
        if (full && p.lengthCheckedFirst()) {
            g.finish = new FinishReason.Length(p.maxNewTokens());
        } else if (p.isStopToken(token)) {
            g.finish = new FinishReason.MatchedToken(token);
        } else if (!p.stop().isEmpty()
                && StopStrings.matchAtEnd(g.output, g.length, p.stop(), p.longestStopBytes()) instanceof String s) {
            g.finish = new FinishReason.MatchedString(s);
        } else if (full) {
            g.finish = new FinishReason.Length(p.maxNewTokens());
        }
    }

    /** Removes {@code g} from wherever it waits and finishes it with abort; false if it already ended. */
    private boolean abortOne(Generation g, String message) {
        if (running.remove(g)) {
            runningCount = running.size();
            g.finish = new FinishReason.Abort(message);
            complete(g);
            return true;
        }
        boolean removed;
        lock.lock();
        try {
            removed = waiting.remove(g);
        } finally {
            lock.unlock();
        }
        if (removed) {
            g.finish = new FinishReason.Abort(ABORT_BEFORE_PREFILL);
            complete(g);
        }
        return removed;
    }

    private int abortEverything(String message) {
        int n = 0;
        for (Generation g : running) {
            g.finish = new FinishReason.Abort(message);
            complete(g);
            n++;
        }
        running.clear();
        runningCount = 0;
        List<Generation> held;
        lock.lock();
        try {
            held = new ArrayList<>(waiting);
            waiting.clear();
        } finally {
            lock.unlock();
        }
        for (Generation g : held) {
            g.finish = new FinishReason.Abort(ABORT_BEFORE_PREFILL);
            complete(g);
            n++;
        }
        return n;
    }

    /**
     * Ends {@code g}'s hold on the prefix cache, inserting what it computed when {@code keep}. A
     * request aborted before its prefill never held one.
     */
    private void releasePrefix(Generation g, boolean keep) {
        if (g.prefixLease != null) {
            prefixCache.release(g.prefixLease, keep ? g.computedSequence() : null);
        }
    }

    private void complete(Generation g) {
        inFlight.remove(g.rid, g);
        releasePrefix(g, true);
        if (g.finish instanceof FinishReason.Abort) {
            requestsAborted.incrementAndGet();
        } else {
            requestsFinished.incrementAndGet();
            if (simulatedLengths != null) {
                simulatedLengths.finished(g.rid);
            }
        }
        g.result.complete(g.toResult(weights.version(), System.nanoTime()));
    }
}
