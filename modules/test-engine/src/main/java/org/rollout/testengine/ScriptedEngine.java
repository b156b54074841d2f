package org.rollout.testengine;

import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Deque;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import org.rollout.api.ControllableEngine;
import org.rollout.api.ModelRequest;
import org.rollout.api.ModelResponse;
import org.rollout.api.StopReason;
import org.rollout.api.Tokenizer;
import org.rollout.core.ByteLevelTokenizer;

/**
 * An in-process {@link ControllableEngine} whose answers the caller chooses, for tests and
 * benchmarks: what it answers is known exactly, and it has the gate a weight update needs. It comes
 * in two kinds:
 *
 * <pre>
 *   generating(tokens)  a request with no scripted step left is answered at once with
 *                       min(tokens, max_new_tokens) tokens 'a', 'b', … (logprob −0.5, stop reason
 *                       length); a prompt whose first token is BLOCK blocks until interrupted.
 *                       Requests are counted, not kept (a benchmark sends millions).
 *   scripted()          each request takes the next scripted step; a request with none left fails
 *                       with IllegalStateException. Requests are kept: requests().
 * </pre>
 *
 * <p>Scripted steps, taken in order by the requests (a generating engine takes them first):
 *
 * <pre>
 *   thenReply(text)                   text in the engine's tokenizer then EOS (stop reason stop), cut
 *                                     to max_new_tokens without EOS (length) when it does not fit;
 *                                     logprob −0.01·(i+1), every token at the current version
 *   thenOutput(tokens, version, stop) exactly these tokens, at {@code version}; logprob −(i+1)/10
 *   thenFail(e)                       generate throws e
 *   thenBlock()                       generate blocks until its thread is interrupted
 * </pre>
 *
 * <p>The gate: while {@link #pause() paused}, generate waits before it answers; the tokens it
 * generates are pinned to the version current when it passes the gate ({@link #setVersion}, which
 * never goes down). {@link #generations()}, {@link #blocking()} and {@link #interrupted()} count
 * what happened; {@link #awaitBlocking} waits for generations to block. The latency of an answer is
 * the time {@code generate} took. Thread-safe.
 */
public final class ScriptedEngine implements ControllableEngine {
    /** A prompt starting with this token blocks a generating engine until the thread is interrupted. */
    public static final int BLOCK = 7;

    private static final float GENERATED_LOGPROB = -0.5f;

    private final int tokens; // 0: scripted only
    private final Tokenizer tokenizer;
    private final Deque<Object> script = new ArrayDeque<>();
    private final List<ModelRequest> requests = new ArrayList<>();
    private final ReentrantLock lock = new ReentrantLock();
    private final Condition open = lock.newCondition();
    private final LongAdder generations = new LongAdder();
    private final AtomicInteger blocking = new AtomicInteger();
    private final AtomicInteger interrupted = new AtomicInteger();
    private final Object blockingMonitor = new Object();
    private volatile int version;
    private volatile boolean paused;
    /** Scripted steps not yet taken: a generating engine without any takes no lock per request. */
    private volatile int pending;

    private ScriptedEngine(int tokens, Tokenizer tokenizer) {
        this.tokens = tokens;
        this.tokenizer = Objects.requireNonNull(tokenizer, "tokenizer");
    }

    /**
     * An engine that answers every request it has no scripted step for with {@code tokens} tokens
     * (fewer when {@code max_new_tokens} is smaller).
     *
     * @param tokens output tokens per generation, {@code >= 1}
     */
    public static ScriptedEngine generating(int tokens) {
        if (tokens < 1) {
            throw new IllegalArgumentException("tokens must be >= 1, got " + tokens);
        }
        return new ScriptedEngine(tokens, ByteLevelTokenizer.INSTANCE);
    }

    /** An engine that answers only what is scripted; replies are in the built-in tokenizer. */
    public static ScriptedEngine scripted() {
        return scripted(ByteLevelTokenizer.INSTANCE);
    }

    /** An engine that answers only what is scripted; replies are encoded with {@code tokenizer} and end in its EOS. */
    public static ScriptedEngine scripted(Tokenizer tokenizer) {
        return new ScriptedEngine(0, tokenizer);
    }

    /** A {@link #scripted()} engine that answers each request with the next of {@code texts}. */
    public static ScriptedEngine replying(String... texts) {
        ScriptedEngine e = scripted();
        for (String t : texts) {
            e.thenReply(t);
        }
        return e;
    }

    /** The next request gets {@code text} then EOS. */
    public ScriptedEngine thenReply(String text) {
        return add(Objects.requireNonNull(text, "text"));
    }

    /** The next request gets exactly {@code tokens}, each at {@code version}, with logprob −(i+1)/10 at i. */
    public ScriptedEngine thenOutput(int[] tokens, int version, StopReason stop) {
        float[] logprobs = new float[tokens.length];
        int[] versions = new int[tokens.length];
        for (int i = 0; i < tokens.length; i++) {
            logprobs[i] = -(i + 1) / 10f;
            versions[i] = version;
        }
        return add(new Output(tokens.clone(), logprobs, versions, Objects.requireNonNull(stop, "stop")));
    }

    /** The next request fails with {@code failure}. */
    public ScriptedEngine thenFail(RuntimeException failure) {
        return add(Objects.requireNonNull(failure, "failure"));
    }

    /** The next request blocks until its thread is interrupted. */
    public ScriptedEngine thenBlock() {
        return add(Block.INSTANCE);
    }

    private synchronized ScriptedEngine add(Object step) {
        script.add(step);
        pending = script.size();
        return this;
    }

    private record Output(int[] tokens, float[] logprobs, int[] versions, StopReason stop) {}

    private enum Block {
        INSTANCE
    }

    /** The requests a {@link #scripted()} engine was sent, in order (a generating engine keeps none). */
    public synchronized List<ModelRequest> requests() {
        return List.copyOf(requests);
    }

    /** Generations that passed the gate. */
    public int generations() {
        return generations.intValue();
    }

    /** Generations that blocked (a {@link #BLOCK} prompt or a {@link #thenBlock()} step). */
    public int blocking() {
        return blocking.get();
    }

    /** Blocked generations that ended by their thread's interruption. */
    public int interrupted() {
        return interrupted.get();
    }

    /**
     * Waits until at least {@code n} generations have blocked.
     *
     * @return false when {@code timeout} passed first
     */
    public boolean awaitBlocking(int n, Duration timeout) throws InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        synchronized (blockingMonitor) {
            while (blocking.get() < n) {
                long left = deadline - System.nanoTime();
                if (left <= 0) {
                    return false;
                }
                TimeUnit.NANOSECONDS.timedWait(blockingMonitor, left);
            }
            return true;
        }
    }

    @Override
    public ModelResponse generate(ModelRequest request) throws InterruptedException {
        long start = System.nanoTime();
        int pinned = passGate();
        generations.increment();
        Object step = null;
        if (tokens == 0 || pending > 0) {
            synchronized (this) {
                step = script.poll();
                pending = script.size();
                if (tokens == 0) {
                    requests.add(request);
                }
            }
        }
        if (step == null && tokens == 0) {
            throw new IllegalStateException("the scripted engine has nothing scripted for request "
                    + requests().size() + " (rid " + request.rid() + ")");
        }
        if (step instanceof RuntimeException failure) {
            throw failure;
        }
        if (step == Block.INSTANCE || (step == null && request.inputLength() > 0 && request.inputId(0) == BLOCK)) {
            block();
        }
        Output out = switch (step) {
            case Output o -> o;
            case String text -> reply(text, request.gconfig().maxNewTokens(), pinned);
            case null -> generated(request.gconfig().maxNewTokens(), pinned);
            default -> throw new IllegalStateException("a blocked generation was not interrupted");
        };
        return ModelResponse.of(
                request.inputIds(),
                out.tokens,
                out.logprobs,
                out.versions,
                out.stop,
                Duration.ofNanos(System.nanoTime() - start));
    }

    private int passGate() throws InterruptedException {
        // Read before the gate: a generation that finds the gate open is pinned to the version of
        // before the pause it raced with; one that finds it closed waits and takes the new one.
        int v = version;
        if (!paused) {
            return v;
        }
        lock.lockInterruptibly();
        try {
            while (paused) {
                open.await();
            }
            return version;
        } finally {
            lock.unlock();
        }
    }

    private void block() throws InterruptedException {
        synchronized (blockingMonitor) {
            blocking.incrementAndGet();
            blockingMonitor.notifyAll();
        }
        try {
            new CountDownLatch(1).await(); // only interruption ends it
        } catch (InterruptedException e) {
            interrupted.incrementAndGet();
            throw e;
        }
    }

    private Output generated(int maxNewTokens, int pinned) {
        int n = Math.min(tokens, maxNewTokens);
        int[] out = new int[n];
        for (int i = 0; i < n; i++) {
            out[i] = 'a' + i % 26;
        }
        float[] logprobs = new float[n];
        Arrays.fill(logprobs, GENERATED_LOGPROB);
        int[] versions = new int[n];
        Arrays.fill(versions, pinned);
        return new Output(out, logprobs, versions, StopReason.LENGTH);
    }

    private Output reply(String text, int maxNewTokens, int pinned) {
        int[] encoded = tokenizer.encode(text);
        boolean stop = encoded.length + 1 <= maxNewTokens;
        int n = stop ? encoded.length + 1 : maxNewTokens;
        int[] out = new int[n];
        System.arraycopy(encoded, 0, out, 0, Math.min(encoded.length, n));
        if (stop) {
            out[n - 1] = tokenizer.eosTokenId();
        }
        float[] logprobs = new float[n];
        int[] versions = new int[n];
        for (int i = 0; i < n; i++) {
            logprobs[i] = -0.01f * (i + 1);
            versions[i] = pinned;
        }
        return new Output(out, logprobs, versions, stop ? StopReason.STOP : StopReason.LENGTH);
    }

    @Override
    public int version() {
        return version;
    }

    @Override
    public void pause() {
        lock.lock();
        try {
            paused = true;
        } finally {
            lock.unlock();
        }
    }

    @Override
    public void resume() {
        lock.lock();
        try {
            paused = false;
            open.signalAll();
        } finally {
            lock.unlock();
        }
    }

    /**
     * Sets the version that generations passing the gate from now on are pinned to.
     *
     * @throws IllegalArgumentException when {@code v} is below the current version
     */
    @Override
    public void setVersion(int v) {
        lock.lock();
        try {
            if (v < version) {
                throw new IllegalArgumentException("version " + v + " is below the current " + version);
            }
            version = v;
        } finally {
            lock.unlock();
        }
    }

    @Override
    public String toString() {
        return tokens == 0 ? "ScriptedEngine(scripted)" : "ScriptedEngine(generating " + tokens + ")";
    }
}
