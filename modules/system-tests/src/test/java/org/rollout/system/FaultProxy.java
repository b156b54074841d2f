package org.rollout.system;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketException;
import java.time.Duration;
import java.util.Arrays;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A fault-injecting TCP proxy for the system tests (the kernel here has no netem): it listens on
 * a port of its own and forwards every connection to one target, on virtual threads, hurting the
 * traffic as told, per direction ({@link #upstream()}: client to target, {@link #downstream()}:
 * target to client).
 *
 * <ul>
 *   <li>delay with jitter: each chunk read is written {@code delay + uniform(0, jitter)} later, in
 *       order (a chunk never overtakes the one before it), so a stream keeps flowing with added
 *       latency rather than one delay per chunk;
 *   <li>stall: while stalled nothing is written that way (the connection stays open; a bounded
 *       queue then stops the reading side, so the sender's TCP window fills);
 *   <li>loss, emulated by resets: with probability {@code resetChance} per chunk, the connection is
 *       reset on both sides (SO_LINGER 0), as a path that loses bytes ends a TCP stream in practice;
 *   <li>cut ({@link #cut(boolean)}): existing connections are reset and new ones are accepted and
 *       reset at once, until the cut is lifted.
 * </ul>
 *
 * Counters say what it did: {@link #connections()}, {@link #resets()}, {@link #bytes()}.
 */
final class FaultProxy implements AutoCloseable {
    private static final int CHUNK = 16 * 1024;
    /** Chunks read ahead of the writer per direction: a stalled direction holds at most this many. */
    private static final int QUEUED_CHUNKS = 64;

    /** How one direction of every connection is hurt; changes apply to chunks read from then on. */
    static final class Direction {
        private volatile long delayMillis;
        private volatile long jitterMillis;
        private volatile double resetChance;
        private volatile boolean stalled;
        private final Object stallLock = new Object();

        /** Each chunk is delayed by {@code delay} plus a uniform jitter in [0, {@code jitter}]. */
        Direction delay(Duration delay, Duration jitter) {
            this.delayMillis = delay.toMillis();
            this.jitterMillis = jitter.toMillis();
            return this;
        }

        /** The chance, per chunk forwarded this way, that the connection is reset instead. */
        Direction resetChance(double chance) {
            if (chance < 0 || chance > 1) {
                throw new IllegalArgumentException("resetChance must be in [0, 1], not " + chance);
            }
            this.resetChance = chance;
            return this;
        }

        /** Holds (true) or releases (false) every chunk going this way. */
        Direction stall(boolean stall) {
            synchronized (stallLock) {
                this.stalled = stall;
                stallLock.notifyAll();
            }
            return this;
        }

        /** No delay, no resets, no stall. */
        Direction clear() {
            delay(Duration.ZERO, Duration.ZERO);
            resetChance(0);
            return stall(false);
        }

        private void awaitUnstalled(Link link) throws InterruptedException {
            synchronized (stallLock) {
                while (stalled && !link.closed) {
                    stallLock.wait(100);
                }
            }
        }
    }

    private final String name;
    private final InetSocketAddress target;
    private final ServerSocket listener;
    private final Direction upstream = new Direction();
    private final Direction downstream = new Direction();
    private final Set<Link> links = ConcurrentHashMap.newKeySet();
    private final AtomicLong connections = new AtomicLong();
    private final AtomicLong resets = new AtomicLong();
    private final AtomicLong bytes = new AtomicLong();
    private final SplittableRandom seeds;
    private volatile boolean cut;
    private volatile boolean closed;

    /** A proxy on {@code host}:{@code port} (0: any free port) to {@code target}; {@code seed} makes its faults repeatable. */
    FaultProxy(String name, String host, int port, InetSocketAddress target, long seed) throws IOException {
        this.name = name;
        this.target = target;
        this.seeds = new SplittableRandom(seed);
        this.listener = new ServerSocket();
        listener.setReuseAddress(true);
        listener.bind(new InetSocketAddress(InetAddress.getByName(host), port), 512);
        Thread.ofVirtual().name("proxy-" + name + "-accept").start(this::acceptLoop);
    }

    /** A proxy on a free port of 127.0.0.1 to {@code target}. */
    static FaultProxy to(String name, InetSocketAddress target, long seed) throws IOException {
        return new FaultProxy(name, "127.0.0.1", 0, target, seed);
    }

    int port() {
        return listener.getLocalPort();
    }

    String name() {
        return name;
    }

    /** Client to target. */
    Direction upstream() {
        return upstream;
    }

    /** Target to client. */
    Direction downstream() {
        return downstream;
    }

    /** Both directions get {@code delay} plus up to {@code jitter}, and {@code resetChance} per chunk. */
    FaultProxy hurt(Duration delay, Duration jitter, double resetChance) {
        upstream.delay(delay, jitter).resetChance(resetChance);
        downstream.delay(delay, jitter).resetChance(resetChance);
        return this;
    }

    /** Stalls (true) or releases (false) both directions. */
    FaultProxy stall(boolean stall) {
        upstream.stall(stall);
        downstream.stall(stall);
        return this;
    }

    /** Lifts every fault: no delay, no resets, no stall, no cut. */
    FaultProxy heal() {
        upstream.clear();
        downstream.clear();
        cut = false;
        return this;
    }

    /** Cuts (true: every connection reset, new ones reset on accept) or restores (false) the link. */
    FaultProxy cut(boolean cutNow) {
        this.cut = cutNow;
        if (cutNow) {
            links.forEach(Link::reset);
        }
        return this;
    }

    long connections() {
        return connections.get();
    }

    long resets() {
        return resets.get();
    }

    long bytes() {
        return bytes.get();
    }

    private void acceptLoop() {
        while (!closed) {
            Socket client;
            try {
                client = listener.accept();
            } catch (IOException e) {
                if (!closed) {
                    TestCluster.log("proxy " + name + " stopped accepting: " + e);
                }
                return;
            }
            connections.incrementAndGet();
            long seed;
            synchronized (seeds) {
                seed = seeds.nextLong();
            }
            Thread.ofVirtual().name("proxy-" + name + "-connect").start(() -> open(client, seed));
        }
    }

    private void open(Socket client, long seed) {
        if (cut || closed) {
            resetQuietly(client);
            resets.incrementAndGet();
            return;
        }
        Socket server = new Socket();
        try {
            server.connect(target, 5000);
        } catch (IOException e) {
            // As a refused connection would look to the client.
            resetQuietly(server);
            resetQuietly(client);
            return;
        }
        Link link = new Link(client, server, seed);
        links.add(link);
        if (cut || closed) {
            link.reset();
            return;
        }
        link.start();
    }

    private static void resetQuietly(Socket s) {
        try {
            if (!s.isClosed()) {
                s.setSoLinger(true, 0);
            }
        } catch (SocketException ignored) {
            // already gone
        }
        try {
            s.close();
        } catch (IOException ignored) {
            // already gone
        }
    }

    /** One proxied connection: a reader and a writer per direction. */
    private final class Link {
        final Socket client;
        final Socket server;
        final SplittableRandom random;
        final AtomicInteger directionsEnded = new AtomicInteger();
        volatile boolean closed;

        Link(Socket client, Socket server, long seed) {
            this.client = client;
            this.server = server;
            this.random = new SplittableRandom(seed);
        }

        void start() {
            pipe(client, server, upstream, "up");
            pipe(server, client, downstream, "down");
        }

        private void pipe(Socket from, Socket to, Direction how, String way) {
            BlockingQueue<Chunk> queue = new ArrayBlockingQueue<>(QUEUED_CHUNKS);
            Thread.ofVirtual().name("proxy-" + name + "-" + way + "-read").start(() -> read(from, how, queue));
            Thread.ofVirtual().name("proxy-" + name + "-" + way + "-write").start(() -> write(to, how, queue));
        }

        private void read(Socket from, Direction how, BlockingQueue<Chunk> queue) {
            long releaseAt = 0;
            try {
                // Not closed here: closing a socket's stream closes the socket, and the other way may still flow.
                InputStream in = from.getInputStream();
                byte[] buf = new byte[CHUNK];
                int n;
                while ((n = in.read(buf)) >= 0) {
                    double draw;
                    long jitter;
                    synchronized (random) {
                        draw = random.nextDouble();
                        jitter = how.jitterMillis > 0 ? random.nextLong(how.jitterMillis + 1) : 0;
                    }
                    if (draw < how.resetChance) {
                        resets.incrementAndGet();
                        reset();
                        return;
                    }
                    // In order: a chunk is released no earlier than the one before it.
                    long due = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(how.delayMillis + jitter);
                    releaseAt = Math.max(releaseAt, due);
                    queue.put(new Chunk(Arrays.copyOf(buf, n), releaseAt));
                }
                queue.put(Chunk.END);
            } catch (IOException | InterruptedException e) {
                reset();
            }
        }

        private void write(Socket to, Direction how, BlockingQueue<Chunk> queue) {
            try {
                OutputStream out = to.getOutputStream();
                while (!closed) {
                    Chunk c = queue.poll(100, TimeUnit.MILLISECONDS);
                    if (c == null) {
                        continue;
                    }
                    if (c == Chunk.END) {
                        how.awaitUnstalled(this);
                        to.shutdownOutput();
                        if (directionsEnded.incrementAndGet() == 2) {
                            finish();
                        }
                        return;
                    }
                    long wait = c.releaseAt - System.nanoTime();
                    if (wait > 0) {
                        TimeUnit.NANOSECONDS.sleep(wait);
                    }
                    how.awaitUnstalled(this);
                    if (closed) {
                        return;
                    }
                    out.write(c.data);
                    out.flush();
                    bytes.addAndGet(c.data.length);
                }
            } catch (IOException | InterruptedException e) {
                reset();
            }
        }

        /** Both sides said goodbye: an orderly close. */
        void finish() {
            closed = true;
            links.remove(this);
            try {
                client.close();
                server.close();
            } catch (IOException ignored) {
                // gone already
            }
        }

        void reset() {
            if (closed) {
                return;
            }
            closed = true;
            links.remove(this);
            resetQuietly(client);
            resetQuietly(server);
        }
    }

    private record Chunk(byte[] data, long releaseAt) {
        static final Chunk END = new Chunk(new byte[0], 0);
    }

    @Override
    public void close() {
        closed = true;
        try {
            listener.close();
        } catch (IOException ignored) {
            // closing anyway
        }
        links.forEach(Link::reset);
    }

    @Override
    public String toString() {
        return "proxy " + name + " :" + port() + " -> " + target + " (" + connections() + " connections, " + resets()
                + " resets, " + bytes() + " bytes)";
    }
}
