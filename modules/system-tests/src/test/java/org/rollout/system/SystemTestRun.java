package org.rollout.system;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.LocalDateTime;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.stream.Stream;
import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.BeforeEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * The per-test home of a system test's processes and files, as a JUnit extension:
 *
 * <pre>
 *   &#64;RegisterExtension final SystemTestRun run = new SystemTestRun();
 *   try (TestCluster c = TestCluster.aCluster(run).withNodes(3).start()) { … }
 * </pre>
 *
 * <ul>
 *   <li>Each test gets a directory under {@code target/system-tests/} for its logs, weights and
 *       dumps ({@link #dir()}).
 *   <li>Every process the test starts is registered; after the test any still alive is killed
 *       (SIGKILL), also when the test failed before closing its cluster, and a JVM shutdown hook
 *       does the same if the test JVM is stopped.
 *   <li>When the test failed, the directory is kept and the path of every log is printed; when it
 *       passed, the directory is deleted.
 * </ul>
 */
final class SystemTestRun implements BeforeEachCallback, AfterEachCallback {
    private static final Set<ManagedProcess> LIVE = ConcurrentHashMap.newKeySet();

    static {
        Runtime.getRuntime()
                .addShutdownHook(new Thread(
                        () -> LIVE.forEach(p -> {
                            try {
                                p.kill();
                            } catch (InterruptedException | AssertionError e) {
                                // The JVM is going down: nothing else can be done for this process.
                            }
                        }),
                        "system-tests-kill-children"));
    }

    private final List<ManagedProcess> processes = new ArrayList<>();
    private final List<Runnable> cleanups = new ArrayList<>();
    private Path dir;
    private String testName;

    @Override
    public void beforeEach(ExtensionContext context) throws IOException {
        testName = context.getRequiredTestClass().getSimpleName() + "."
                + context.getRequiredTestMethod().getName();
        Path root = Path.of(System.getProperty("rollout.system.dir", "target/system-tests"))
                .toAbsolutePath()
                .normalize();
        String stamp = LocalDateTime.now().format(DateTimeFormatter.ofPattern("HHmmss"));
        dir = Files.createDirectories(root.resolve(testName + "-" + stamp));
    }

    /** The test's directory: logs, weights, dumps. */
    Path dir() {
        if (dir == null) {
            throw new IllegalStateException("SystemTestRun is not registered as an extension of this test");
        }
        return dir;
    }

    /** The test's name, Class.method. */
    String testName() {
        return testName;
    }

    /** Tracks {@code p}: it is killed after the test if still alive. */
    synchronized ManagedProcess register(ManagedProcess p) {
        processes.add(p);
        LIVE.add(p);
        return p;
    }

    /** Runs {@code cleanup} after the test, whatever its result (after its processes are gone). */
    synchronized void onCleanup(Runnable cleanup) {
        cleanups.add(cleanup);
    }

    /** The logs of every process started so far, in start order. */
    synchronized List<Path> logs() {
        return processes.stream().map(ManagedProcess::log).distinct().toList();
    }

    @Override
    public void afterEach(ExtensionContext context) {
        List<ManagedProcess> all;
        List<Runnable> then;
        synchronized (this) {
            all = List.copyOf(processes);
            then = List.copyOf(cleanups);
        }
        for (ManagedProcess p : all) {
            try {
                if (p.isAlive()) {
                    p.kill();
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            } catch (AssertionError e) {
                System.out.println("[system-tests] " + e.getMessage());
            }
            LIVE.remove(p);
        }
        then.forEach(Runnable::run);
        if (context.getExecutionException().isPresent()) {
            System.out.println("[system-tests] " + testName + " FAILED; logs kept in " + dir + ":");
            for (ManagedProcess p : all) {
                System.out.println("[system-tests]   " + p.name() + ": " + p.log());
            }
        } else {
            deleteRecursively(dir);
        }
    }

    static void deleteRecursively(Path root) {
        if (!Files.exists(root)) {
            return;
        }
        try (Stream<Path> paths = Files.walk(root)) {
            for (Path p : paths.sorted(Comparator.reverseOrder()).toList()) {
                Files.deleteIfExists(p);
            }
        } catch (IOException e) {
            throw new UncheckedIOException("could not delete " + root, e);
        }
    }

    /** How long starting things may take on a loaded 2-core machine. */
    static final Duration START_TIMEOUT = Duration.ofSeconds(120);
}
