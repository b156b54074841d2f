package org.rollout.cluster;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.NotSerializableException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Random;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.typed.javadsl.Adapter;
import org.apache.pekko.serialization.Serialization;
import org.apache.pekko.serialization.SerializationExtension;
import org.apache.pekko.serialization.Serializers;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.rollout.cluster.DurableState.Cursor;
import org.rollout.cluster.DurableState.LedgerPart;
import org.rollout.cluster.DurableState.OpenTask;
import org.rollout.cluster.DurableState.VersionRecord;

/**
 * {@link LedgerEntrySerializer}: every field of every ledger entry round-trips, extremes included;
 * damaged bytes fail with an error naming the manifest; the binding in {@code reference.conf}
 * picks it for exactly the ledger's entries; and what an entry costs, alone and inside Distributed
 * Data's messages, stays within bounds well below what Jackson CBOR cost.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class LedgerEntrySerializerTest {
    private final LedgerEntrySerializer serializer = new LedgerEntrySerializer();
    private final ActorTestKit kit = ActorTestKit.create("ledger-serializer-test", TestRollout.PEKKO);
    private final Serialization serialization = SerializationExtension.get(Adapter.toClassic(kit.system()));

    @AfterAll
    void shutdown() {
        kit.shutdownTestKit();
    }

    private Object roundTrip(Object o) throws NotSerializableException {
        return serializer.fromBinary(serializer.toBinary(o), serializer.manifest(o));
    }

    private static final long[] LONGS = {
        0,
        1,
        63,
        64,
        127,
        128,
        16_383,
        16_384,
        1_000_000,
        Integer.MAX_VALUE,
        1L << 35,
        Long.MAX_VALUE - 1,
        Long.MAX_VALUE,
        -1,
        Long.MIN_VALUE,
        Long.MIN_VALUE + 1
    };
    private static final int[] INTS = {0, 1, 127, 128, 65_535, Integer.MAX_VALUE, -1, Integer.MIN_VALUE};

    @Test
    void everyFieldOfAnOpenTaskRoundTripsIncludingExtremes() throws Exception {
        List<OpenTask> tasks = new ArrayList<>();
        for (long id : LONGS) {
            for (long source : LONGS) {
                tasks.add(new OpenTask(id, 0, false, source, 0, false, false));
            }
            for (int i : INTS) {
                tasks.add(new OpenTask(id, i, true, id, i, true, false));
                tasks.add(new OpenTask(id, 1, false, id - 1, i, false, true));
            }
        }
        for (int flags = 0; flags < 8; flags++) {
            tasks.add(new OpenTask(5, 2, (flags & 1) != 0, 3, 7, (flags & 2) != 0, (flags & 4) != 0));
        }
        Random random = new Random(20261206);
        for (int i = 0; i < 10_000; i++) {
            tasks.add(new OpenTask(
                    random.nextLong(),
                    random.nextInt(),
                    random.nextBoolean(),
                    random.nextLong(),
                    random.nextInt(),
                    random.nextBoolean(),
                    random.nextBoolean()));
        }
        for (OpenTask t : tasks) {
            assertThat(serializer.manifest(t)).isEqualTo("T");
            assertThat(roundTrip(t)).as("%s", t).isEqualTo(t);
        }
    }

    @Test
    void everyFieldOfACursorRoundTripsIncludingExtremes() throws Exception {
        List<Cursor> cursors = new ArrayList<>(List.of(Cursor.START));
        for (long a : LONGS) {
            for (long b : LONGS) {
                cursors.add(new Cursor(a, b, a, b));
                cursors.add(new Cursor(b, a, b - 1, a));
            }
        }
        for (Cursor c : cursors) {
            assertThat(serializer.manifest(c)).isEqualTo("C");
            assertThat(roundTrip(c)).as("%s", c).isEqualTo(c);
        }
    }

    @Test
    void aVersionRecordRoundTripsWithANullAnEmptyAndALongNonAsciiPath() throws Exception {
        List<VersionRecord> records = new ArrayList<>(List.of(VersionRecord.INITIAL));
        for (int v : INTS) {
            records.add(new VersionRecord(v, null));
            records.add(new VersionRecord(v, ""));
            records.add(new VersionRecord(v, "/weights/v" + v + "/Gewichte-权重-🚀.safetensors"));
        }
        records.add(new VersionRecord(3, "x".repeat(100_000)));
        for (VersionRecord r : records) {
            assertThat(serializer.manifest(r)).isEqualTo("V");
            assertThat(roundTrip(r)).as("%s", r.version()).isEqualTo(r);
        }
        assertThat(((VersionRecord) roundTrip(new VersionRecord(1, null))).path())
                .isNull();
        assertThat(((VersionRecord) roundTrip(new VersionRecord(1, ""))).path()).isEmpty();
    }

    @Test
    void theBindingPicksItForExactlyTheLedgersEntries() throws Exception {
        for (Object entry : List.of(
                new OpenTask(4, 1, false, 17, 3, true, true),
                new Cursor(40, 38, 20, 2),
                new VersionRecord(5, "/w"),
                new LedgerPart(new Cursor(40, 38, 20, 2), List.of(new OpenTask(4, 1, false, 17, 3, true, true))))) {
            var bound = serialization.findSerializerFor(entry);
            assertThat(bound).as("%s", entry.getClass()).isInstanceOf(LedgerEntrySerializer.class);
            assertThat(bound.identifier()).isEqualTo(LedgerEntrySerializer.ID);
            byte[] bytes = serialization.serialize(entry).get();
            assertThat(serialization
                            .deserialize(bytes, bound.identifier(), Serializers.manifestFor(bound, entry))
                            .get())
                    .isEqualTo(entry);
        }
        // Everything else that is CBOR stays CBOR.
        assertThat(serialization.findSerializerFor(new GroupRunner.Forget(List.of(1L))))
                .isInstanceOf(org.apache.pekko.serialization.jackson.JacksonCborSerializer.class);
        assertThatThrownBy(() -> serializer.toBinary("not an entry"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("java.lang.String");
    }

    @Test
    void malformedBytesFailWithAnErrorNamingTheManifestAndTheRecord() throws Exception {
        byte[] task = serializer.toBinary(new OpenTask(1_000_000, 2, false, 999_963, 12, true, false));
        byte[] cursor = serializer.toBinary(new Cursor(1_000_000, 900_000, 800_000, 3));
        byte[] version = serializer.toBinary(new VersionRecord(5, "/w/v5"));
        record Case(byte[] bytes, String manifest, String record, String says) {}
        List<Case> cases = new ArrayList<>();
        for (int cut = 0; cut < task.length; cut++) {
            cases.add(new Case(Arrays.copyOf(task, cut), "T", "DurableState.OpenTask", "cut short"));
        }
        for (int cut = 0; cut < cursor.length; cut++) {
            cases.add(new Case(Arrays.copyOf(cursor, cut), "C", "DurableState.Cursor", "cut short"));
        }
        cases.add(new Case(Arrays.copyOf(version, version.length - 1), "V", "DurableState.VersionRecord", "runs past"));
        cases.add(new Case(Arrays.copyOf(task, task.length + 1), "T", "DurableState.OpenTask", "follow the record"));
        byte[] badFlags = task.clone();
        badFlags[0] = (byte) 0x80;
        cases.add(new Case(badFlags, "T", "DurableState.OpenTask", "unknown flag bits"));
        byte[] tooLong = new byte[12];
        Arrays.fill(tooLong, 1, 12, (byte) 0xFF);
        cases.add(new Case(tooLong, "T", "DurableState.OpenTask", "longer than 64 bits"));
        // An attempt (32 bits) that holds 2^32.
        cases.add(new Case(
                new byte[] {0, 1, (byte) 0x80, (byte) 0x80, (byte) 0x80, (byte) 0x80, 0x10, 0, 0},
                "T",
                "DurableState.OpenTask",
                "32-bit field"));
        cases.add(new Case(new byte[] {2, 1}, "V", "DurableState.VersionRecord", "unknown flag bits"));
        for (Case c : cases) {
            assertThatThrownBy(() -> serializer.fromBinary(c.bytes(), c.manifest()))
                    .as("%s of %d bytes", c.record(), c.bytes().length)
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("manifest '" + c.manifest() + "'")
                    .hasMessageContaining(c.record())
                    .hasMessageContaining(c.says());
        }
        assertThatThrownBy(() -> serializer.fromBinary(task, "Q"))
                .isInstanceOf(NotSerializableException.class)
                .hasMessageContaining("unknown manifest 'Q'");
        assertThatThrownBy(() -> serializer.fromBinary(null, "T"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("manifest 'T'");
    }

    @Test
    void anEntryStaysWithinItsSizeBounds() {
        // The engine's entries: ids of a long run, a source index a little below the task id.
        OpenTask typical = new OpenTask(123_456_789, 0, false, 123_456_700, 1_000, true, false);
        assertThat(serializer.toBinary(typical)).hasSizeLessThanOrEqualTo(10);
        assertThat(serializer.toBinary(new OpenTask(1_000_000, 0, false, 999_963, 12, false, false)))
                .hasSizeLessThanOrEqualTo(7);
        // The worst case: every field at its widest.
        assertThat(serializer.toBinary(new OpenTask(-1, -1, true, 0, -1, true, true)))
                .hasSizeLessThanOrEqualTo(1 + 10 + 5 + 10 + 5);
        assertThat(serializer.toBinary(new Cursor(Long.MIN_VALUE, Long.MAX_VALUE, Long.MIN_VALUE, -1)))
                .hasSizeLessThanOrEqualTo(40);
        assertThat(serializer.toBinary(new Cursor(5_000_000, 4_990_000, 4_900_000, 7)))
                .hasSizeLessThanOrEqualTo(11);
        assertThat(serializer.toBinary(new VersionRecord(12, "/w/v12"))).hasSize(1 + 1 + 1 + 6);
    }

    @Test
    void aLedgerPartRoundTripsEmptyWithExtremesAndWithAFleetsKeyOfTasks() throws Exception {
        assertThat(roundTrip(LedgerPart.EMPTY)).isEqualTo(LedgerPart.EMPTY);
        List<OpenTask> extremes = new ArrayList<>();
        long id = 0;
        for (long step : new long[] {0, 1, 127, 128, 1L << 35, Long.MAX_VALUE - (1L << 35) - 256}) {
            id += step;
            extremes.add(new OpenTask(id, -1, true, Long.MIN_VALUE, Integer.MIN_VALUE, true, true));
        }
        LedgerPart wide = new LedgerPart(new Cursor(Long.MAX_VALUE, Long.MIN_VALUE, -1, Long.MAX_VALUE), extremes);
        assertThat(roundTrip(wide)).isEqualTo(wide);
        List<OpenTask> fleet = new ArrayList<>();
        for (int i = 0; i < 625; i++) {
            long t = 1_000_000 + (i / 64) * 64L * 256 + i % 64;
            fleet.add(new OpenTask(t, i % 3, false, t - 40, 1_000, i % 2 == 0, i % 7 == 0));
        }
        LedgerPart part = new LedgerPart(new Cursor(1_170_000, 1_169_000, 160_000, 3), fleet);
        assertThat(roundTrip(part)).isEqualTo(part);
        // A flag byte, a one- or two-byte step, the attempt, the source's offset, the version.
        assertThat(serializer.toBinary(part)).hasSizeLessThanOrEqualTo(625 * 7 + 20);
        assertThat(serializer.manifest(part)).isEqualTo("P");
        assertThatThrownBy(() -> new LedgerPart(Cursor.START, List.of(fleet.get(1), fleet.get(0))))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("ascend");
    }

    @Test
    void aMalformedLedgerPartFailsNamingItsManifestAndWhatIsWrong() {
        List<OpenTask> two = List.of(
                new OpenTask(10, 0, false, 10, 1, false, false), new OpenTask(11, 0, false, 11, 1, false, false));
        byte[] bytes = serializer.toBinary(new LedgerPart(new Cursor(12, 12, 0, 1), two));
        for (int cut = 0; cut < bytes.length; cut++) {
            byte[] shorter = Arrays.copyOf(bytes, cut);
            assertThatThrownBy(() -> serializer.fromBinary(shorter, "P"))
                    .as("cut at %d of %d", cut, bytes.length)
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("manifest 'P'")
                    .hasMessageContaining("DurableState.LedgerPart");
        }
        // A count far beyond the bytes: refused before anything is allocated for it.
        byte[] huge = bytes.clone();
        huge[0] = (byte) 0x7F;
        assertThatThrownBy(() -> serializer.fromBinary(huge, "P"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("a count of 127 tasks");
        // The second task's step 0: an id that does not ascend.
        byte[] repeated = bytes.clone();
        int second = bytes.length - 4; // flags, step, attempt, source offset, version: one byte each
        assertThat(repeated[second]).isEqualTo((byte) 1);
        repeated[second] = 0;
        assertThatThrownBy(() -> serializer.fromBinary(repeated, "P"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("does not ascend");
    }

    /**
     * The bytes an entry costs inside Distributed Data's messages, measured with Pekko's own
     * serializers, against the same with the entries bound to Jackson CBOR as before: the numbers
     * docs/scaling.md reports.
     */
    @Test
    void inDistributedDataAnEntryCostsAFractionOfWhatCborCost() {
        SingletonHarness.LedgerWireSize compact = SingletonHarness.LedgerWireSize.measure(serialization);
        ActorTestKit cborKit = ActorTestKit.create(
                "ledger-serializer-cbor",
                SingletonHarness.LedgerWireSize.cborBinding().withFallback(TestRollout.PEKKO));
        SingletonHarness.LedgerWireSize cbor;
        try {
            cbor = SingletonHarness.LedgerWireSize.measure(
                    SerializationExtension.get(Adapter.toClassic(cborKit.system())));
        } finally {
            cborKit.shutdownTestKit();
        }
        System.out.printf(
                Locale.ROOT,
                "ledger entry bytes, CBOR -> compact: value %.0f -> %.0f; an open task of a key's part %.1f -> %.1f;"
                        + " a key of %d open tasks %d -> %d%n",
                cbor.valueBytes(),
                compact.valueBytes(),
                cbor.entryBytes(),
                compact.entryBytes(),
                SingletonHarness.LedgerWireSize.KEY_ENTRIES,
                cbor.keyBytes(),
                compact.keyBytes());
        assertThat(compact.valueBytes()).isLessThanOrEqualTo(10);
        assertThat(cbor.valueBytes()).isGreaterThan(10 * compact.valueBytes());
        // Inside a part a task's id is its step from the one before: a byte or two, so a task of a
        // key costs less than alone, and far less than CBOR's field names and type name.
        assertThat(compact.entryBytes()).isLessThan(compact.valueBytes());
        assertThat(cbor.entryBytes()).isGreaterThan(10 * compact.entryBytes());
        // A key of the fleet's ledger (~625 open tasks), carried whole by each write to it: a few KB.
        assertThat(compact.keyBytes()).isLessThan(8 * 1024);
    }
}
