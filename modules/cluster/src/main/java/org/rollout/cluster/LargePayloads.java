package org.rollout.cluster;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigException;
import java.io.IOException;
import java.io.InputStream;
import java.io.NotSerializableException;
import java.io.OutputStream;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongConsumer;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.Extension;
import org.apache.pekko.actor.typed.ExtensionId;
import org.apache.pekko.actor.typed.javadsl.Adapter;
import org.apache.pekko.japi.Pair;
import org.apache.pekko.serialization.SerializationExtension;
import org.apache.pekko.serialization.Serializer;
import org.apache.pekko.stream.KillSwitches;
import org.apache.pekko.stream.Materializer;
import org.apache.pekko.stream.SourceRef;
import org.apache.pekko.stream.UniqueKillSwitch;
import org.apache.pekko.stream.javadsl.Keep;
import org.apache.pekko.stream.javadsl.StreamConverters;
import org.apache.pekko.stream.javadsl.StreamRefs;
import org.apache.pekko.util.ByteString;
import org.rollout.api.InvalidConfigException;
import org.rollout.api.Tensor;
import org.rollout.api.TensorDict;
import org.rollout.api.TrainingBatch;
import org.rollout.api.TrainingGroup;
import org.rollout.config.LargePayloadLimits;
import org.rollout.trainer.wire.EncodedBatch;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Moves tensor payloads bigger than one Artery frame between nodes in chunks, with back-pressure,
 * never holding their whole serialized form: one instance per actor system (a Pekko extension).
 *
 * <pre>
 *   sender node                                          receiver node
 *   message ─[virtual thread] Kryo ─► OutputStream       SourceRef ─► InputStream ─[virtual thread]
 *             (writes of chunk_size bytes; blocks         (chunks as demanded) Kryo ─► message
 *              while the receiver has no demand)                                   │ piped to the actor
 *   ─► Source&lt;ByteString&gt; ─► SourceRef ══ small CBOR envelope (ref + ids) ══►   receiving actor
 * </pre>
 *
 * <p>When: {@link #streams} decides. A message goes inline (one Kryo message) when its receiver is
 * in this actor system — then nothing is serialized at all — or when its estimated size is at most
 * {@code rollout.large_payload_threshold}; otherwise the sender {@link #offer}s it as a stream ref
 * and sends a small envelope, and the receiver {@link #receive}s it before its actor handles the
 * message. Each element of the stream is one chunk of at most {@code rollout.large_payload_chunk_size}
 * bytes, below the frame size, so {@code maximum-frame-size} stays at its default.
 *
 * <p>Memory per transfer: the sender keeps the message (it had it anyway) and the chunks in flight
 * (the stream ref's buffer of 32 elements, plus the OutputStream's and InputStream's buffers of 16);
 * the receiver builds the message as the bytes arrive, one fresh array per tensor. Neither side
 * ever holds the serialized byte array next to the object.
 *
 * <p>Failure: the receiver must materialize the ref within {@code
 * pekko.stream.materializer.stream-ref.subscription-timeout} (30 s by default); a transfer that
 * makes no progress for {@value #STALL_SECONDS} s fails on both sides; a sender node that dies
 * fails the receiver's stream. Failures are logged on the sender with what was being sent, and
 * complete the receiver's future exceptionally with a message that names the payload; the
 * receiving actor decides what that means (the collector rejects the task as {@code failed}; an
 * unacknowledged batch is delivered again).
 *
 * <p>Thread safety: all methods may be called from any thread; serialization runs on virtual
 * threads of this extension, never on an actor's thread.
 */
public final class LargePayloads implements Extension {
    private static final Logger log = LoggerFactory.getLogger(LargePayloads.class);

    /** Config key: inline messages at most this big (estimated bytes); bigger ones are streamed. */
    public static final String THRESHOLD_KEY = LargePayloadLimits.THRESHOLD_KEY;
    /** Config key: bytes per stream element. */
    public static final String CHUNK_KEY = LargePayloadLimits.CHUNK_KEY;
    /** Config key: {@code direct} (the nodes' data plane) or {@code stream-ref} (over Artery). */
    public static final String TRANSPORT_KEY = LargePayloadLimits.TRANSPORT_KEY;
    /** Config key: the data plane's port, 0 for any free one. */
    public static final String PORT_KEY = LargePayloadLimits.PORT_KEY;

    static final String THRESHOLD_ALLOWED = LargePayloadLimits.THRESHOLD_ALLOWED;
    static final String CHUNK_ALLOWED = LargePayloadLimits.CHUNK_ALLOWED;
    static final String FRAME_KEY = "pekko.remote.artery.advanced.maximum-frame-size";
    /** Room kept in a frame for what surrounds a chunk or an inline payload (envelope, recipient). */
    static final int FRAME_HEADROOM = 8 * 1024;

    static final int MIN_CHUNK = LargePayloadLimits.MIN_CHUNK;
    static final int MAX_CHUNK = LargePayloadLimits.MAX_CHUNK;
    static final long STALL_SECONDS = 60;
    private static final Duration STALL = Duration.ofSeconds(STALL_SECONDS);
    /** A connection to the data plane must have completed its TLS handshake and request by then. */
    private static final Duration REQUEST_TIMEOUT = Duration.ofSeconds(10);
    /** An offer on the data plane not fetched by then is dropped (as a stream ref's subscription times out). */
    private static final Duration UNFETCHED_AFTER = Duration.ofSeconds(60);

    private static final Id ID = new Id();

    /** The extension's id; use {@link #get}. */
    public static final class Id extends ExtensionId<LargePayloads> {
        @Override
        public LargePayloads createExtension(ActorSystem<?> system) {
            return new LargePayloads(system);
        }
    }

    private final long threshold;
    private final int chunkBytes;
    private final Materializer materializer;
    private final KryoPayloadSerializer kryo;
    private final ExecutorService io;
    private final AtomicLong streamsSent = new AtomicLong();
    private final AtomicLong bytesSent = new AtomicLong();
    private final AtomicLong streamsReceived = new AtomicLong();
    private final AtomicLong batchesRelayed = new AtomicLong();
    private final AtomicLong bytesRelayed = new AtomicLong();
    /** This node's data plane, or null when payloads go as stream refs. */
    private final DataPlane dataPlane;
    /** TLS for fetching from other nodes' data planes (Artery's tls-tcp), or null for plain TCP. */
    private final DataPlaneTls tls;
    /** Fetches from other nodes' data planes, keeping connections open between payloads. */
    private final DataPlaneClient client;

    private LargePayloads(ActorSystem<?> system) {
        Config config = system.settings().config();
        this.threshold = threshold(config);
        this.chunkBytes = chunkSize(config);
        String provider = config.getString("pekko.actor.provider");
        if (!provider.equals("local") && config.hasPath(FRAME_KEY)) {
            checkAgainstFrame(threshold, chunkBytes, config.getBytes(FRAME_KEY));
        }
        this.materializer = Materializer.matFromSystem(system);
        this.kryo = boundSerializer(system);
        this.io = Executors.newThreadPerTaskExecutor(
                Thread.ofVirtual().name("large-payload-", 0).factory());
        this.tls = tls(config);
        this.client = new DataPlaneClient(tls);
        this.dataPlane = startDataPlane(system, config, kryo, chunkBytes, tls, n -> {
            streamsSent.incrementAndGet();
            bytesSent.addAndGet(n);
        });
        system.getWhenTerminated().thenRun(() -> {
            if (dataPlane != null) {
                dataPlane.close();
            }
            client.close();
            io.shutdown();
        });
    }

    /**
     * The data plane's TLS when Artery runs over {@code tls-tcp} between nodes: Artery's own key
     * material and settings ({@link DataPlaneTls}). Null for another transport, and for another
     * {@code ssl-engine-provider} than Pekko's {@code ConfigSSLEngineProvider}, whose settings
     * this cannot read, and with {@code rollout.large_payload_transport = "stream-ref"}: then
     * payloads go as stream refs, over Artery's TLS.
     *
     * @throws IllegalStateException when the stores cannot be read (Artery could not either)
     */
    private static DataPlaneTls tls(Config config) {
        if (config.getString("pekko.actor.provider").equals("local")
                || !transport(config).equals("direct")
                || !DataPlaneTls.arteryUsesTls(config)) {
            return null;
        }
        if (!DataPlaneTls.readable(config)) {
            log.warn(
                    "Artery's {} is {}, whose key material the data plane cannot read: large payloads cross nodes as"
                            + " stream refs over Artery's TLS (slower)",
                    DataPlaneTls.PROVIDER_KEY,
                    DataPlaneTls.provider(config));
            return null;
        }
        return DataPlaneTls.fromConfig(config);
    }

    /**
     * The data plane, when payloads cross nodes at all ({@code pekko.actor.provider} not local),
     * {@code rollout.large_payload_transport} is {@code direct}, and, under Artery's {@code
     * tls-tcp}, {@code tls} was built from Artery's settings (then every connection is TLS). It
     * listens where Artery binds and is reached where Artery is.
     */
    private static DataPlane startDataPlane(
            ActorSystem<?> system,
            Config config,
            KryoPayloadSerializer kryo,
            int chunkBytes,
            DataPlaneTls tls,
            LongConsumer sent) {
        if (config.getString("pekko.actor.provider").equals("local")) {
            return null;
        }
        if (transport(config).equals("stream-ref") || (tls == null && DataPlaneTls.arteryUsesTls(config))) {
            return null;
        }
        int port = config.hasPath(PORT_KEY) ? config.getInt(PORT_KEY) : 0;
        String advertised = system.address().getHost().orElse("127.0.0.1");
        String bind = config.hasPath("pekko.remote.artery.bind.hostname")
                        && !config.getString("pekko.remote.artery.bind.hostname")
                                .isBlank()
                ? config.getString("pekko.remote.artery.bind.hostname")
                : advertised;
        try {
            DataPlane d = DataPlane.start(
                    bind, advertised, port, kryo, chunkBytes, STALL, UNFETCHED_AFTER, sent, tls, REQUEST_TIMEOUT);
            log.info(
                    "large payloads cross nodes on the data plane at {}:{} ({})",
                    advertised,
                    d.port(),
                    tls == null
                            ? "plain TCP"
                            : tls.protocol() + " with Artery's key material"
                                    + (tls.mutual() ? ", mutual authentication" : ""));
            return d;
        } catch (IOException e) {
            throw new IllegalStateException(
                    "the data plane for large payloads could not listen on " + bind + ":" + port + " (" + PORT_KEY
                            + "): " + e.getMessage(),
                    e);
        }
    }

    /** {@code rollout.large_payload_transport}: {@code direct} (the default) or {@code stream-ref}. */
    private static String transport(Config config) {
        String transport = config.hasPath(TRANSPORT_KEY) ? config.getString(TRANSPORT_KEY) : "direct";
        if (!transport.equals("direct") && !transport.equals("stream-ref")) {
            throw new InvalidConfigException(TRANSPORT_KEY, transport, LargePayloadLimits.TRANSPORT_ALLOWED);
        }
        return transport;
    }

    private static KryoPayloadSerializer boundSerializer(ActorSystem<?> system) {
        Serializer s;
        try {
            s = SerializationExtension.get(Adapter.toClassic(system)).serializerFor(Collector.BatchReply.class);
        } catch (NotSerializableException e) {
            s = null;
        }
        if (!(s instanceof KryoPayloadSerializer k)) {
            throw new IllegalStateException("the serializer bound to Collector.BatchReply is "
                    + (s == null ? "none" : s.getClass().getName())
                    + ", not KryoPayloadSerializer: is the cluster module's reference.conf on the class path, and"
                    + " its pekko.actor.serialization-bindings in force?");
        }
        return k;
    }

    /** The extension of {@code system}, created on first use; its settings are checked then. */
    public static LargePayloads get(ActorSystem<?> system) {
        return ID.apply(system);
    }

    /**
     * {@code rollout.large_payload_threshold} of {@code config}: a byte size in {@code [0,
     * 2^31)}.
     *
     * @throws InvalidConfigException naming the key when it is missing or out of range
     */
    static long threshold(Config config) {
        return bytes(config, THRESHOLD_KEY, 0, Integer.MAX_VALUE, THRESHOLD_ALLOWED);
    }

    /**
     * {@code rollout.large_payload_chunk_size} of {@code config}: a byte size in {@code [4 KiB, 64
     * MiB]}.
     *
     * @throws InvalidConfigException naming the key when it is missing or out of range
     */
    static int chunkSize(Config config) {
        return (int) bytes(config, CHUNK_KEY, MIN_CHUNK, MAX_CHUNK, CHUNK_ALLOWED);
    }

    private static long bytes(Config config, String key, long min, long max, String allowed) {
        long v;
        try {
            v = config.getBytes(key);
        } catch (ConfigException e) {
            throw new InvalidConfigException(
                    key, config.hasPath(key) ? config.getValue(key).render() : null, allowed);
        }
        if (v < min || v > max) {
            throw new InvalidConfigException(key, v, allowed);
        }
        return v;
    }

    /**
     * Both sizes must leave {@value #FRAME_HEADROOM} bytes of a frame for what surrounds them, or
     * Artery would drop the message as oversized (and log it only on the sender).
     */
    static void checkAgainstFrame(long threshold, int chunkBytes, long frameBytes) {
        long room = frameBytes - FRAME_HEADROOM;
        if (chunkBytes > room) {
            throw new InvalidConfigException(
                    CHUNK_KEY,
                    chunkBytes,
                    "at most " + FRAME_KEY + " (" + frameBytes + ") - " + FRAME_HEADROOM + " = " + room + " bytes");
        }
        if (threshold > room) {
            throw new InvalidConfigException(
                    THRESHOLD_KEY,
                    threshold,
                    "at most " + FRAME_KEY + " (" + frameBytes + ") - " + FRAME_HEADROOM + " = " + room + " bytes");
        }
    }

    /** Inline messages at most this big (estimated bytes) cross nodes as one message. */
    public long threshold() {
        return threshold;
    }

    /** Bytes per stream element. */
    public int chunkBytes() {
        return chunkBytes;
    }

    /** True when {@code target} lives in this JVM's actor system: then nothing is serialized. */
    public static boolean isLocal(ActorRef<?> target) {
        return target.path().address().hasLocalScope();
    }

    /** Whether a message of {@code estimatedBytes} for {@code target} must be streamed. */
    public boolean streams(ActorRef<?> target, long estimatedBytes) {
        return estimatedBytes > threshold && !isLocal(target);
    }

    /**
     * Offers {@code message} as a stream of chunks; serialization starts on a virtual thread and
     * proceeds as the receiver demands. Send the ref at once: the receiver must materialize it
     * within the stream-ref subscription timeout, else the transfer fails and is logged here.
     *
     * @param what names the payload in logs (task id and attempt, batch id)
     */
    public SourceRef<ByteString> offer(KryoSerializable message, String what) {
        Pair<Pair<OutputStream, UniqueKillSwitch>, SourceRef<ByteString>> m = StreamConverters.asOutputStream(STALL)
                .viaMat(KillSwitches.single(), Keep.both())
                .toMat(StreamRefs.sourceRef(), Keep.both())
                .run(materializer);
        OutputStream out = m.first().first();
        UniqueKillSwitch kill = m.first().second();
        io.execute(() -> {
            try {
                long n = kryo.write(message, out, chunkBytes);
                out.close();
                streamsSent.incrementAndGet();
                bytesSent.addAndGet(n);
            } catch (RuntimeException | IOException e) {
                // Fail the stream before closing it, so that the receiver sees this error rather than
                // a payload cut short (closing alone would complete the stream normally).
                kill.abort(e);
                try {
                    out.close();
                } catch (IOException closing) {
                    e.addSuppressed(closing);
                }
                log.warn("{}: streaming the payload to its receiver failed: {}", what, e.toString());
            }
        });
        return m.second();
    }

    /**
     * Offers {@code message} on this node's data plane, or returns null when there is none (then
     * {@link #offer} it as a stream ref). Send the ref at once: an offer not fetched within 60 s is
     * dropped and logged.
     */
    public DirectRef offerDirect(KryoSerializable message, String what) {
        return dataPlane == null ? null : dataPlane.offer(message, what);
    }

    /** This node's data plane port, or -1 when payloads go as stream refs. */
    public int dataPlanePort() {
        return dataPlane == null ? -1 : dataPlane.port();
    }

    /** Whether this node's data plane runs over TLS (Artery's {@code tls-tcp}); false when there is none. */
    public boolean dataPlaneEncrypted() {
        return dataPlane != null && dataPlane.tls() != null;
    }

    /** The metric labels of the reasons a data plane refuses a connection for ({@link #dataPlaneRefused}). */
    public static List<String> dataPlaneRefusalReasons() {
        return Arrays.stream(DataPlaneRefusals.Reason.values())
                .map(r -> r.label)
                .toList();
    }

    /**
     * Connections this node's data plane refused for {@code reason} (a label of {@link
     * #dataPlaneRefusalReasons}); 0 without a data plane.
     */
    public long dataPlaneRefused(String reason) {
        DataPlaneRefusals.Reason r = DataPlaneRefusals.byLabel(reason);
        return dataPlane == null || r == null ? 0 : dataPlane.refused(r);
    }

    /** Receives from {@code direct} when it is given, else from {@code bytes}. */
    public <T> CompletionStage<T> receive(SourceRef<ByteString> bytes, DirectRef direct, Class<T> type, String what) {
        return direct != null ? receive(direct, type, what) : receive(bytes, type, what);
    }

    /**
     * Fetches the message {@code ref} names from its sender's data plane and decodes it; the stage
     * completes on a virtual thread of this extension and fails as {@link #receive(SourceRef,
     * Class, String)}'s does.
     */
    public <T> CompletionStage<T> receive(DirectRef ref, Class<T> type, String what) {
        return decode(
                () -> client.fetch(ref, what, kryo, chunkBytes, STALL, UNFETCHED_AFTER),
                type,
                what,
                "the data plane",
                "receiving the payload from " + ref.host() + ":" + ref.port() + " failed: ");
    }

    /**
     * Opens batch {@code batchId}, offered on its holder's data plane as {@code ref}, in RBATCH form
     * (the holder encodes it): the returned batch's {@link EncodedBatch#writeTo} copies the bytes to
     * its stream as they arrive, through one 1 MiB buffer ({@link RelayedBatch}), so this node never decodes the batch nor
     * holds it whole. Blocks until the holder has answered (run it on a virtual thread).
     *
     * @throws IOException when the holder cannot be reached or no longer holds the batch (the
     *     message names the node and the batch)
     */
    public EncodedBatch relay(DirectRef ref, long batchId, int groups, List<Long> taskIds) throws IOException {
        String what = "batch " + batchId;
        DataPlaneClient.BatchStream stream;
        try {
            stream = DataPlaneClient.openBatch(ref, tls, STALL, UNFETCHED_AFTER);
        } catch (IOException e) {
            throw new IOException(what + ": " + e.getMessage(), e);
        }
        batchesRelayed.incrementAndGet();
        return new RelayedBatch(ref, stream, batchId, groups, taskIds, bytesRelayed::addAndGet);
    }

    /** Batches opened for relaying from another node's data plane ({@link #relay}). */
    public long batchesRelayed() {
        return batchesRelayed.get();
    }

    /** Bytes of batches relayed whole. */
    public long bytesRelayed() {
        return bytesRelayed.get();
    }

    /**
     * Drains {@code bytes} and decodes the message; the returned stage completes on a virtual
     * thread of this extension. It fails with an {@link IllegalStateException} naming {@code what}
     * when the stream fails, stalls, is cut short, carries trailing bytes, or holds another type.
     */
    public <T> CompletionStage<T> receive(SourceRef<ByteString> bytes, Class<T> type, String what) {
        InputStream in = bytes.getSource().runWith(StreamConverters.asInputStream(STALL), materializer);
        return decode(
                () -> {
                    try (in) {
                        return kryo.read(in, chunkBytes, what);
                    }
                },
                type,
                what,
                "the stream",
                "receiving the streamed payload failed: ");
    }

    /** Reads a payload. */
    private interface PayloadRead {
        Object read() throws IOException;
    }

    /** Runs {@code read} on a virtual thread and checks the payload is a {@code type}. */
    private <T> CompletionStage<T> decode(PayloadRead read, Class<T> type, String what, String where, String failure) {
        return CompletableFuture.supplyAsync(
                () -> {
                    try {
                        Object o = read.read();
                        if (!type.isInstance(o)) {
                            throw new IllegalStateException(
                                    what + ": expected a " + type.getSimpleName() + " on " + where + ", received "
                                            + (o == null ? "null" : o.getClass().getName()));
                        }
                        streamsReceived.incrementAndGet();
                        return type.cast(o);
                    } catch (IllegalStateException e) {
                        throw e;
                    } catch (RuntimeException | IOException e) {
                        throw new IllegalStateException(what + ": " + failure + e.getMessage(), e);
                    }
                },
                io);
    }

    /** Streams whose payload was completely written by this system. */
    public long streamsSent() {
        return streamsSent.get();
    }

    /** Bytes written to completed outgoing streams. */
    public long bytesSent() {
        return bytesSent.get();
    }

    /** Streams received and decoded by this system. */
    public long streamsReceived() {
        return streamsReceived.get();
    }

    // ---- size estimates: upper bounds of the Kryo form, computed from shapes, not by serializing ----

    /** Estimated serialized bytes of {@code d}: element bytes plus keys and shapes. */
    public static long estimatedBytes(TensorDict d) {
        long n = 8;
        for (var e : d.asMap().entrySet()) {
            n += 3L * e.getKey().length() + 24 + elementBytes(e.getValue());
        }
        return n;
    }

    /** Estimated serialized bytes of {@code g}. */
    public static long estimatedBytes(TrainingGroup g) {
        return 64 + 8L * g.slotIndices().length + estimatedBytes(g.rows());
    }

    /** Estimated serialized bytes of {@code b}. */
    public static long estimatedBytes(TrainingBatch b) {
        long n = 32;
        for (TrainingGroup g : b.groups()) {
            n += estimatedBytes(g);
        }
        return n;
    }

    /** Estimated serialized bytes of {@code g}. */
    static long estimatedBytes(Collector.GroupFinished g) {
        long n = 64;
        if (g.outcome() instanceof Collector.Accepted a) {
            n += estimatedBytes(a.group());
        } else if (g.outcome() instanceof Collector.Rejected r && r.detail() != null) {
            n += 3L * r.detail().length() + 16;
        }
        if (g.groupMetrics() != null) {
            for (String k : g.groupMetrics().keySet()) {
                n += 3L * k.length() + 16;
            }
        }
        if (g.workflowStats() != null) {
            for (String k : g.workflowStats().sums().keySet()) {
                n += 2 * (3L * k.length() + 16);
            }
        }
        return n;
    }

    private static long elementBytes(Tensor t) {
        long width = switch (t.dtype()) {
            case INT32, FLOAT32 -> 4;
            case INT64 -> 8;
            case BOOL -> 1;
        };
        return width * t.numel();
    }
}
