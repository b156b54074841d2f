package org.rollout.cli;

import java.io.BufferedReader;
import java.io.File;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.rollout.workflows.demo.StepReport;

/**
 * {@code rollout local --trainer python}: the PyTorch GRPO trainer of {@code
 * clients/python/examples/grpo_trainer.py} as a separate process, joining the engine through a
 * trainer gateway. Its output is echoed; its step lines become {@link StepReport}s for the summary.
 *
 * <p>The interpreter ({@link #choose}): {@code rollout.python.executable} when it is set, else
 * {@code $ROLLOUT_PYTHON}, else the {@code python3} on {@code PATH} (an active virtualenv's) when it
 * can import the client package {@code rollout_client} (clients/python), else {@code
 * /usr/bin/python3} when it exists, else {@code python3}; it needs numpy and torch. The run's first
 * lines say which and why. The script is found under {@code $ROLLOUT_HOME} (set by {@code
 * bin/rollout}), else the working directory.
 */
final class PythonTrainerProcess {
    static final String SCRIPT = "clients/python/examples/grpo_trainer.py";
    private static final Pattern STEP = Pattern.compile(
            "^step (\\d+)/\\d+ +batch (-?\\d+) +(\\d+) groups +v(\\d+) reward ([-0-9.naNinf]+) tokens (\\d+) "
                    + "clip ([-0-9.]+) \\|g\\| ([-0-9.naNinf]+) .*?(\\d+) ms");
    private static final Duration STOP_DEADLINE = Duration.ofSeconds(10);

    private PythonTrainerProcess() {}

    static Path script() {
        String home = System.getenv("ROLLOUT_HOME");
        Path root =
                home != null && !home.isBlank() ? Path.of(home) : Path.of("").toAbsolutePath();
        return root.resolve(SCRIPT);
    }

    /** The interpreter chosen, and why, as the run's first lines say it. */
    record Interpreter(String executable, String why) {
        @Override
        public String toString() {
            return executable + " (" + why + ")";
        }
    }

    static final Path SYSTEM_PYTHON = Path.of("/usr/bin/python3");

    /**
     * Which Python runs the trainer. Pure: the file system and the import are asked through {@code
     * executable} and {@code importsClient}.
     *
     * @param configured {@code rollout.python.executable} when the user set it, else null
     * @param fromEnvironment {@code $ROLLOUT_PYTHON}, or null
     * @param path the entries of {@code $PATH}, in order
     * @param executable whether a file is an executable
     * @param importsClient whether that Python can import {@code rollout_client} as the trainer is run
     */
    static Interpreter choose(
            String configured,
            String fromEnvironment,
            List<Path> path,
            Predicate<Path> executable,
            Predicate<Path> importsClient) {
        if (configured != null && !configured.isBlank()) {
            return new Interpreter(configured, "rollout.python.executable");
        }
        if (fromEnvironment != null && !fromEnvironment.isBlank()) {
            return new Interpreter(fromEnvironment, "$ROLLOUT_PYTHON");
        }
        String notOnPath = "no python3 on PATH";
        for (Path dir : path) {
            Path candidate = dir.resolve("python3");
            if (executable.test(candidate)) {
                if (importsClient.test(candidate)) {
                    return new Interpreter(
                            candidate.toString(), "the python3 on PATH; it imports rollout_client, numpy and torch");
                }
                notOnPath = "the python3 on PATH, " + candidate + ", cannot import rollout_client, numpy and torch";
                break;
            }
        }
        if (executable.test(SYSTEM_PYTHON)) {
            return new Interpreter(SYSTEM_PYTHON.toString(), notOnPath);
        }
        return new Interpreter("python3", notOnPath + ", and there is no " + SYSTEM_PYTHON);
    }

    /** {@link #choose} for this process: its environment, its PATH, and a real import of rollout_client. */
    static Interpreter interpreter(String configured) {
        String pathVariable = System.getenv("PATH");
        List<Path> path = new ArrayList<>();
        if (pathVariable != null) {
            for (String entry : pathVariable.split(File.pathSeparator)) {
                if (!entry.isBlank()) {
                    path.add(Path.of(entry));
                }
            }
        }
        return choose(
                configured,
                System.getenv("ROLLOUT_PYTHON"),
                path,
                p -> Files.isRegularFile(p) && Files.isExecutable(p),
                PythonTrainerProcess::importsClient);
    }

    /**
     * True when {@code python}, with the trainer's PYTHONPATH, imports what the trainer script needs
     * (rollout_client, numpy and torch) within 30 s: an interpreter with the client but without
     * torch would start the trainer only to fail.
     */
    static boolean importsClient(Path python) {
        try {
            ProcessBuilder pb = new ProcessBuilder(python.toString(), "-c", "import rollout_client, numpy, torch")
                    .redirectErrorStream(true)
                    .redirectOutput(ProcessBuilder.Redirect.DISCARD);
            pb.environment().put("PYTHONPATH", script().getParent().getParent().toString());
            Process p = pb.start();
            if (!p.waitFor(30, TimeUnit.SECONDS)) {
                p.destroyForcibly();
                return false;
            }
            return p.exitValue() == 0;
        } catch (IOException e) {
            return false;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }

    /**
     * Runs the trainer for {@code steps} steps against {@code gateway}, adding each of its steps to
     * {@code reports} as it is printed. An interrupt (Ctrl-C) stops the trainer: SIGTERM, which it
     * handles like Ctrl-C, then after {@link #STOP_DEADLINE} a kill; the steps done stay in
     * {@code reports}.
     *
     * @throws IOException when the script is missing or the trainer exits with a status other than 0
     *     (the message says which)
     * @throws InterruptedException when interrupted, once the trainer has stopped
     */
    static void run(
            URI gateway,
            Path initialWeights,
            Path weightsDir,
            int steps,
            double temperature,
            Interpreter python,
            PrintStream out,
            List<StepReport> reports)
            throws IOException, InterruptedException {
        Path script = script();
        if (!Files.isRegularFile(script)) {
            throw new IOException("the Python trainer is not at " + script + " (set ROLLOUT_HOME to the repository)");
        }
        List<String> command = List.of(
                python.executable(),
                script.toString(),
                "--contact",
                gateway.toString(),
                "--initial-weights",
                initialWeights.toAbsolutePath().toString(),
                "--weights-dir",
                weightsDir.toAbsolutePath().toString(),
                "--steps",
                Integer.toString(steps),
                "--temperature",
                Double.toString(temperature));
        ProcessBuilder pb = new ProcessBuilder(command).redirectErrorStream(true);
        pb.environment().put("PYTHONPATH", script.getParent().getParent().toString());
        pb.environment().put("PYTHONUNBUFFERED", "1");
        Process p = pb.start();
        // The output is read on its own thread: a read does not answer an interrupt, waitFor does.
        Thread echo = Thread.ofVirtual().name("python-trainer-output").start(() -> echo(p, weightsDir, out, reports));
        try {
            int status = p.waitFor();
            echo.join(STOP_DEADLINE.toMillis());
            if (status != 0) {
                throw new IOException("the Python trainer (" + String.join(" ", command) + ") exited with " + status);
            }
        } finally {
            if (p.isAlive()) {
                stop(p);
            }
            echo.join(STOP_DEADLINE.toMillis());
        }
    }

    private static void echo(Process p, Path weightsDir, PrintStream out, List<StepReport> reports) {
        try (BufferedReader r = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8))) {
            String line;
            while ((line = r.readLine()) != null) {
                out.println(line);
                StepReport report = parse(line, weightsDir);
                if (report != null) {
                    reports.add(report);
                }
            }
        } catch (IOException e) {
            // The trainer's output closed under it (it was killed): nothing more to echo.
        }
    }

    /** SIGTERM to the trainer and what it started, then SIGKILL after {@link #STOP_DEADLINE}. */
    private static void stop(Process p) throws InterruptedException {
        List<ProcessHandle> children = p.descendants().toList();
        p.destroy();
        if (!p.waitFor(STOP_DEADLINE.toMillis(), TimeUnit.MILLISECONDS)) {
            p.destroyForcibly();
            p.waitFor(STOP_DEADLINE.toMillis(), TimeUnit.MILLISECONDS);
        }
        children.forEach(ProcessHandle::destroyForcibly);
    }

    /** A step line of the trainer as a report, or null for any other line. */
    static StepReport parse(String line, Path weightsDir) {
        Matcher m = STEP.matcher(line);
        if (!m.find()) {
            return null;
        }
        int version = Integer.parseInt(m.group(4));
        return new StepReport(
                version,
                Long.parseLong(m.group(2)),
                Integer.parseInt(m.group(3)),
                0,
                Long.parseLong(m.group(6)),
                Double.parseDouble(m.group(5).toLowerCase(Locale.ROOT)),
                List.of(),
                Double.parseDouble(m.group(7)),
                Double.parseDouble(m.group(8).toLowerCase(Locale.ROOT)),
                weightsDir.resolve("v" + version + ".rlm"),
                Duration.ofMillis(Long.parseLong(m.group(9))));
    }
}
