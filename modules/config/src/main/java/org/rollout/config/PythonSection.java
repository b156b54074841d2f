package org.rollout.config;

/**
 * The {@code rollout.python} section: how the worker processes of Python reward functions ({@code
 * python:module.path:function}) and of Python workflows ({@code python:module.path:Class}) start. Checked at load; read by {@link RolloutSettings#python()}.
 */
final class PythonSection {
    private PythonSection() {}

    static void check(ConfigReader r) {
        String executable = r.string("rollout.python.executable", false, "a non-blank interpreter name or path");
        if (executable != null && executable.isBlank()) {
            r.error("rollout.python.executable", executable, "a non-blank interpreter name or path");
        }
        r.string("rollout.python.path", false, "a PYTHONPATH string, \"\" for none");
        r.intValue("rollout.python.reward_workers", 1, true, "an integer >= 1, or null for min(4, cores)");
        r.intValue("rollout.python.workflow_workers", 1, true, "an integer >= 1, or null for min(4, cores)");
    }
}
