package org.rollout.cluster;

import java.io.DataInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Arrays;
import java.util.Deque;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedDeque;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The receiving side of the {@link DataPlane}: fetches payloads from other nodes' data planes, and
 * keeps the connections it used open for the next payload from the same node.
 *
 * <p>A payload fetched with {@code RLK1} leaves its connection open: the holder ends the payload
 * with an end byte instead of closing, and waits for the next request. This client runs at most
 * {@code perNode} fetches from one node at once (the others wait their turn, up to the stall
 * time), each on a connection of its own, and keeps those connections for the next fetches, each
 * for at most {@code idle} between payloads (the holder keeps its side twice that long, so the
 * client gives a connection up before the holder does). Without the bound, a burst of fetches
 * would open a connection each and keep only a few. Under TLS that saves the handshake of every payload but the first few: a handshake, even
 * a resumed one, is a key exchange and a round trip, about as much as a small group's bytes.
 *
 * <p>A kept connection found closed before its request was answered (the holder restarted, or
 * closed it as idle at the same moment) is given up and the request made again on a new one: the
 * holder answers a request only after reading all of it, and hands a payload out once, so the
 * second request either gets the payload or the same refusal as the first would have.
 */
final class DataPlaneClient implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(DataPlaneClient.class);
    static final byte[] HELLO = "RLP1 ".getBytes(StandardCharsets.US_ASCII);
    static final byte[] HELLO_KEEP = "RLK1 ".getBytes(StandardCharsets.US_ASCII);
    static final byte[] HELLO_BATCH = "RLB1 ".getBytes(StandardCharsets.US_ASCII);
    private static final Duration CONNECT_TIMEOUT = Duration.ofSeconds(10);

    /** Fetches from one node at once, each on its own connection, kept idle for the next ones. */
    static final int PER_NODE = 8;

    /** How long an idle connection is kept; the holder keeps its side for {@code 2 ×} this. */
    static final Duration IDLE = Duration.ofSeconds(15);

    private record Node(String host, int port) {}

    private record Idle(Connection connection, long sinceNanos) {}

    private final DataPlaneTls tls;
    private final int perNode;
    private final Duration idle;
    private final Map<Node, Deque<Idle>> kept = new ConcurrentHashMap<>();
    /** Fetches under way from each node: at most {@code perNode}, so that every connection is kept. */
    private final Map<Node, Semaphore> inUse = new ConcurrentHashMap<>();

    private final AtomicLong opened = new AtomicLong();
    private final AtomicLong reused = new AtomicLong();
    private volatile boolean closed;

    /** @param tls the data planes' TLS, or null for plain TCP */
    DataPlaneClient(DataPlaneTls tls) {
        this(tls, PER_NODE, IDLE);
    }

    DataPlaneClient(DataPlaneTls tls, int perNode, Duration idle) {
        this.tls = tls;
        this.perNode = perNode;
        this.idle = idle;
    }

    /** Connections opened so far (each a TCP connection, and under TLS a handshake). */
    long opened() {
        return opened.get();
    }

    /** Payloads fetched on a connection kept from an earlier one. */
    long reused() {
        return reused.get();
    }

    /**
     * A connection: the TCP channel, and the socket to read and write ({@code channel}'s own, or a
     * TLS socket over it). Closing closes the channel: at once, even while another thread writes.
     */
    record Connection(SocketChannel channel, Socket socket) implements AutoCloseable {
        @Override
        public void close() throws IOException {
            channel.close();
        }
    }

    /**
     * Fetches the payload {@code ref} names from its sender's data plane and decodes it, on a kept
     * connection to that node when there is one; blocks (run it on a virtual thread).
     *
     * @throws IOException when the connection fails, stalls or is cut short, or the sender no
     *     longer holds the payload
     */
    Object fetch(
            DirectRef ref,
            String what,
            KryoPayloadSerializer kryo,
            int chunkBytes,
            Duration stall,
            Duration unfetchedAfter)
            throws IOException {
        Node node = new Node(ref.host(), ref.port());
        Semaphore turns = inUse.computeIfAbsent(node, n -> new Semaphore(perNode));
        try {
            if (!turns.tryAcquire(stall.toMillis(), TimeUnit.MILLISECONDS)) {
                throw new IOException("no connection to " + ref.host() + ":" + ref.port() + " came free for "
                        + stall.toSeconds() + " s (" + perNode + " fetches from that node at once at most)");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException("interrupted while waiting for a connection to " + ref.host() + ":" + ref.port(), e);
        }
        try {
            Connection c = takeKept(node);
            int answer = -1;
            if (c != null) {
                try {
                    ask(c, HELLO_KEEP, ref);
                    answer = c.socket().getInputStream().read();
                } catch (IOException e) {
                    log.debug("a kept data-plane connection to {}:{} failed: {}", ref.host(), ref.port(), e.toString());
                    answer = -1;
                }
                if (answer < 0) {
                    closeQuietly(c);
                    c = null;
                } else {
                    reused.incrementAndGet();
                }
            }
            if (c == null) {
                c = open(ref, stall);
                try {
                    ask(c, HELLO_KEEP, ref);
                    answer = c.socket().getInputStream().read();
                } catch (IOException | RuntimeException e) {
                    closeQuietly(c);
                    throw e;
                }
            }
            boolean keep = false;
            try {
                expectYes(answer, ref, unfetchedAfter);
                Object o = readPayload(c, ref, what, kryo, chunkBytes, stall, true);
                keep = true;
                return o;
            } catch (IOException e) {
                // An answer other than 'Y' leaves the connection as it was: usable again.
                keep = answer == 'N';
                throw e;
            } finally {
                if (keep) {
                    giveBack(node, c);
                } else {
                    closeQuietly(c);
                }
            }
        } finally {
            turns.release();
        }
    }

    /** Fetches once on a connection of its own, closed after ({@code RLP1}); see {@link #fetch}. */
    static Object fetchOnce(
            DirectRef ref,
            DataPlaneTls tls,
            String what,
            KryoPayloadSerializer kryo,
            int chunkBytes,
            Duration stall,
            Duration unfetchedAfter)
            throws IOException {
        try (Connection c = connect(ref, tls, stall)) {
            ask(c, HELLO, ref);
            expectYes(c.socket().getInputStream().read(), ref, unfetchedAfter);
            return readPayload(c, ref, what, kryo, chunkBytes, stall, false);
        }
    }

    private static Object readPayload(
            Connection c,
            DirectRef ref,
            String what,
            KryoPayloadSerializer kryo,
            int chunkBytes,
            Duration stall,
            boolean framed)
            throws IOException {
        // Kryo's Input buffers the reads itself (chunkBytes at a time); a buffer under it would
        // only add a copy of every byte.
        InputStream in = c.socket().getInputStream();
        try {
            return framed ? kryo.readFramed(in, chunkBytes, what) : kryo.read(in, chunkBytes, what);
        } catch (RuntimeException e) {
            if (hasCause(e, SocketTimeoutException.class)) {
                throw new IOException(
                        "no bytes from " + ref.host() + ":" + ref.port() + " for " + stall.toSeconds() + " s", e);
            }
            throw e;
        }
    }

    private Connection takeKept(Node node) {
        Deque<Idle> idles = kept.get(node);
        if (idles == null) {
            return null;
        }
        for (Idle i = idles.pollFirst(); i != null; i = idles.pollFirst()) {
            if (System.nanoTime() - i.sinceNanos() < idle.toNanos()
                    && i.connection().channel().isOpen()) {
                return i.connection();
            }
            closeQuietly(i.connection());
        }
        return null;
    }

    private void giveBack(Node node, Connection c) {
        Deque<Idle> idles = kept.computeIfAbsent(node, n -> new ConcurrentLinkedDeque<>());
        if (closed || idles.size() >= perNode) {
            closeQuietly(c);
            return;
        }
        idles.addFirst(new Idle(c, System.nanoTime()));
        if (closed) {
            closeKept();
        }
    }

    /**
     * Connects to {@code ref}'s data plane (over {@code tls} when given). Under TLS the handshakes
     * of a node take turns ({@link DataPlaneTls#awaitTurn}).
     */
    private Connection open(DirectRef ref, Duration stall) throws IOException {
        Connection c = connect(ref, tls, stall);
        opened.incrementAndGet();
        return c;
    }

    private static Connection connect(DirectRef ref, DataPlaneTls tls, Duration stall) throws IOException {
        if (tls != null) {
            // From the connect on: the data plane's deadline runs from its accept.
            tls.awaitTurn(stall);
        }
        SocketChannel c = null;
        try {
            c = SocketChannel.open();
            c.socket().connect(new InetSocketAddress(ref.host(), ref.port()), (int) CONNECT_TIMEOUT.toMillis());
            c.socket().setTcpNoDelay(true);
            c.socket().setReceiveBufferSize(1 << 20);
            Socket s = tls == null ? c.socket() : tls.connect(c.socket(), ref.host(), ref.port(), CONNECT_TIMEOUT);
            s.setSoTimeout((int) Math.min(Integer.MAX_VALUE, stall.toMillis()));
            return new Connection(c, s);
        } catch (IOException | RuntimeException e) {
            if (c != null) {
                c.close();
            }
            throw e;
        } finally {
            if (tls != null) {
                tls.turnDone();
            }
        }
    }

    /** Writes the request for {@code ref}'s payload: {@code hello}, the token, a newline. */
    private static void ask(Connection c, byte[] hello, DirectRef ref) throws IOException {
        byte[] token = ref.token().getBytes(StandardCharsets.US_ASCII);
        byte[] request = Arrays.copyOf(hello, hello.length + token.length + 1);
        System.arraycopy(token, 0, request, hello.length, token.length);
        request[request.length - 1] = '\n';
        c.socket().getOutputStream().write(request);
        c.socket().getOutputStream().flush();
    }

    /** The holder's answer; anything but 'Y' is an {@link IOException} that says what it meant. */
    private static void expectYes(int answer, DirectRef ref, Duration unfetchedAfter) throws IOException {
        if (answer == 'N') {
            throw new IOException("the sending node " + ref.host() + ":" + ref.port()
                    + " no longer holds the payload (fetched already, or not fetched within "
                    + unfetchedAfter.toSeconds() + " s)");
        }
        if (answer == 'F') {
            throw new IOException("the sending node " + ref.host() + ":" + ref.port()
                    + " holds the payload, but it is not a batch it can send as RBATCH");
        }
        if (answer != 'Y') {
            throw new IOException("the sending node " + ref.host() + ":" + ref.port()
                    + (answer < 0 ? " closed the connection before answering" : " answered " + answer));
        }
    }

    /** A batch being read from its holder's data plane as RBATCH bytes: {@link #length} of them on {@link #in}. */
    record BatchStream(Connection connection, InputStream in, long length) implements AutoCloseable {
        @Override
        public void close() {
            try {
                connection.close();
            } catch (IOException e) {
                log.debug("closing a batch relay: {}", e.toString());
            }
        }
    }

    /**
     * Opens the batch {@code ref} names on its holder's data plane in RBATCH form, on a connection
     * of its own: returns once the holder has said yes and how many bytes follow. The caller reads
     * exactly that many from the stream (a read that waits {@code stall} fails with a {@link
     * SocketTimeoutException}) and closes it. Blocks (run it on a virtual thread).
     *
     * @throws IOException when the connection fails or the holder no longer holds the batch
     */
    static BatchStream openBatch(DirectRef ref, DataPlaneTls tls, Duration stall, Duration unfetchedAfter)
            throws IOException {
        Connection c = connect(ref, tls, stall);
        try {
            ask(c, HELLO_BATCH, ref);
            InputStream in = c.socket().getInputStream();
            expectYes(in.read(), ref, unfetchedAfter);
            long length = new DataInputStream(in).readLong();
            if (length < 0) {
                throw new IOException(
                        "the sending node " + ref.host() + ":" + ref.port() + " announced " + length + " bytes");
            }
            return new BatchStream(c, in, length);
        } catch (IOException | RuntimeException e) {
            c.close();
            throw e;
        }
    }

    static boolean hasCause(Throwable e, Class<? extends Throwable> type) {
        for (Throwable c = e; c != null; c = c.getCause()) {
            if (type.isInstance(c)) {
                return true;
            }
        }
        return false;
    }

    private static void closeQuietly(Connection c) {
        try {
            c.close();
        } catch (IOException e) {
            log.debug("closing a data-plane connection: {}", e.toString());
        }
    }

    private void closeKept() {
        for (Deque<Idle> idles : kept.values()) {
            for (Idle i = idles.pollFirst(); i != null; i = idles.pollFirst()) {
                closeQuietly(i.connection());
            }
        }
    }

    /** Closes the kept connections; a fetch under way finishes, and its connection is closed then. */
    @Override
    public void close() {
        closed = true;
        closeKept();
    }
}
