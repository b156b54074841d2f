package org.rollout.cli;

import java.nio.file.Path;
import java.util.concurrent.Callable;
import org.rollout.workflows.demo.DemoConfig;
import org.rollout.workflows.demo.DemoTraining;
import picocli.CommandLine.Command;
import picocli.CommandLine.Parameters;

/**
 * {@code rollout demo-weights DIR}: writes the demo's initial weights (version 0, the file {@code
 * rollout local} starts its servers from) into {@code DIR} and prints its path, so model servers
 * started on their own ({@code rollout model-server --weights PATH}) serve what {@code rollout
 * trainer-demo} trains from.
 */
@Command(
        name = "demo-weights",
        mixinStandardHelpOptions = true,
        description = "Write the demo's initial weights (v0) into DIR and print the file's path.")
final class DemoWeightsCommand implements Callable<Integer> {

    @Parameters(paramLabel = "DIR", description = "Directory to write v0 into (created if missing).")
    Path dir;

    @Override
    public Integer call() throws Exception {
        System.out.println(
                DemoTraining.initialWeights(DemoConfig.defaults(), dir).toAbsolutePath());
        return 0;
    }
}
