package org.rollout.cli;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.rollout.api.GenerationConfig;
import org.rollout.api.InvalidConfigException;
import org.rollout.api.Tokenizer;
import org.rollout.config.RolloutSettings;
import org.rollout.python.PythonWorkflowPool;
import org.rollout.python.WorkflowRefusedException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Starts the worker pool of a {@code python:package.module:ClassName} workflow or agent from the
 * settings ({@code rollout.python.*}), its first worker at once, so that a module that does not
 * import, a missing class, a class that is neither a workflow nor an agent, or kwargs its
 * constructor refuses stop the node before it serves, naming the key. Stateless.
 */
final class PythonPools {
    /** What {@code rollout.workflow} starts with to name a Python class. */
    static final String PREFIX = "python:";

    private static final Logger log = LoggerFactory.getLogger(PythonPools.class);

    private PythonPools() {}

    /**
     * The directory that holds the {@code rollout_client} package: {@code clients/python} under
     * {@code $ROLLOUT_HOME} (both launchers set it), {@code -Drollout.home}, or the working directory.
     *
     * @throws IllegalStateException naming where it looked, when none holds it
     */
    static Path clientPath() {
        List<String> homes = new ArrayList<>();
        for (String home : new String[] {System.getenv("ROLLOUT_HOME"), System.getProperty("rollout.home"), ""}) {
            if (home != null) {
                Path client = Path.of(home).toAbsolutePath().resolve("clients/python");
                if (Files.isDirectory(client.resolve("rollout_client"))) {
                    return client;
                }
                homes.add(client.toString());
            }
        }
        throw new IllegalStateException("the Python client package rollout_client is not in " + homes
                + ": set ROLLOUT_HOME to the engine's directory (bin/rollout does)");
    }

    /**
     * @param name {@code python:package.module:ClassName}
     * @param nameKey the key that named it, for errors ({@code rollout.workflow} or {@code rollout.eval_workflow})
     * @param kwargsKey the key of its kwargs, for errors
     * @throws InvalidConfigException naming {@code nameKey} or {@code kwargsKey}
     */
    static PythonWorkflowPool start(
            RolloutSettings settings,
            String name,
            Map<String, Object> kwargs,
            GenerationConfig g,
            Tokenizer tokenizer,
            String nameKey,
            String kwargsKey) {
        for (String fixed : List.of("gconfig", "tokenizer")) {
            if (kwargs.containsKey(fixed)) {
                throw new InvalidConfigException(
                        kwargsKey + "." + fixed,
                        kwargs.get(fixed),
                        "absent: a Python workflow's " + fixed + " comes from the configuration ("
                                + (fixed.equals("gconfig") ? "gconfig" : "tokenizer_path") + ")");
            }
        }
        RolloutSettings.Python p = settings.python();
        String python = PythonTrainerProcess.interpreter(
                        LocalCommand.configured(settings, "rollout.python.executable") ? p.executable() : null)
                .executable();
        PythonWorkflowPool.Settings pool = new PythonWorkflowPool.Settings(
                python,
                p.path(),
                clientPath(),
                p.workflowWorkers() != null ? p.workflowWorkers() : PythonWorkflowPool.Settings.defaultWorkers(),
                Duration.ofSeconds(120));
        try {
            PythonWorkflowPool workers =
                    PythonWorkflowPool.start(name.substring(PREFIX.length()), kwargs, g, tokenizer, pool);
            log.info("python {} {}: {} worker(s) at most, {}", workers.kind(), workers.spec(), pool.workers(), python);
            return workers;
        } catch (WorkflowRefusedException e) {
            throw new InvalidConfigException(nameKey, name, "a Python workflow that loads; " + e.getMessage());
        } catch (IllegalArgumentException e) {
            throw new InvalidConfigException(kwargsKey, kwargs, e.getMessage());
        } catch (IOException e) {
            throw new UncheckedIOException("starting the workers of " + name, e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while starting the workers of " + name, e);
        }
    }
}
