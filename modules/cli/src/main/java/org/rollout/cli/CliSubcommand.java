package org.rollout.cli;

import picocli.CommandLine;

/**
 * A subcommand that a jar on the class path adds to {@code rollout}, found through the JDK's {@code
 * ServiceLoader}: an implementation is listed in that jar's {@code
 * META-INF/services/org.rollout.cli.CliSubcommand}. The end-to-end benchmarks add {@code bench} this
 * way, so the CLI (and the release tarball built from its dependencies) holds none of their code:
 * {@code bin/rollout bench} of a source checkout puts the benchmarks module's jars on the class path.
 */
public interface CliSubcommand {
    /** The subcommand's name after {@code rollout}; must not be one of the CLI's own. */
    String name();

    /** A new command line for the subcommand (its options, its own subcommands, its handlers). */
    CommandLine commandLine();
}
