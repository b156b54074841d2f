package org.rollout.modelserver;

import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.SplittableRandom;

/**
 * The scheduler's bookkeeping for {@link OutputLengths}: one draw per rid and attempt, kept while
 * the generation may still be resumed. Scheduler-thread confined (not thread-safe).
 */
final class SimulatedLengths {
    private final OutputLengths config;
    private final Map<String, Draw> draws = new LinkedHashMap<>(16, 0.75f, false) {
        @Override
        protected boolean removeEldestEntry(Map.Entry<String, Draw> eldest) {
            return size() > OutputLengths.REMEMBERED_RIDS;
        }
    };

    /**
     * One draw: the prompt length it was made for, the absolute sequence length where that
     * generation ends, and which attempt of the rid it was.
     */
    private record Draw(int promptLength, long end, int attempt) {}

    SimulatedLengths(OutputLengths config) {
        this.config = config;
    }

    /**
     * The absolute sequence length (prompt + output) at which the admitted generation {@code rid}
     * with a prompt of {@code promptLength} tokens ends: the remembered draw for a resumed segment,
     * else a fresh draw.
     */
    long endOf(String rid, int promptLength) {
        Draw d = draws.get(rid);
        if (d != null && promptLength > d.promptLength()) {
            return d.end();
        }
        int attempt = d == null ? 0 : d.attempt() + 1;
        int length = config.distribution().sample(new SplittableRandom(streamSeed(rid, attempt)));
        Draw fresh = new Draw(promptLength, (long) promptLength + length, attempt);
        draws.remove(rid); // re-inserted last: the newest draw is evicted last
        draws.put(rid, fresh);
        return fresh.end();
    }

    /** The generation {@code rid} finished (not aborted): it will not be resumed. */
    void finished(String rid) {
        draws.remove(rid);
    }

    /** How many draws are remembered (tests). */
    int remembered() {
        return draws.size();
    }

    private long streamSeed(String rid, int attempt) {
        long h = 0xcbf29ce484222325L; // FNV-1a over the rid's bytes
        for (byte b : rid.getBytes(StandardCharsets.UTF_8)) {
            h = (h ^ (b & 0xff)) * 0x100000001b3L;
        }
        return config.seed() * 0x9E3779B97F4A7C15L ^ h ^ ((long) attempt << 32 | attempt);
    }
}
