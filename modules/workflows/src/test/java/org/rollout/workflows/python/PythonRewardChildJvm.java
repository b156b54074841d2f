package org.rollout.workflows.python;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;

/**
 * A JVM for {@link PythonRewardJvmExitTest}: loads {@code python:MODULE:FUNCTION} with two workers
 * (PYTHONPATH {@code args[0]}), makes four calls at once, prints {@code pids <pid> <pid>}, then waits for a line
 * or the end of its stdin and exits with {@code System.exit(0)}, leaving the pool open.
 */
public final class PythonRewardChildJvm {
    private PythonRewardChildJvm() {}

    public static void main(String[] args) throws Exception {
        PythonRewardPool.Settings settings = new PythonRewardPool.Settings(PythonRewardPoolTest.PYTHON, args[0], 2);
        PythonRewardFunction f = PythonRewardFunction.load("python:" + args[1] + ":" + args[2], settings);
        // Calls at once make the pool start its second worker (while the first is held by a call).
        try (java.util.concurrent.ExecutorService threads =
                java.util.concurrent.Executors.newVirtualThreadPerTaskExecutor()) {
            List<java.util.concurrent.Future<Double>> calls = new java.util.ArrayList<>();
            for (int i = 0; i < 4; i++) {
                calls.add(threads.submit(() -> f.reward("", "", new int[0], new int[0], Map.of("hold", 0.5))));
            }
            for (java.util.concurrent.Future<Double> call : calls) {
                call.get(60, java.util.concurrent.TimeUnit.SECONDS);
            }
        }
        StringBuilder line = new StringBuilder("pids");
        for (long pid : f.pool().workerPids()) {
            line.append(' ').append(pid);
        }
        System.out.println(line);
        System.out.flush();
        new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8)).readLine();
        System.exit(0);
    }
}
