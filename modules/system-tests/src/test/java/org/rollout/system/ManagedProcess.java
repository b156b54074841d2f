package org.rollout.system;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * One process of a system test (a node, a model server, a tool), started with {@link
 * ProcessBuilder}, its standard output and error both appended to one log file.
 *
 * <p>Faults: {@link #kill()} is SIGKILL ({@link ProcessHandle#destroyForcibly()} on Linux), {@link
 * #suspend()} and {@link #resume()} are SIGSTOP and SIGCONT, sent with {@code kill(1)} to this
 * process's pid only. {@link #stop} is SIGTERM, then SIGKILL after its grace period. Every wait has
 * a deadline, and a wait for a log line fails at once when the process has exited.
 */
final class ManagedProcess {
    private final String name;
    private final Path log;
    private final Process process;
    private final List<String> command;
    private long readOffset;
    private final StringBuilder partial = new StringBuilder();
    private final List<String> seen = new ArrayList<>();

    private ManagedProcess(String name, Path log, Process process, List<String> command) {
        this.name = name;
        this.log = log;
        this.process = process;
        this.command = List.copyOf(command);
    }

    /** Starts {@code command} in {@code workDir} with {@code env} added to this JVM's environment. */
    static ManagedProcess start(String name, List<String> command, Map<String, String> env, Path workDir, Path log)
            throws IOException {
        Files.createDirectories(log.getParent());
        Files.writeString(log, "$ " + String.join(" ", command) + "\n", StandardCharsets.UTF_8);
        ProcessBuilder pb = new ProcessBuilder(command)
                .directory(workDir.toFile())
                .redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile()))
                .redirectInput(ProcessBuilder.Redirect.from(new java.io.File("/dev/null")));
        pb.environment().putAll(env);
        return new ManagedProcess(name, log, pb.start(), command);
    }

    String name() {
        return name;
    }

    Path log() {
        return log;
    }

    long pid() {
        return process.pid();
    }

    boolean isAlive() {
        return process.isAlive();
    }

    /** The exit status of a process that has ended (128 + the signal for one killed by a signal). */
    int exitValue() {
        return process.exitValue();
    }

    List<String> command() {
        return command;
    }

    /**
     * Waits until a line of the log matches {@code pattern}; returns the first match (searched from
     * the beginning of the log).
     *
     * @throws AssertionError when the deadline passes or the process exits first, quoting the log's tail
     */
    synchronized Matcher awaitLine(Pattern pattern, Duration timeout) throws InterruptedException, IOException {
        long deadline = System.nanoTime() + timeout.toNanos();
        int from = 0;
        while (true) {
            readNew();
            for (int i = from; i < seen.size(); i++) {
                Matcher m = pattern.matcher(seen.get(i));
                if (m.find()) {
                    return m;
                }
            }
            from = seen.size();
            if (!process.isAlive()) {
                readNew();
                for (int i = from; i < seen.size(); i++) {
                    Matcher m = pattern.matcher(seen.get(i));
                    if (m.find()) {
                        return m;
                    }
                }
                throw new AssertionError(
                        name + " exited with " + process.exitValue() + " before printing /" + pattern + "/; " + tail());
            }
            if (System.nanoTime() - deadline >= 0) {
                throw new AssertionError(name + " did not print /" + pattern + "/ within " + timeout + "; " + tail());
            }
            Thread.sleep(50);
        }
    }

    /** Every complete line of the log so far. */
    synchronized List<String> lines() throws IOException {
        readNew();
        return List.copyOf(seen);
    }

    /** The complete lines of the log from line {@code from} (0-based) on. */
    synchronized List<String> linesFrom(int from) throws IOException {
        readNew();
        return List.copyOf(seen.subList(Math.min(from, seen.size()), seen.size()));
    }

    /** The first line matching {@code pattern} so far, if any. */
    synchronized Optional<Matcher> find(Pattern pattern) throws IOException {
        readNew();
        for (String line : seen) {
            Matcher m = pattern.matcher(line);
            if (m.find()) {
                return Optional.of(m);
            }
        }
        return Optional.empty();
    }

    private void readNew() throws IOException {
        if (!Files.exists(log)) {
            return;
        }
        try (RandomAccessFile f = new RandomAccessFile(log.toFile(), "r")) {
            long length = f.length();
            if (length <= readOffset) {
                return;
            }
            byte[] bytes = new byte[(int) Math.min(length - readOffset, 64L << 20)];
            f.seek(readOffset);
            f.readFully(bytes);
            readOffset += bytes.length;
            partial.append(new String(bytes, StandardCharsets.UTF_8));
        }
        int start = 0;
        for (int i = 0; i < partial.length(); i++) {
            if (partial.charAt(i) == '\n') {
                seen.add(partial.substring(start, i));
                start = i + 1;
            }
        }
        partial.delete(0, start);
    }

    private String tail() {
        try {
            readNew();
        } catch (IOException e) {
            return "its log " + log + " could not be read: " + e;
        }
        int from = Math.max(0, seen.size() - 25);
        return "log " + log + ", last lines:\n  " + String.join("\n  ", seen.subList(from, seen.size()));
    }

    /** SIGKILL, then waits (at most 30 s) until the process is gone. */
    void kill() throws InterruptedException {
        process.destroyForcibly();
        if (!process.waitFor(30, TimeUnit.SECONDS)) {
            throw new AssertionError(name + " (pid " + pid() + ") still alive 30 s after SIGKILL");
        }
    }

    /** Waits at most {@code timeout} for the process to end by itself; returns its exit status. */
    int awaitExit(Duration timeout) throws InterruptedException {
        if (!process.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
            throw new AssertionError(name + " (pid " + pid() + ") still running after " + timeout + "; " + tail());
        }
        return process.exitValue();
    }

    /** SIGTERM, without waiting. */
    void terminate() {
        process.destroy();
    }

    /** SIGTERM; after {@code grace} SIGKILL. Returns the exit status. */
    int stop(Duration grace) throws InterruptedException {
        if (process.isAlive()) {
            process.destroy();
            if (!process.waitFor(grace.toMillis(), TimeUnit.MILLISECONDS)) {
                kill();
            }
        }
        return process.exitValue();
    }

    /** SIGINT, as Ctrl-C in a terminal sends it, without waiting. */
    void interrupt() throws IOException, InterruptedException {
        signal("INT");
    }

    /** SIGSTOP: the process freezes (its sockets stay open, nothing answers). */
    void suspend() throws IOException, InterruptedException {
        signal("STOP");
    }

    /** SIGCONT after {@link #suspend()}. */
    void resume() throws IOException, InterruptedException {
        signal("CONT");
    }

    private void signal(String signal) throws IOException, InterruptedException {
        Process kill = new ProcessBuilder("kill", "-" + signal, Long.toString(pid()))
                .redirectErrorStream(true)
                .start();
        if (!kill.waitFor(10, TimeUnit.SECONDS) || kill.exitValue() != 0) {
            String out = new String(kill.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            throw new IOException("kill -" + signal + " " + pid() + " (" + name + ") failed: " + out);
        }
    }

    /** Runs {@code command} to completion (at most {@code timeout}); returns its output. */
    static String run(List<String> command, Map<String, String> env, Path workDir, Duration timeout)
            throws IOException, InterruptedException {
        ProcessBuilder pb =
                new ProcessBuilder(command).directory(workDir.toFile()).redirectErrorStream(true);
        pb.environment().putAll(env);
        Process p = pb.start();
        byte[][] out = new byte[1][];
        Thread reader = Thread.ofVirtual().start(() -> {
            try {
                out[0] = p.getInputStream().readAllBytes();
            } catch (IOException e) {
                out[0] = ("(output unreadable: " + e + ")").getBytes(StandardCharsets.UTF_8);
            }
        });
        if (!p.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
            p.destroyForcibly();
            throw new AssertionError(String.join(" ", command) + " did not finish within " + timeout);
        }
        reader.join(Duration.ofSeconds(10));
        String text = out[0] == null ? "" : new String(out[0], StandardCharsets.UTF_8);
        if (p.exitValue() != 0) {
            throw new AssertionError(String.join(" ", command) + " exited with " + p.exitValue() + ":\n" + text);
        }
        return text;
    }

    @Override
    public String toString() {
        return name + "(pid " + pid() + (isAlive() ? "" : ", exited") + ")";
    }
}
