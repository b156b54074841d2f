package org.rollout.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.rollout.api.InvalidConfigException;
import org.rollout.config.RolloutConfig;
import org.rollout.config.RolloutSettings;
import org.rollout.core.DumpRecord;
import org.rollout.core.TrajectoryDumpReader;

/**
 * {@code rollout local} with {@code rollout.workflow = rlvr} and a Python {@code reward_fn} named in
 * the configuration: the {@code rollout.python.*} keys start the workers, every dumped row carries
 * the Python function's value, and no worker outlives the run.
 */
class LocalRunPythonRewardTest {
    private static final Pattern LETTER = Pattern.compile("Reply with the letter ([a-z])");

    @TempDir
    Path dir;

    private RolloutSettings settings(String rewardFn, String... more) {
        List<String> overrides = new ArrayList<>(List.of(
                "rollout.fileroot=" + dir,
                "rollout.trial_name=py",
                "rollout.workflow=rlvr",
                "rollout.workflow_kwargs.reward_fn=\"" + rewardFn + "\"",
                "rollout.python.executable=/usr/bin/python3",
                "rollout.python.path=\"" + dir.resolve("rewards") + "\"",
                "rollout.python.reward_workers=2",
                "gconfig.n_samples=4",
                "rollout.consumer_batch_size=4",
                "rollout.max_concurrent_rollouts=8"));
        overrides.addAll(List.of(more));
        return RolloutConfig.load(null, overrides, LocalCommand.profile("demo"));
    }

    private List<DumpRecord> dumped(String kind) throws java.io.IOException {
        List<DumpRecord> records = new ArrayList<>();
        try (Stream<Path> files = Files.walk(dir.resolve("demo/py/" + kind))) {
            for (Path f : files.filter(p -> p.toString().endsWith(".jsonl")).toList()) {
                records.addAll(TrajectoryDumpReader.read(f));
            }
        }
        return records;
    }

    private static double rewardOf(DumpRecord r) {
        return r.originalReward() != null ? r.originalReward() : r.reward();
    }

    @Test
    void aRunScoresEveryRowWithThePythonRewardAndLeavesNoWorkerBehind() throws Exception {
        Path pids = Files.createDirectories(dir.resolve("pids"));
        Files.createDirectories(dir.resolve("rewards"));
        // The reward encodes what it was given: the item's target letter and the number of generated ids.
        Files.writeString(dir.resolve("rewards/letter_py.py"), """
                import os
                def reward(prompt, completions, prompt_ids, completion_ids, target, **data):
                    open(os.path.join(%s, str(os.getpid())), "w").close()
                    print("scored", target, completions)
                    return (ord(target) - ord("a")) + 0.001 * len(completion_ids)
                """.formatted("r\"" + pids + "\""));

        ByteArrayOutputStream out = new ByteArrayOutputStream();
        new LocalRun(
                        settings("python:letter_py:reward"),
                        true, // the letters prompts, as the demo asks for them
                        false,
                        2,
                        1,
                        false,
                        new PrintStream(out, true, StandardCharsets.UTF_8))
                .execute();

        List<DumpRecord> records = dumped("rollout");
        assertThat(records).hasSizeGreaterThanOrEqualTo(8);
        for (DumpRecord r : records) {
            Matcher m = LETTER.matcher(r.prompt());
            assertThat(m.find()).as("prompt %s", r.prompt()).isTrue();
            double expected = (m.group(1).charAt(0) - 'a') + 0.001 * (r.seqlen() - r.promptLen());
            assertThat(rewardOf(r))
                    .as("reward of %s", r.completion())
                    .isCloseTo(expected, org.assertj.core.data.Offset.offset(1e-4));
        }

        List<Long> workers;
        try (Stream<Path> files = Files.list(pids)) {
            workers = files.map(p -> Long.parseLong(p.getFileName().toString())).toList();
        }
        assertThat(workers).hasSizeBetween(1, 2);
        for (long pid : workers) {
            ProcessHandle.of(pid)
                    .ifPresent(h -> h.onExit().orTimeout(30, TimeUnit.SECONDS).join());
            assertThat(ProcessHandle.of(pid).filter(ProcessHandle::isAlive))
                    .as("worker %d", pid)
                    .isEmpty();
        }
        assertThat(out.toString(StandardCharsets.UTF_8)).contains("Done in");
    }

    @Test
    void evaluationGroupsAreScoredByTheEvaluationWorkflowsOwnKwargs() throws Exception {
        Files.createDirectories(dir.resolve("rewards"));
        Files.writeString(dir.resolve("rewards/train_py.py"), """
                def reward(prompt, completions, prompt_ids, completion_ids, target, **data):
                    return 0.001 * len(completion_ids)
                """);
        Files.writeString(dir.resolve("rewards/eval_py.py"), """
                def reward(prompt, completions, prompt_ids, completion_ids, target, **data):
                    return 100 + 0.001 * len(completion_ids)
                """);
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        new LocalRun(
                        settings(
                                "python:train_py:reward",
                                "rollout.eval_workflow=rlvr",
                                "rollout.eval_workflow_kwargs.reward_fn=\"python:eval_py:reward\""),
                        true, // the letters prompts and evaluation items, as the demo asks for them
                        false,
                        2,
                        1,
                        false,
                        new PrintStream(out, true, StandardCharsets.UTF_8))
                .execute();

        List<DumpRecord> train = dumped("rollout");
        List<DumpRecord> eval = dumped("eval-rollout");
        assertThat(train).hasSizeGreaterThanOrEqualTo(8);
        assertThat(eval).isNotEmpty();
        for (DumpRecord r : train) {
            assertThat(rewardOf(r)).as("training reward of %s", r.completion()).isLessThan(50);
        }
        for (DumpRecord r : eval) {
            double expected = 100 + 0.001 * (r.seqlen() - r.promptLen());
            assertThat(rewardOf(r))
                    .as("evaluation reward of %s", r.completion())
                    .isCloseTo(expected, org.assertj.core.data.Offset.offset(1e-4));
        }
        assertThat(out.toString(StandardCharsets.UTF_8))
                .contains("evaluation workflow: rlvr {reward_fn=python:eval_py:reward}");
    }

    @Test
    void aRewardModuleThatDoesNotImportStopsTheRunBeforeAnySample() throws Exception {
        Files.createDirectories(dir.resolve("rewards"));
        Files.writeString(dir.resolve("rewards/broken_py.py"), "import no_such_dependency\n");

        assertThatThrownBy(() -> new LocalRun(
                                settings("python:broken_py:reward"),
                                true, // the letters prompts, as the demo asks for them
                                false,
                                2,
                                1,
                                false,
                                new PrintStream(new ByteArrayOutputStream(), true, StandardCharsets.UTF_8))
                        .execute())
                .isInstanceOf(InvalidConfigException.class)
                .hasMessageContaining("'rollout.workflow_kwargs.reward_fn'")
                .hasMessageContaining(
                        "import broken_py failed: ModuleNotFoundError: No module named 'no_such_dependency'");
    }
}
