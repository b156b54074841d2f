package org.rollout.cli;

import java.io.IOException;
import java.io.InputStream;
import java.util.Properties;
import java.util.ServiceLoader;
import org.rollout.modelserver.ModelServerMain;
import picocli.CommandLine;
import picocli.CommandLine.Command;

/**
 * The {@code rollout} command ({@code bin/rollout}).
 *
 * <pre>
 *   rollout local [--steps N] [--workflow demo|agent] [--config file.conf] [key=value …]
 *   rollout node --roles coordinator,rollout,gateway --seed-nodes 127.0.0.1:25520 --port 25520 [--profile f.conf …] [key=value …]
 *   rollout check-config --config file.conf [key=value …] [--role local|node] [node flags …]
 *   rollout proxy --servers 127.0.0.1:30000 [--sessions N] [--episodes M] [--config file.conf] [key=value …]
 *   rollout model-server --port 30000 --seed 1
 *   rollout trainer-demo --contact http://127.0.0.1:8470 [--token T] [--steps N] [--weights-dir DIR] [--seed S]
 *   rollout bench orchestration|async|interrupt|weights|scaleout|singletons|all [--flag value …]   (benchmarks' jars on the class path)
 * </pre>
 *
 * <p>Subcommands that other jars on the class path add ({@link CliSubcommand}, such as the
 * benchmarks' {@code bench}) are found through {@link ServiceLoader}.
 *
 * <p>Exit codes: 0 on success, 2 for bad input (a configuration error names the key, the value and
 * what is allowed), 1 when the run itself failed.
 */
@Command(
        name = "rollout",
        mixinStandardHelpOptions = true,
        versionProvider = RolloutCli.Version.class,
        description = "The Rollout Engine: produces training trajectories for LLM reinforcement learning.",
        subcommands = {
            LocalCommand.class,
            NodeCommand.class,
            CheckConfigCommand.class,
            ProxyCommand.class,
            DemoWeightsCommand.class,
            InspectCommand.class,
            ReplayCommand.class,
            TrainerDemoCommand.class,
            CommandLine.HelpCommand.class
        })
public final class RolloutCli implements Runnable {
    public static void main(String[] args) {
        System.exit(commandLine().execute(args));
    }

    /** The whole command: the CLI's own subcommands and those found on the class path. */
    public static CommandLine commandLine() {
        CommandLine cl = new CommandLine(new RolloutCli());
        cl.addSubcommand("model-server", new ModelServerMain());
        for (CliSubcommand extra : ServiceLoader.load(CliSubcommand.class)) {
            if (cl.getSubcommands().containsKey(extra.name())) {
                throw new IllegalStateException("rollout " + extra.name() + " is the CLI's own subcommand; "
                        + extra.getClass().getName() + " on the class path may not replace it");
            }
            cl.addSubcommand(extra.name(), extra.commandLine());
        }
        // The command that runs writes where the root command was told to (tests capture it).
        CommandLine.IExecutionStrategy runLast = new CommandLine.RunLast();
        cl.setExecutionStrategy(parsed -> {
            CommandLine last =
                    parsed.asCommandLineList().get(parsed.asCommandLineList().size() - 1);
            last.setOut(cl.getOut());
            last.setErr(cl.getErr());
            return runLast.execute(parsed);
        });
        return cl;
    }

    /** {@code rollout --version}: the version the engine was built as (its Maven project version). */
    static final class Version implements CommandLine.IVersionProvider {
        @Override
        public String[] getVersion() throws IOException {
            return new String[] {"rollout " + version()};
        }
    }

    /** The project version this build was made from, from {@code version.properties}. */
    static String version() throws IOException {
        Properties p = new Properties();
        try (InputStream in = RolloutCli.class.getResourceAsStream("version.properties")) {
            if (in == null) {
                throw new IOException("org/rollout/cli/version.properties is missing from the class path");
            }
            p.load(in);
        }
        return p.getProperty("version");
    }

    @Override
    public void run() {
        CommandLine.usage(this, System.out);
    }
}
