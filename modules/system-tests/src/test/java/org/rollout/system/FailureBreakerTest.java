package org.rollout.system;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A run that can never succeed stops by itself: {@code rollout local} with a reward function that
 * always raises, and with a workflow that fails every episode, each ends with exit 3 and one message
 * naming the cause, an example task and the key to change, well before its steps, and its output
 * stays small (the repeated warnings are summarised).
 */
@Timeout(480)
class FailureBreakerTest {
    /** A failing group takes well under a second: 200 of them, the default window, take seconds. */
    private static final Duration STOP_WITHIN = Duration.ofSeconds(180);
    /** Before, such a run wrote about 47 MB in 150 s. */
    private static final long MAX_OUTPUT_BYTES = 512 * 1024;

    @RegisterExtension
    final SystemTestRun run = new SystemTestRun();

    private final Path conf = CliProcess.REPO_ROOT.resolve("examples/user-workflow/rollout-python.conf");

    private ManagedProcess local(String name, String... overrides) throws Exception {
        String[] args = new String[6 + overrides.length];
        args[0] = "local";
        args[1] = "--config";
        args[2] = conf.toString();
        args[3] = "--steps";
        args[4] = "50";
        args[5] = "--no-status";
        System.arraycopy(overrides, 0, args, 6, overrides.length);
        return CliProcess.start(run, name, args);
    }

    private String stoppedByTheBreaker(ManagedProcess p) throws Exception {
        long started = System.nanoTime();
        int status = p.awaitExit(STOP_WITHIN);
        String out = String.join("\n", p.lines());
        assertThat(status).as("exit status; output:\n" + out).isEqualTo(3);
        assertThat(Duration.ofNanos(System.nanoTime() - started)).isLessThan(STOP_WITHIN);
        assertThat(Files.size(p.log()))
                .as("the run's whole output (stdout and stderr)")
                .isLessThan(MAX_OUTPUT_BYTES);
        assertThat(out)
                .contains("the run cannot make progress: 200 of the last 200 groups failed (failed: 200)")
                .contains("example: task ")
                .contains("rollout local: stopped (exit 3)")
                .as("an evaluation whose groups all failed has no mean reward, shown as such")
                .doesNotContain("NaN");
        return out;
    }

    @Test
    void aRewardFunctionThatAlwaysRaisesEndsTheRunNamingItsError() throws Exception {
        Path rewards = Files.createDirectories(run.dir().resolve("rewards"));
        Files.writeString(rewards.resolve("always_raises.py"), """
                def reward(prompt, completions, prompt_ids, completion_ids, **data):
                    return 1 / 0
                """);
        String out = stoppedByTheBreaker(local(
                "raising-reward",
                "rollout.python.executable=/usr/bin/python3",
                "rollout.python.path=\"" + rewards + "\"",
                "rollout.workflow_kwargs.reward_fn=\"python:always_raises:reward\"",
                "rollout.fileroot=" + run.dir().resolve("runs-reward")));
        assertThat(out)
                .contains("ZeroDivisionError")
                .contains("to change: the reward function (rollout.workflow_kwargs.reward_fn)");
    }

    @Test
    void aWorkflowThatFailsEveryEpisodeEndsTheRunNamingItsError() throws Exception {
        // The dataset's items have no such key: every episode of the rlvr workflow throws.
        String out = stoppedByTheBreaker(local(
                "raising-workflow",
                "rollout.workflow_kwargs.prompt_key=no_such_key",
                "rollout.fileroot=" + run.dir().resolve("runs-workflow")));
        assertThat(out)
                .contains("no prompt")
                .contains("to change: the workflow (rollout.workflow, rollout.workflow_kwargs)");
    }
}
