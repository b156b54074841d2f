package org.rollout.cli;

import java.io.IOException;
import java.net.URI;
import java.nio.file.Path;
import java.util.concurrent.Callable;
import org.rollout.core.DumpFormatException;
import org.rollout.core.Tokenizers;
import org.rollout.gateway.GatewayConfig;
import org.rollout.gateway.TrainerGateway;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * {@code rollout replay RUN_DIR --contact URL}: serves a run's training dumps to a trainer again,
 * as batches through a trainer gateway listening at {@code URL} (the trainer's contact point),
 * without generating ({@link ReplayClient}). Runs until the trainer has acknowledged every batch,
 * then exits 0; a bad dump line stops it before it listens (exit 1, naming the file and line).
 */
@Command(
        name = "replay",
        mixinStandardHelpOptions = true,
        description = "Serve a run's dumped training trajectories to a trainer again, through a gateway, as batches.")
final class ReplayCommand implements Callable<Integer> {

    @Parameters(paramLabel = "RUN_DIR", description = "The run directory: {fileroot}/{experiment}/{trial}.")
    Path runDir;

    @Option(
            names = "--contact",
            defaultValue = "http://127.0.0.1:8470",
            description = "The URL trainers connect to; the gateway listens at its host and port (default:"
                    + " ${DEFAULT-VALUE}; port 0 picks one).")
    URI contact;

    @Option(
            names = "--batch-size",
            defaultValue = "8",
            description = "Groups (tasks) per batch (default: ${DEFAULT-VALUE}).")
    int batchSize;

    @Option(
            names = "--tokenizer",
            defaultValue = "builtin",
            description = "The run's tokenizer (rollout.tokenizer_path): builtin, or a Hugging Face tokenizer directory"
                    + " or tokenizer.json (default: ${DEFAULT-VALUE}).")
    String tokenizer;

    @Option(
            names = "--retokenize",
            description =
                    "Replay rows whose text does not re-encode to the dumped lengths (token ids that are not valid"
                            + " UTF-8, another tokenizer) as the text's encoding, versions spread over it; without it such a"
                            + " line is refused.")
    boolean retokenize;

    @Option(
            names = "--gateway-token",
            description = "Bearer token trainers must present (default: $ROLLOUT_GATEWAY_TOKEN, or none).")
    String token;

    @Override
    public Integer call() throws Exception {
        if (contact.getHost() == null || contact.getPort() < 0 || !"http".equals(contact.getScheme())) {
            System.err.println("--contact must be http://HOST:PORT, got " + contact);
            return 2;
        }
        ReplayClient replay;
        try {
            replay = ReplayClient.load(runDir, Tokenizers.load(tokenizer), batchSize, retokenize);
        } catch (DumpFormatException e) {
            System.err.println("bad dump line: " + e.getMessage());
            return 1;
        } catch (IOException e) {
            System.err.println("cannot read the dumps: " + e.getMessage());
            return 1;
        } catch (IllegalArgumentException e) {
            System.err.println(e.getMessage());
            return 2;
        }
        GatewayConfig config =
                GatewayConfig.defaults().withHost(contact.getHost()).withPort(contact.getPort());
        String t = token != null ? token : System.getenv("ROLLOUT_GATEWAY_TOKEN");
        if (t != null && !t.isBlank()) {
            config = config.withToken(t);
        }
        try (TrainerGateway gateway = TrainerGateway.start(config, replay)) {
            System.out.println("replaying " + replay.groups() + " groups in " + replay.batches() + " batches from "
                    + runDir + " at " + gateway.uri()
                    + (replay.retokenized() > 0
                            ? " (" + replay.retokenized() + " rows re-tokenized: their lengths differ from the dump's)"
                            : ""));
            System.out.flush();
            replay.awaitAllAcknowledged();
            System.out.println("every batch was acknowledged");
        }
        return 0;
    }
}
