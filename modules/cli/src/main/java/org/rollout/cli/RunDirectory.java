package org.rollout.cli;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.channels.OverlappingFileLockException;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.stream.Stream;
import org.rollout.api.InvalidConfigException;

/**
 * A run's directory ({@code {fileroot}/{experiment_name}/{trial_name}}), claimed by one run at a
 * time: a new run creates it (two runs never share one, also when started in the same second), and
 * holds a lock on {@code .lock} inside it until it ends, so a second run given the same trial name
 * is refused instead of mixing its dumps, statistics and weights into the first one's. Reusing the
 * directory of an earlier, finished run is refused too, unless asked for ({@code --reuse-run-dir}).
 * The lock is the operating system's: a run killed with SIGKILL leaves no stale lock behind.
 */
final class RunDirectory implements AutoCloseable {
    static final String LOCK_FILE = ".lock";

    private final Path dir;
    private final FileChannel channel;
    private final FileLock lock;

    private RunDirectory(Path dir, FileChannel channel, FileLock lock) {
        this.dir = dir;
        this.channel = channel;
        this.lock = lock;
    }

    /**
     * Claims {@code dir} for this run.
     *
     * @param trialName the configured trial name, named in refusals
     * @param reuse true to write into a directory an earlier run left (not one a running run holds)
     * @throws InvalidConfigException when the directory is in use, or was used before and {@code
     *     reuse} is false (naming {@code rollout.trial_name} and the directory)
     */
    static RunDirectory claim(Path dir, String trialName, boolean reuse) throws IOException {
        Files.createDirectories(dir.toAbsolutePath().getParent());
        boolean created;
        try {
            Files.createDirectory(dir);
            created = true;
        } catch (FileAlreadyExistsException e) {
            created = false;
        }
        if (!created && !reuse && !isEmpty(dir)) {
            throw new InvalidConfigException(
                    "rollout.trial_name",
                    trialName,
                    "a trial name whose run directory is not used yet: " + dir.toAbsolutePath()
                            + " holds an earlier run (choose another trial_name, or pass --reuse-run-dir to write into it)");
        }
        FileChannel channel =
                FileChannel.open(dir.resolve(LOCK_FILE), StandardOpenOption.CREATE, StandardOpenOption.WRITE);
        FileLock lock;
        try {
            lock = channel.tryLock();
        } catch (OverlappingFileLockException e) {
            lock = null;
        }
        if (lock == null) {
            channel.close();
            throw new InvalidConfigException(
                    "rollout.trial_name",
                    trialName,
                    "a trial name no running run uses: " + dir.toAbsolutePath() + " is in use by another run");
        }
        channel.truncate(0);
        channel.write(
                ByteBuffer.wrap(("pid " + ProcessHandle.current().pid() + "\n").getBytes(StandardCharsets.UTF_8)));
        return new RunDirectory(dir, channel, lock);
    }

    private static boolean isEmpty(Path dir) throws IOException {
        try (Stream<Path> entries = Files.list(dir)) {
            return entries.allMatch(p -> p.getFileName().toString().equals(LOCK_FILE));
        }
    }

    Path path() {
        return dir;
    }

    /** Releases the lock; the directory and its lock file stay. */
    @Override
    public void close() throws IOException {
        try {
            lock.release();
        } finally {
            channel.close();
        }
    }
}
