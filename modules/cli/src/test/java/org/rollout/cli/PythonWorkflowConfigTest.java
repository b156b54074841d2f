package org.rollout.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.rollout.api.InvalidConfigException;
import org.rollout.config.RolloutConfig;
import org.rollout.config.RolloutSettings;

/**
 * {@code rollout.workflow = "python:module:Class"} as a node assembles it: a class that cannot load
 * and kwargs the configuration owns are refused before anything serves, naming the key; a workflow
 * class and an agent class are told apart by their first worker, and the workers end with the node.
 */
class PythonWorkflowConfigTest {
    private static final Path EXAMPLES = Path.of(
                    System.getProperty("user.dir"), "..", "..", "examples", "python-workflows")
            .toAbsolutePath()
            .normalize();

    static {
        // Where rollout_client is (bin/rollout sets ROLLOUT_HOME; the test runs in modules/cli).
        System.setProperty("rollout.home", EXAMPLES.getParent().getParent().toString());
    }

    private static RolloutSettings settings(String... overrides) {
        List<String> all = new ArrayList<>(List.of(
                "rollout.python.executable=/usr/bin/python3",
                "rollout.python.path=\"" + EXAMPLES + "\"",
                "rollout.python.workflow_workers=1",
                "rollout.workflow_kwargs.reward_fn=\"letters.reward\""));
        all.addAll(List.of(overrides));
        return RolloutConfig.load(null, all, LocalCommand.profile("demo"));
    }

    private static void closeAll(List<AutoCloseable> toClose) throws Exception {
        for (AutoCloseable c : toClose) {
            c.close();
        }
    }

    @Test
    void aClassThatCannotLoadOrAKwargTheConfigurationOwnsIsRefusedNamingTheKey() throws Exception {
        List<AutoCloseable> toClose = new ArrayList<>();
        try {
            assertThatThrownBy(() -> new NodeAssembly(
                                    settings("rollout.workflow=\"python:rlvr:NoSuch\""), true, false, toClose)
                            .prepare())
                    .isInstanceOf(InvalidConfigException.class)
                    .hasMessageContaining("'rollout.workflow'")
                    .hasMessageContaining("module rlvr has no attribute 'NoSuch'");
            assertThatThrownBy(() -> new NodeAssembly(
                                    settings(
                                            "rollout.workflow=\"python:rlvr:RLVRWorkflow\"",
                                            "rollout.workflow_kwargs.tokenizer=x"),
                                    true,
                                    false,
                                    toClose)
                            .prepare())
                    .isInstanceOf(InvalidConfigException.class)
                    .hasMessageContaining("'rollout.workflow_kwargs.tokenizer'");
            assertThatThrownBy(() -> new NodeAssembly(
                                    settings(
                                            "rollout.workflow=\"python:rlvr:RLVRWorkflow\"",
                                            "rollout.workflow_kwargs.no_such_kwarg=1"),
                                    true,
                                    false,
                                    toClose)
                            .prepare())
                    .isInstanceOf(InvalidConfigException.class)
                    .hasMessageContaining("'rollout.workflow'")
                    .hasMessageContaining("refused its arguments");
        } finally {
            closeAll(toClose);
        }
    }

    @Test
    void aWorkflowClassRunsAsAWorkflowAndItsWorkersEndWithTheNode() throws Exception {
        List<AutoCloseable> toClose = new ArrayList<>();
        NodeAssembly assembly;
        try {
            assembly = new NodeAssembly(settings("rollout.workflow=\"python:rlvr:RLVRWorkflow\""), true, false, toClose)
                    .prepare();
            assertThat(assembly).isNotNull();
            assertThat(toClose)
                    .anySatisfy(c -> assertThat(c).isInstanceOf(org.rollout.python.PythonWorkflowPool.class));
        } finally {
            closeAll(toClose);
        }
        for (AutoCloseable c : toClose) {
            if (c instanceof org.rollout.python.PythonWorkflowPool pool) {
                assertThat(pool.workerPids()).isEmpty();
            }
        }
    }
}
