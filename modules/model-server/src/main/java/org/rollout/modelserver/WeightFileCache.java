package org.rollout.modelserver;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;

/**
 * The weight files this JVM has read and checked, shared by every model server in it: a file read
 * again unchanged is not read, parsed and checked again. When a fleet of built-in servers in one
 * JVM (the benchmarks, the tests, {@code rollout local}) loads the same new file, one server reads
 * it and the others take its result, instead of each reading and checking the file on the same
 * cores while the update waits for the slowest.
 *
 * <p>A file counts as unchanged when its identity, stamps and checksum are: the absolute path, the
 * device and inode (or the file key), the size, the modification time and, where the platform has
 * one, the status-change time, plus the file's header and the CRC32 stored in its last four bytes
 * (read on every load: 28 bytes, not the whole file). The times alone could miss a rewrite in place
 * within one clock tick; the stored CRC covers the whole content, so a file rewritten with other
 * weights is read again even then. Reads that fail are not kept: the next load tries again and
 * reports the defect again. At most {@value #CAPACITY} files
 * are kept (the newest used), so a run that writes a new file per version holds at most a few MB.
 *
 * <p>Thread-safe. Concurrent loads of the same unchanged file wait for one read.
 */
final class WeightFileCache {
    static final int CAPACITY = 4;

    private static final Map<Path, Entry> entries = new LinkedHashMap<>(8, 0.75f, true);

    private record Entry(List<Object> stamp, CompletableFuture<TinyLmWeights> weights) {}

    private WeightFileCache() {}

    /**
     * The weights in {@code path}, from memory when the file is unchanged since it was last read,
     * else read and checked by {@link TinyLmWeights#read}.
     *
     * @throws WeightFileException as {@link TinyLmWeights#read} does
     */
    static TinyLmWeights read(Path path) throws WeightFileException {
        Path absolute = path.toAbsolutePath().normalize();
        List<Object> stamp = stamp(absolute);
        if (stamp == null) {
            return TinyLmWeights.read(absolute); // cannot stat: the read reports why
        }
        CompletableFuture<TinyLmWeights> mine = new CompletableFuture<>();
        CompletableFuture<TinyLmWeights> cached;
        synchronized (entries) {
            Entry e = entries.get(absolute);
            if (e != null && e.stamp().equals(stamp)) {
                cached = e.weights();
            } else {
                cached = null;
                entries.put(absolute, new Entry(stamp, mine));
                while (entries.size() > CAPACITY) {
                    entries.remove(entries.keySet().iterator().next());
                }
            }
        }
        if (cached != null) {
            return await(cached, absolute);
        }
        try {
            TinyLmWeights w = TinyLmWeights.read(absolute);
            mine.complete(w);
            return w;
        } catch (WeightFileException | RuntimeException e) {
            synchronized (entries) {
                entries.remove(absolute, new Entry(stamp, mine));
            }
            mine.completeExceptionally(e);
            throw e;
        }
    }

    /** Forgets every file (tests). */
    static void clear() {
        synchronized (entries) {
            entries.clear();
        }
    }

    private static TinyLmWeights await(CompletableFuture<TinyLmWeights> f, Path path) throws WeightFileException {
        boolean interrupted = false;
        try {
            while (true) {
                try {
                    return f.get();
                } catch (InterruptedException e) {
                    interrupted = true;
                } catch (ExecutionException e) {
                    if (e.getCause() instanceof WeightFileException wfe) {
                        throw new WeightFileException(wfe.path(), wfe.reason(), wfe);
                    }
                    // Another server's read failed in a way that is not the file's defect: read it here.
                    return TinyLmWeights.read(path);
                }
            }
        } finally {
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
        }
    }

    /** The file's identity and stamps, or null when it cannot be stat'ed. */
    private static List<Object> stamp(Path absolute) {
        try {
            Map<String, Object> unix = Files.readAttributes(absolute, "unix:dev,ino,size,lastModifiedTime,ctime");
            return List.of(
                    unix.get("dev"),
                    unix.get("ino"),
                    unix.get("size"),
                    unix.get("lastModifiedTime"),
                    unix.get("ctime"));
        } catch (UnsupportedOperationException | IllegalArgumentException e) {
            try {
                BasicFileAttributes a = Files.readAttributes(absolute, BasicFileAttributes.class);
                Object key = a.fileKey() == null ? "" : a.fileKey();
                return List.of(key, a.size(), a.lastModifiedTime());
            } catch (IOException io) {
                return null;
            }
        } catch (IOException e) {
            return null;
        }
    }
}
