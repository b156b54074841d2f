package org.rollout.cluster;

import java.io.DataInputStream;
import java.io.FilterOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketAddress;
import java.net.SocketTimeoutException;
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
 *   receiver ──connect──► sender's data plane        "RLP1 &lt;token&gt;\n"
 *            ◄── 'Y' + the message's Kryo bytes, then the sender closes
 *            ◄── 'N' when the token is unknown (fetched already, or given up)
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
    private static final byte[] HELLO = "RLP1 ".getBytes(StandardCharsets.US_ASCII);
    private static final byte[] HELLO_BATCH = "RLB1 ".getBytes(StandardCharsets.US_ASCII);
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
     * Fetches the payload {@code ref} names from its sender's data plane and decodes it, over
     * {@code tls} when it is given (null: plain TCP); blocks (run it on a virtual thread).
     *
     * @throws IOException when the connection fails, stalls or is cut short, or the sender no
     *     longer holds the payload
     */
    static Object fetch(
            DirectRef ref,
            DataPlaneTls tls,
            String what,
            KryoPayloadSerializer kryo,
            int chunkBytes,
            Duration stall,
            Duration unfetchedAfter)
            throws IOException {
        Connection c = request(ref, tls, HELLO, stall);
        try (c) {
            // Kryo's Input buffers the reads itself (chunkBytes at a time); a buffer under it
            // would only add a copy of every byte.
            InputStream in = c.socket().getInputStream();
            expectYes(in, ref, unfetchedAfter);
            try {
                return kryo.read(in, chunkBytes, what);
            } catch (RuntimeException e) {
                if (e.getCause() instanceof SocketTimeoutException || hasCause(e, SocketTimeoutException.class)) {
                    throw new IOException(
                            "no bytes from " + ref.host() + ":" + ref.port() + " for " + stall.toSeconds() + " s", e);
                }
                throw e;
            }
        }
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

    /** Connects to {@code ref}'s data plane (over {@code tls} when given) and asks for its payload with {@code hello}. */
    private static Connection request(DirectRef ref, DataPlaneTls tls, byte[] hello, Duration stall)
            throws IOException {
        if (tls != null) {
            // From the connect on: the data plane's deadline runs from its accept.
            tls.awaitTurn(stall);
        }
        SocketChannel c = null;
        try {
            c = SocketChannel.open();
            c.socket().connect(new InetSocketAddress(ref.host(), ref.port()), (int) REQUEST_TIMEOUT.toMillis());
            c.socket().setTcpNoDelay(true);
            c.socket().setReceiveBufferSize(1 << 20);
            Socket s = tls == null ? c.socket() : tls.connect(c.socket(), ref.host(), ref.port(), REQUEST_TIMEOUT);
            byte[] token = ref.token().getBytes(StandardCharsets.US_ASCII);
            byte[] request = Arrays.copyOf(hello, hello.length + token.length + 1);
            System.arraycopy(token, 0, request, hello.length, token.length);
            request[request.length - 1] = '\n';
            s.getOutputStream().write(request);
            s.getOutputStream().flush();
            c.socket().setSoTimeout((int) Math.min(Integer.MAX_VALUE, stall.toMillis()));
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

    /** Reads the holder's answer; anything but 'Y' is an {@link IOException} that says what it meant. */
    private static void expectYes(InputStream in, DirectRef ref, Duration unfetchedAfter) throws IOException {
        int answer = in.read();
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
     * Opens the batch {@code ref} names on its holder's data plane in RBATCH form: returns once the
     * holder has said yes and how many bytes follow. The caller reads exactly that many from the
     * stream (a read that waits {@code stall} fails with a {@link SocketTimeoutException}) and
     * closes it. Blocks (run it on a virtual thread).
     *
     * @throws IOException when the connection fails or the holder no longer holds the batch
     */
    static BatchStream openBatch(DirectRef ref, DataPlaneTls tls, Duration stall, Duration unfetchedAfter)
            throws IOException {
        Connection c = request(ref, tls, HELLO_BATCH, stall);
        try {
            InputStream in = c.socket().getInputStream();
            expectYes(in, ref, unfetchedAfter);
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

    private static boolean hasCause(Throwable e, Class<? extends Throwable> type) {
        for (Throwable c = e; c != null; c = c.getCause()) {
            if (type.isInstance(c)) {
                return true;
            }
        }
        return false;
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
        ScheduledFuture<?> deadline;
        try {
            deadline = sweeper.schedule(() -> closeQuietly(c), requestTimeout.toMillis(), TimeUnit.MILLISECONDS);
        } catch (RejectedExecutionException closing) {
            closeQuietly(c);
            return;
        }
        connections.incrementAndGet();
        SocketAddress peer = null;
        Hello hello = null;
        Send send = null;
        try (c) {
            peer = c.getRemoteAddress();
            c.socket().setTcpNoDelay(true);
            c.socket().setSendBufferSize(1 << 20);
            c.socket().setSoTimeout((int) Math.min(Integer.MAX_VALUE, requestTimeout.toMillis()));
            Socket socket = tls == null ? c.socket() : tls.accept(c.socket());
            Hello request = readHello(socket.getInputStream());
            if (!deadline.cancel(false)) {
                throw new Refused(Reason.TIMEOUT, "the deadline passed");
            }
            hello = request;
            OutputStream raw = socket.getOutputStream();
            Offer offer = offers.get(hello.token());
            TrainingBatch batch = null;
            if (offer != null && hello.rbatch()) {
                if (!(offer.message() instanceof Collector.BatchReply reply) || reply.batch() == null) {
                    raw.write('F');
                    raw.flush();
                    return;
                }
                batch = reply.batch();
            }
            if (offer == null || !offers.remove(hello.token(), offer)) {
                raw.write('N');
                raw.flush();
                return;
            }
            send = new Send(c, offer.what());
            sends.put(send, Boolean.TRUE);
            Send s = send;
            // Unbuffered: Kryo's Output writes chunkBytes at a time already.
            OutputStream out = new FilterOutputStream(raw) {
                @Override
                public void write(byte[] b, int off, int len) throws IOException {
                    out.write(b, off, len);
                    s.written += len;
                    s.movedNanos = System.nanoTime();
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
            out.flush();
            onSent.accept(n);
            // The end of the stream (with TLS, its close_notify first); the receiver may have
            // closed already once it had every byte.
            try {
                socket.shutdownOutput();
            } catch (IOException e) {
                log.debug("{}: ending the stream after the payload: {}", s.what, e.toString());
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
                return;
            }
            log.warn(
                    "{}: sending the payload to its receiver failed{}: {}",
                    send == null ? "a data-plane request" : send.what,
                    send == null ? "" : " after " + send.written + " bytes",
                    e.toString());
        } finally {
            deadline.cancel(false);
            if (send != null) {
                sends.remove(send);
            }
            connections.decrementAndGet();
        }
    }

    private static void closeQuietly(SocketChannel c) {
        try {
            c.close();
        } catch (IOException e) {
            log.debug("closing a data-plane connection: {}", e.toString());
        }
    }

    /** A request: the token it names, and whether it asks for a batch in RBATCH form. */
    private record Hello(String token, boolean rbatch) {}

    /** The request on {@code in}; refused as {@link Reason#BAD_REQUEST} when it is not one. */
    private static Hello readHello(InputStream in) throws IOException {
        byte[] head = in.readNBytes(HELLO.length);
        boolean kryo = Arrays.equals(head, HELLO);
        if (!kryo && !Arrays.equals(head, HELLO_BATCH)) {
            throw new Refused(
                    Reason.BAD_REQUEST,
                    head.length < HELLO.length ? "closed after " + head.length + " bytes" : "no request");
        }
        byte[] token = in.readNBytes(2 * TOKEN_BYTES + 1);
        if (token.length != 2 * TOKEN_BYTES + 1 || token[2 * TOKEN_BYTES] != '\n') {
            throw new Refused(Reason.BAD_REQUEST, "a malformed token");
        }
        return new Hello(new String(token, 0, 2 * TOKEN_BYTES, StandardCharsets.US_ASCII), !kryo);
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
