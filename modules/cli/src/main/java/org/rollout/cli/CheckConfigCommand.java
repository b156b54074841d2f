package org.rollout.cli;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import org.rollout.api.InvalidConfigException;
import org.rollout.config.ConfigErrors;
import org.rollout.config.RolloutSettings;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;
import picocli.CommandLine.Unmatched;

/**
 * {@code rollout check-config --config F [key=value …] [--role local|node] [node or local flags]}:
 * everything {@code rollout local} or {@code rollout node} checks before it starts, and nothing
 * more: the HOCON keys and values, the workflow and its kwargs (reward_fn included) through the
 * user's class path, the dataset and tokenizer paths, what a non-demo run must configure ({@link
 * NodeAssembly#prepare}), and the flags of the role (with {@code --role node}: the roles, seed
 * nodes, profiles, the gateway's bind and token). It runs the command's own code, stopped where
 * that command would start its first server: no model server, no actor system, no port bound.
 *
 * <p>Exit 0 with one line {@code ok: …} saying what was checked, or exit 2 with the command's own
 * {@code configuration error: …} message naming the key or flag at fault.
 */
@Command(
        name = "check-config",
        mixinStandardHelpOptions = true,
        description = "Validate a run configuration as rollout local or rollout node would, starting nothing.")
final class CheckConfigCommand implements Callable<Integer> {

    @Option(
            names = "--config",
            description = "The HOCON run configuration to check (without it: the defaults and the overrides).")
    Path config;

    @Option(
            names = "--role",
            defaultValue = "local",
            description = "Check as rollout local or as rollout node (then node flags such as --roles,"
                    + " --gateway-host, --profile apply) (default: ${DEFAULT-VALUE}).")
    String role;

    @Unmatched
    List<String> rest = new ArrayList<>();

    @Spec
    CommandLine.Model.CommandSpec spec;

    @Override
    public Integer call() {
        List<String> args = new ArrayList<>(config != null ? List.of("--config", config.toString()) : List.of());
        args.addAll(rest);
        CommandLine target;
        switch (role) {
            case "local" -> {
                LocalCommand local = new LocalCommand();
                local.checkOnly = new Check("rollout local");
                target = new CommandLine(local);
            }
            case "node" -> {
                NodeCommand node = new NodeCommand();
                node.checkOnly = new Check(null);
                target = new CommandLine(node);
            }
            default -> {
                System.err.println("invalid value for '--role': \"" + role + "\" (allowed: local or node)");
                return 2;
            }
        }
        target.setOut(spec.commandLine().getOut());
        target.setErr(spec.commandLine().getErr());
        return target.execute(args.toArray(String[]::new));
    }

    /** Where the command under check stops: after its validation, before its first server. */
    final class Check {
        private final String command;

        private Check(String command) {
            this.command = command;
        }

        /**
         * {@code rollout local}'s remaining checks, those {@link LocalRun#execute} makes before it
         * starts anything: a run directory, and {@link NodeAssembly#prepare} with the user's classes.
         */
        int local(RolloutSettings settings, boolean demo, boolean agent, ClassLoader userClasses) {
            ClassLoader previous = Thread.currentThread().getContextClassLoader();
            Thread.currentThread().setContextClassLoader(userClasses);
            List<AutoCloseable> toClose = new ArrayList<>();
            try {
                settings.runDirectory()
                        .orElseThrow(() -> new InvalidConfigException(
                                "rollout.trial_name", settings.rollout().trialName(), "a non-blank directory name"));
                new NodeAssembly(settings, demo, agent, toClose).prepare();
            } catch (InvalidConfigException | ConfigErrors e) {
                System.err.println("configuration error: " + e.getMessage());
                return 2;
            } finally {
                close(toClose);
                Thread.currentThread().setContextClassLoader(previous);
            }
            return passed(settings, demo || agent, command);
        }

        /** Prints what was checked; exit status 0. */
        int passed(RolloutSettings settings, boolean demo, String what) {
            System.out.println(
                    "ok: " + what + " --config " + config + ": " + summary(settings, demo) + "; nothing started");
            System.out.flush();
            return 0;
        }
    }

    /** The workflow, reward, data, tokenizer and servers the checked configuration names. */
    static String summary(RolloutSettings settings, boolean demo) {
        StringBuilder s = new StringBuilder("workflow ").append(demo ? "demo" : settings.workflow());
        Object reward = settings.workflowKwargs().get("reward_fn");
        if (reward != null) {
            s.append(" (reward_fn ").append(reward).append(')');
        }
        RolloutSettings.Dataset d = settings.dataset();
        s.append(", ").append(d.train().size()).append(" training and ");
        s.append(d.eval().size()).append(" evaluation file(s)");
        String tokenizer = settings.rollout().tokenizerPath();
        s.append(", tokenizer ").append(tokenizer == null || tokenizer.isEmpty() ? "(the demo's)" : tokenizer);
        s.append(", ").append(settings.servers().size()).append(" server(s) configured");
        if (settings.launch().servers() > 0) {
            s.append(" + ").append(settings.launch().servers()).append(" to launch");
        }
        return s.toString();
    }

    private static void close(List<AutoCloseable> toClose) {
        for (int i = toClose.size() - 1; i >= 0; i--) {
            try {
                toClose.get(i).close();
            } catch (Exception e) {
                System.err.println("while closing: " + e);
            }
        }
    }
}
