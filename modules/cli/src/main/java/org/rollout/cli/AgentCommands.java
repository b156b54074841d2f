package org.rollout.cli;

import java.io.File;
import java.nio.file.Files;
import java.nio.file.InvalidPathException;
import java.nio.file.Path;
import java.util.List;
import org.rollout.api.InvalidConfigException;

/** Start-up checks of {@code rollout.agent.command}: the program must be one the node can run. */
final class AgentCommands {
    private AgentCommands() {}

    /**
     * The program of {@code command} as the operating system will find it: a name without a slash
     * on {@code PATH}; a path relative to {@code workingDir} (or the node's directory), executable.
     *
     * @throws InvalidConfigException naming {@code rollout.agent.command} and the program
     */
    static void requireExecutable(List<String> command, Path workingDir) {
        String program = command.getFirst();
        if (program.contains("/")) {
            Path p = resolve(program, workingDir);
            if (p == null || !Files.isRegularFile(p) || !Files.isExecutable(p)) {
                throw refused(
                        command,
                        program + " is not an executable file"
                                + (workingDir == null
                                        ? ""
                                        : " (relative to rollout.agent.working_dir " + workingDir + ")"));
            }
            return;
        }
        String path = System.getenv("PATH");
        for (String dir : (path == null ? "" : path).split(File.pathSeparator)) {
            if (dir.isEmpty()) {
                continue;
            }
            Path p = resolve(dir, null);
            if (p != null && Files.isExecutable(p.resolve(program)) && Files.isRegularFile(p.resolve(program))) {
                return;
            }
        }
        throw refused(command, program + " is not found on PATH");
    }

    private static Path resolve(String path, Path workingDir) {
        try {
            Path p = Path.of(path);
            return p.isAbsolute() || workingDir == null ? p : workingDir.resolve(p);
        } catch (InvalidPathException e) {
            return null;
        }
    }

    private static InvalidConfigException refused(List<String> command, String why) {
        return new InvalidConfigException(
                "rollout.agent.command",
                command,
                "a program the node can run (a name on PATH, or a path to an executable file), with its"
                        + " arguments; here " + why);
    }
}
