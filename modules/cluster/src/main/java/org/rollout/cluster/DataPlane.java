package org.rollout.cluster;

import java.io.FilterOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongConsumer;
import org.rollout.api.TrainingBatch;
import org.rollout.cluster.DataPlaneRefusals.Reason;
import org.rollout.cluster.DataPlaneRefusals.Refused;
import org.rollout.trainer.wire.BatchWireFormat;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A node's data plane for payloads too big for one Artery frame: the sender keeps the message and
 * hands its receiver a {@link DirectRef} (host, port and a random token) in a small envelope over
 * Artery; the receiver connects to the sender's node and reads the message's Kryo bytes from one
 * TCP connection, written straight from the object on one side and decoded straight into the object
 * on the other. Control stays in actors; only the bytes take this path.
 *
 * <pre>
 *   receiver ──connect──► sender's data plane        "RLK1 &lt;token&gt;\n"
 *            ◄── 'Y' + the message's Kryo bytes + '.', and the connection stays open for the
 *                next request (closed by the sender after 30 s without one)
 *            ◄── 'N' when the token is unknown (fetched already, or given up); stays open too
 *   (or "RLP1 &lt;token&gt;\n": the same without the '.', and the sender closes after it)
 *
 *   relay    ──connect──► holder's data plane        "RLB1 &lt;token&gt;\n"   (a batch, as RBATCH)
 *            ◄── 'Y' + i64 length (big-endian) + the batch's RBATCH bytes, then the holder closes
 *            ◄── 'N' when the token is unknown;  'F' when the offer is not a batch (it stays offered)
 * </pre>
 *
 * <p>The second form lets a trainer gateway on another node than the collector's pass a batch to
 * its trainer as the holder encodes it ({@link #openBatch}): the gateway's node copies bytes from
 * one socket to the other and never decodes the batch nor holds it whole.
 *
 * <p>An offer is fetched once; one not fetched within {@code unfetchedAfter} is dropped and logged
 * (its receiver failed or never got the envelope). A transfer that makes no progress for {@code
 * stall} fails on both sides: the receiver's reads time out, and the sender closes a connection
 * whose writes have not moved. A token is 128 random bits: a peer that did not get the envelope
 * cannot name a payload.
 *
 * <p>With a {@link DataPlaneTls} (Artery's {@code tls-tcp}) every connection is TLS with Artery's
 * key material, mutual when Artery's is, and the request follows the handshake; without one the
 * bytes cross in the clear ({@code tcp}, {@code aeron-udp}). A connection that does not complete
 * its handshake and request within {@code requestTimeout} is closed, whatever it sends. Refused
 * connections (not TLS, no or an untrusted certificate, a failed handshake, the deadline, a
 * malformed request) are counted and logged by {@link DataPlaneRefusals}; an unknown token is not
 * a refusal but an answer ('N').
 */
final class DataPlane implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(DataPlane.class);
    private static final byte[] HELLO = DataPlaneClient.HELLO;
    private static final byte[] HELLO_KEEP = DataPlaneClient.HELLO_KEEP;
    private static final byte[] HELLO_BATCH = DataPlaneClient.HELLO_BATCH;
    /** How long a kept connection waits for its next request: longer than the receiving side keeps it. */
    private static final Duration KEEP_IDLE = DataPlaneClient.IDLE.multipliedBy(2);
    /** Ends a payload sent on a kept connection ({@code RLK1}). */
    static final int END = '.';

    private static final int TOKEN_BYTES = 16;
    private static final Duration REQUEST_TIMEOUT = Duration.ofSeconds(10);
    private static final Duration ACCEPT_RETRY = Duration.ofMillis(200);

    private record Offer(KryoSerializable message, String what, long offeredNanos) {}

    /** A send in progress: the bytes written so far, and when they last moved. */
    private static final class Send {
        final SocketChannel channel;
        final String what;
        volatile long written;
        volatile long movedNanos = System.nanoTime();

        Send(SocketChannel channel, String what) {
            this.channel = channel;
            this.what = what;
        }
    }

    private final ServerSocketChannel server;
    private final DataPlaneTls tls;
    private final Duration requestTimeout;
    private final DataPlaneRefusals refusals;
    private final AtomicInteger connections = new AtomicInteger();
    private final String advertisedHost;
    private final int port;
    private final KryoPayloadSerializer kryo;
    private final int chunkBytes;
    private final Duration stall;
    private final Duration unfetchedAfter;
    private final LongConsumer onSent;
    private final ExecutorService io = Executors.newThreadPerTaskExecutor(
            Thread.ofVirtual().name("data-plane-", 0).factory());
    private final ScheduledThreadPoolExecutor sweeper;
    private final Map<String, Offer> offers = new ConcurrentHashMap<>();
    private final Map<Send, Boolean> sends = new ConcurrentHashMap<>();
    private final SecureRandom random = new SecureRandom();
    private final AtomicLong dropped = new AtomicLong();
    private volatile boolean closed;

    private DataPlane(
            ServerSocketChannel server,
            String advertisedHost,
            KryoPayloadSerializer kryo,
            int chunkBytes,
            Duration stall,
            Duration unfetchedAfter,
            LongConsumer onSent,
            DataPlaneTls tls,
            Duration requestTimeout)
            throws IOException {
        this.server = server;
        this.tls = tls;
        this.requestTimeout = requestTimeout;
        this.onSent = onSent;
        this.advertisedHost = advertisedHost;
        this.port = ((InetSocketAddress) server.getLocalAddress()).getPort();
        this.kryo = kryo;
        this.chunkBytes = chunkBytes;
        this.stall = stall;
        this.unfetchedAfter = unfetchedAfter;
        this.refusals = new DataPlaneRefusals(port);
        this.sweeper = new ScheduledThreadPoolExecutor(1, r -> {
            Thread t = new Thread(r, "data-plane-sweeper");
            t.setDaemon(true);
            return t;
        });
        sweeper.setRemoveOnCancelPolicy(true);
        long period = Math.max(100, Math.min(stall.toMillis(), unfetchedAfter.toMillis()) / 4);
        sweeper.scheduleWithFixedDelay(this::sweep, period, period, TimeUnit.MILLISECONDS);
        io.execute(this::acceptLoop);
    }

    /** A plain (not encrypted) data plane; see the full form. */
    static DataPlane start(
            String bindHost,
            String advertisedHost,
            int port,
            KryoPayloadSerializer kryo,
            int chunkBytes,
            Duration stall,
            Duration unfetchedAfter,
            LongConsumer onSent)
            throws IOException {
        return start(
                bindHost, advertisedHost, port, kryo, chunkBytes, stall, unfetchedAfter, onSent, null, REQUEST_TIMEOUT);
    }

    /**
     * Listens on {@code bindHost:port} (0: any free port) and tells receivers to connect to {@code
     * advertisedHost} and the port it got; {@code onSent} hears the bytes of each payload sent whole.
     * With {@code tls} (null: plain TCP) every connection is TLS; one whose handshake and request
     * are not complete within {@code requestTimeout} is closed and refused.
     */
    static DataPlane start(
            String bindHost,
            String advertisedHost,
            int port,
            KryoPayloadSerializer kryo,
            int chunkBytes,
            Duration stall,
            Duration unfetchedAfter,
            LongConsumer onSent,
            DataPlaneTls tls,
            Duration requestTimeout)
            throws IOException {
        ServerSocketChannel server = ServerSocketChannel.open();
        try {
            server.bind(new InetSocketAddress(bindHost, port), 128);
            return new DataPlane(
                    server, advertisedHost, kryo, chunkBytes, stall, unfetchedAfter, onSent, tls, requestTimeout);
        } catch (IOException | RuntimeException e) {
            server.close();
            throw e;
        }
    }

    int port() {
        return port;
    }

    /** Payloads being sent now. */
    int sending() {
        return sends.size();
    }

    /** Offers dropped because no receiver fetched them in time. */
    long unfetchedDropped() {
        return dropped.get();
    }

    /** This data plane's TLS, or null when it is plain TCP. */
    DataPlaneTls tls() {
        return tls;
    }

    /** Connections refused for {@code reason}. */
    long refused(Reason reason) {
        return refusals.count(reason);
    }

    /** Connections accepted and not yet done with: each holds one virtual thread. */
    int connections() {
        return connections.get();
    }

    /** Keeps {@code message} for one fetch; send the ref to the receiver at once. */
    DirectRef offer(KryoSerializable message, String what) {
        byte[] t = new byte[TOKEN_BYTES];
        random.nextBytes(t);
        String token = HexFormat.of().formatHex(t);
        offers.put(token, new Offer(message, what, System.nanoTime()));
        return new DirectRef(advertisedHost, port, token);
    }

    /**
     * Accepts until closed. An accept that fails while open (out of file descriptors, say) is
     * logged once per episode and tried again after a pause: the node's data plane comes back
     * with the descriptors.
     */
    private void acceptLoop() {
        boolean failing = false;
        while (!closed) {
            SocketChannel c;
            try {
                c = server.accept();
            } catch (ClosedChannelException e) {
                return;
            } catch (IOException e) {
                if (closed) {
                    return;
                }
                if (!failing) {
                    log.warn(
                            "the data plane on port {} cannot accept connections ({}); trying again every {} ms",
                            port,
                            e.toString(),
                            ACCEPT_RETRY.toMillis());
                    failing = true;
                }
                try {
                    Thread.sleep(ACCEPT_RETRY);
                } catch (InterruptedException stop) {
                    return;
                }
                continue;
            }
            if (failing) {
                log.info("the data plane on port {} accepts connections again", port);
                failing = false;
            }
            io.execute(() -> serve(c));
        }
    }

    private void serve(SocketChannel c) {
        // The deadline of the handshake and the request, whatever the peer sends meanwhile; the
        // read timeout alone would let a peer that sends a byte now and then hold the connection.
        ScheduledFuture<?> deadline = deadline(c);
        if (deadline == null) {
            return;
        }
        connections.incrementAndGet();
        SocketAddress peer = null;
        Hello hello = null;
        try (c) {
            peer = c.getRemoteAddress();
            c.socket().setTcpNoDelay(true);
            c.socket().setSendBufferSize(1 << 20);
            c.socket().setSoTimeout((int) Math.min(Integer.MAX_VALUE, requestTimeout.toMillis()));
            Socket socket = tls == null ? c.socket() : tls.accept(c.socket());
            InputStream in = socket.getInputStream();
            int first = in.read();
            while (true) {
                Hello request = readHello(first, in);
                if (!deadline.cancel(false)) {
                    throw new Refused(Reason.TIMEOUT, "the deadline passed");
                }
                hello = request;
                if (!answer(c, socket, hello) || closed) {
                    return;
                }
                // A kept connection: the next request, or nothing for KEEP_IDLE (then closed quietly).
                hello = null;
                socket.setSoTimeout((int) Math.min(Integer.MAX_VALUE, KEEP_IDLE.toMillis()));
                try {
                    first = in.read();
                } catch (IOException idleEnd) {
                    // Idle too long, or the receiving node let the connection go between requests
                    // (under TLS an abrupt close is an exception, not the end of the stream).
                    log.debug("a kept data-plane connection from {} ends: {}", peer, idleEnd.toString());
                    return;
                }
                if (first < 0 || (deadline = deadline(c)) == null) {
                    return;
                }
                socket.setSoTimeout((int) Math.min(Integer.MAX_VALUE, requestTimeout.toMillis()));
            }
        } catch (IOException | RuntimeException e) {
            if (closed) {
                return;
            }
            if (hello == null) {
                // Before a whole request: refused, or the deadline closed the connection, or a read
                // timed out, or the peer went away mid-request.
                boolean late =
                        deadline.isDone() && !deadline.isCancelled() || DataPlaneTls.failure(e) == Reason.TIMEOUT;
                Reason reason = late ? Reason.TIMEOUT : e instanceof Refused r ? r.reason() : Reason.BAD_REQUEST;
                refusals.refuse(reason, peer, e instanceof Refused ? e.getMessage() : e.toString());
            }
        } finally {
            deadline.cancel(false);
            connections.decrementAndGet();
        }
    }

    /** Closes {@code c} after the request timeout unless cancelled; null (and {@code c} closed) when closing. */
    private ScheduledFuture<?> deadline(SocketChannel c) {
        try {
            return sweeper.schedule(() -> closeQuietly(c), requestTimeout.toMillis(), TimeUnit.MILLISECONDS);
        } catch (RejectedExecutionException closing) {
            closeQuietly(c);
            return null;
        }
    }

    /**
     * Answers {@code hello} on {@code socket}: the payload, 'N' or 'F'. True when the connection
     * stays open for another request: a kept one ({@code RLK1}) that was answered whole.
     */
    private boolean answer(SocketChannel c, Socket socket, Hello hello) throws IOException {
        OutputStream raw = socket.getOutputStream();
        Offer offer = offers.get(hello.token());
        TrainingBatch batch = null;
        if (offer != null && hello.form() == Form.RBATCH) {
            if (!(offer.message() instanceof Collector.BatchReply reply) || reply.batch() == null) {
                raw.write('F');
                raw.flush();
                return false;
            }
            batch = reply.batch();
        }
        if (offer == null || !offers.remove(hello.token(), offer)) {
            raw.write('N');
            raw.flush();
            return hello.form() == Form.KEPT;
        }
        Send send = new Send(c, offer.what());
        sends.put(send, Boolean.TRUE);
        try {
            // Unbuffered: Kryo's Output writes chunkBytes at a time already.
            OutputStream out = new FilterOutputStream(raw) {
                @Override
                public void write(byte[] b, int off, int len) throws IOException {
                    out.write(b, off, len);
                    send.written += len;
                    send.movedNanos = System.nanoTime();
                }
            };
            out.write('Y');
            long n;
            if (batch != null) {
                BatchWireFormat.Prepared body = BatchWireFormat.prepare(batch);
                byte[] length =
                        ByteBuffer.allocate(Long.BYTES).putLong(body.length()).array();
                out.write(length, 0, length.length);
                n = body.writeTo(out);
            } else {
                n = kryo.write(offer.message(), out, chunkBytes);
            }
            if (hello.form() == Form.KEPT) {
                out.write(END);
            }
            out.flush();
            onSent.accept(n);
            if (hello.form() == Form.KEPT) {
                return true;
            }
            // The end of the stream (with TLS, its close_notify first); the receiver may have
            // closed already once it had every byte.
            try {
                socket.shutdownOutput();
            } catch (IOException e) {
                log.debug("{}: ending the stream after the payload: {}", send.what, e.toString());
            }
            return false;
        } catch (IOException | RuntimeException e) {
            if (!closed) {
                log.warn(
                        "{}: sending the payload to its receiver failed after {} bytes: {}",
                        send.what,
                        send.written,
                        e.toString());
            }
            return false;
        } finally {
            sends.remove(send);
        }
    }

    private static void closeQuietly(SocketChannel c) {
        try {
            c.close();
        } catch (IOException e) {
            log.debug("closing a data-plane connection: {}", e.toString());
        }
    }

    /** What a request asks for: a payload then the end of the connection, a payload on a kept one, a batch. */
    private enum Form {
        ONCE,
        KEPT,
        RBATCH
    }

    /** A request: the token it names, and the form of the answer it asks for. */
    private record Hello(String token, Form form) {}

    /** The request whose first byte is {@code first} on {@code in}; refused as {@link Reason#BAD_REQUEST} when it is not one. */
    private static Hello readHello(int first, InputStream in) throws IOException {
        if (first < 0) {
            throw new Refused(Reason.BAD_REQUEST, "closed after 0 bytes");
        }
        byte[] rest = in.readNBytes(HELLO.length - 1);
        byte[] head = new byte[1 + rest.length];
        head[0] = (byte) first;
        System.arraycopy(rest, 0, head, 1, rest.length);
        Form form = Arrays.equals(head, HELLO_KEEP)
                ? Form.KEPT
                : Arrays.equals(head, HELLO) ? Form.ONCE : Arrays.equals(head, HELLO_BATCH) ? Form.RBATCH : null;
        if (form == null) {
            throw new Refused(
                    Reason.BAD_REQUEST,
                    head.length < HELLO.length ? "closed after " + head.length + " bytes" : "no request");
        }
        byte[] token = in.readNBytes(2 * TOKEN_BYTES + 1);
        if (token.length != 2 * TOKEN_BYTES + 1 || token[2 * TOKEN_BYTES] != '\n') {
            throw new Refused(Reason.BAD_REQUEST, "a malformed token");
        }
        return new Hello(new String(token, 0, 2 * TOKEN_BYTES, StandardCharsets.US_ASCII), form);
    }

    private void sweep() {
        long now = System.nanoTime();
        offers.forEach((token, o) -> {
            if (now - o.offeredNanos() > unfetchedAfter.toNanos() && offers.remove(token, o)) {
                dropped.incrementAndGet();
                log.warn(
                        "{}: its receiver did not fetch the payload within {} s; dropped",
                        o.what(),
                        unfetchedAfter.toSeconds());
            }
        });
        for (Send s : sends.keySet()) {
            if (now - s.movedNanos > stall.toNanos()) {
                log.warn(
                        "{}: the receiver took nothing for {} s after {} bytes; closing the transfer",
                        s.what,
                        stall.toSeconds(),
                        s.written);
                try {
                    s.channel.close();
                } catch (IOException e) {
                    log.debug("closing a stalled transfer: {}", e.toString());
                }
                sends.remove(s);
            }
        }
    }

    @Override
    public void close() {
        closed = true;
        try {
            server.close();
        } catch (IOException e) {
            log.debug("closing the data plane: {}", e.toString());
        }
        for (Send s : sends.keySet()) {
            try {
                s.channel.close();
            } catch (IOException e) {
                log.debug("closing a transfer: {}", e.toString());
            }
        }
        offers.clear();
        sweeper.shutdownNow();
        io.shutdownNow();
    }
}
