package org.rollout.cli;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigException;
import com.typesafe.config.ConfigFactory;
import java.io.PrintStream;
import java.net.URI;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import org.rollout.api.InvalidConfigException;
import org.rollout.cluster.ClusterRollout;
import org.rollout.cluster.LocalRollout;
import org.rollout.cluster.LocalRolloutClient;
import org.rollout.cluster.NodeGateway;
import org.rollout.cluster.ReplicatedServerList;
import org.rollout.config.ConfigErrors;
import org.rollout.config.RolloutConfig;
import org.rollout.config.RolloutSettings;
import org.rollout.config.ServerAddress;
import org.rollout.gateway.GatewayConfig;
import org.rollout.gateway.TrainerGateway;
import org.rollout.inference.RemoteInferenceEngine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * {@code rollout node}: one JVM of a rollout cluster. It joins the cluster at {@code
 * --seed-nodes}, runs what its {@code --roles} say ({@code coordinator}: may host the singletons;
 * {@code rollout}: runs groups against {@code rollout.servers}; {@code gateway}: serves trainers
 * over HTTP), prints {@code node up: NAME at HOST:PORT roles=[…]} once it is Up (and {@code
 * gateway listening on URL} for the gateway role), and runs until SIGTERM, when it leaves the
 * cluster (singletons hand over) and exits.
 *
 * <p>Pekko configuration, each layer over the next: the flags (roles, seed nodes, host, port),
 * {@code --profile} files in the order given (later wins), the run configuration's {@code pekko}
 * block, then {@code cluster-config/local.conf} (shipped in the jar). Run configuration ({@code
 * rollout.*}, {@code gconfig}) as for {@code rollout local}: {@code --config} file, then {@code
 * key=value}; {@code --demo} puts the letters task's defaults underneath. Every node with the
 * coordinator role must be given the same run configuration.
 *
 * <p>This class parses and checks the flags and assembles the node; the Pekko layers are {@link
 * NodePekkoConfig}'s, the port checks {@link NodePorts}', the engine's servers {@link
 * NodeInferenceConfig}'s, the status line {@link NodeProgress}'s and the exit status after SIGTERM
 * {@link NodeExitStatus}'.
 */
@Command(
        name = "node",
        mixinStandardHelpOptions = true,
        description = "Join a rollout cluster as one node (coordinator, rollout and/or gateway roles).")
final class NodeCommand implements Callable<Integer> {
    @Option(
            names = "--roles",
            split = ",",
            defaultValue = "coordinator,rollout,gateway",
            description = "Roles of this node, comma-separated (default: ${DEFAULT-VALUE}).")
    List<String> roles;

    @Option(
            names = "--seed-nodes",
            split = ",",
            description = "host:port of the seed nodes, comma-separated (default: this node alone).")
    List<String> seedNodes = new ArrayList<>();

    @Option(names = "--host", defaultValue = "127.0.0.1", description = "Address to bind (default: ${DEFAULT-VALUE}).")
    String host;

    @Option(names = "--port", defaultValue = "25520", description = "Cluster port (default: ${DEFAULT-VALUE}).")
    int port;

    @Option(
            names = "--management-port",
            description = "Port of the node's management endpoint (/alive, /ready, /cluster/members; 0 picks one)."
                    + " Off unless given, or 8558 with --discovery.")
    Integer managementPort;

    @Option(
            names = "--management-host",
            description = "Address the management endpoint binds and announces (default: --host).")
    String managementHost;

    @Option(
            names = "--discovery",
            description = "Find the other nodes by Cluster Bootstrap instead of --seed-nodes: config (the endpoints of"
                    + " pekko.discovery.config.services.<service>), dns (SRV/A records of the service name) or"
                    + " kubernetes-api (pods labelled for the service). Starts the management endpoint.")
    String discovery;

    @Option(
            names = "--service-name",
            defaultValue = "rollout",
            description = "The service name Cluster Bootstrap looks up (default: ${DEFAULT-VALUE}).")
    String serviceName;

    @Option(names = "--name", description = "This node's name in status and logs (default: node-PORT).")
    String name;

    @Option(names = "--profile", description = "A cluster-config profile (HOCON) to layer; repeatable.")
    List<Path> profiles = new ArrayList<>();

    @Option(names = "--config", description = "A HOCON file with rollout/gconfig/eval_gconfig settings.")
    Path config;

    @Option(names = "--demo", description = "Run the letters task with the demo's defaults (as rollout local).")
    boolean demo;

    @Option(
            names = UserClassPath.FLAG,
            paramLabel = "PATH[:PATH...]",
            description = "The user's jars and class directories (dir/* for every jar in dir), for the classes the"
                    + " configuration names (rollout.workflow, reward_fn, rollout.accept); before rollout.classpath.")
    String classpath;

    @Option(
            names = "--gateway-port",
            defaultValue = "8470",
            description = "Port of the trainer gateway (gateway role; 0 picks one) (default: ${DEFAULT-VALUE}).")
    int gatewayPort;

    @Option(
            names = "--gateway-max-waiting-pulls",
            defaultValue = "256",
            description = "Most batch pulls the trainer gateway serves at once (gateway.max_waiting_pulls); one"
                    + " more is answered 503 too_many_pulls (default: ${DEFAULT-VALUE}).")
    int gatewayMaxWaitingPulls;

    @Option(
            names = "--gateway-write-timeout",
            defaultValue = "60",
            description = "Seconds a batch stream to a trainer may make no progress before the gateway drops it"
                    + " (gateway.write_timeout; the batch is delivered again after batch_ack_timeout)"
                    + " (default: ${DEFAULT-VALUE}).")
    double gatewayWriteTimeout;

    @Option(
            names = "--gateway-host",
            defaultValue = "127.0.0.1",
            description = "Address the trainer gateway binds; any but a loopback address needs a token"
                    + " (--gateway-token or $ROLLOUT_GATEWAY_TOKEN) (default: ${DEFAULT-VALUE}).")
    String gatewayHost;

    @Option(
            names = "--gateway-token",
            description = "Bearer token trainers must present (default: $ROLLOUT_GATEWAY_TOKEN, or none; required"
                    + " when --gateway-host is not a loopback address).")
    String gatewayToken;

    @Option(
            names = "--gateway-key-store",
            description = "PKCS12 or JKS key store with the gateway's key and certificate: the gateway then speaks "
                    + "HTTPS only; its password comes from $ROLLOUT_GATEWAY_KEY_STORE_PASSWORD.")
    Path gatewayKeyStore;

    @Option(
            names = "--progress-every",
            defaultValue = "10",
            description = "Seconds between status lines when stdout is not a terminal (on a terminal the line is"
                    + " redrawn in place every 0.5 s) (default: ${DEFAULT-VALUE}).")
    int progressEverySeconds;

    @Option(names = "--debug", description = "On a failure, print its stack trace too.")
    boolean debug;

    @Parameters(paramLabel = "key=value", description = "Configuration overrides, e.g. rollout.servers=[...].")
    List<String> overrides = new ArrayList<>();

    @Override
    public Integer call() {
        PrintStream out = System.out;
        for (String r : roles) {
            if (!List.of(ClusterRollout.ROLE_COORDINATOR, ClusterRollout.ROLE_ROLLOUT, ClusterRollout.ROLE_GATEWAY)
                    .contains(r)) {
                System.err.println("invalid role '" + r + "' in --roles (allowed: coordinator, rollout, gateway)");
                return 2;
            }
        }
        if (name == null) {
            name = "node-" + port;
        }
        if (discovery != null && !NodePekkoConfig.DISCOVERY_METHODS.containsKey(discovery)) {
            System.err.println("invalid value for '--discovery': \"" + discovery + "\" (allowed: "
                    + String.join(", ", NodePekkoConfig.DISCOVERY_METHODS.keySet()) + ")");
            return 2;
        }
        if (discovery != null && !seedNodes.isEmpty()) {
            System.err.println("--seed-nodes and --discovery exclude each other: Cluster Bootstrap finds the seeds");
            return 2;
        }
        if (managementPort != null && (managementPort < 0 || managementPort > 65535)) {
            System.err.println("invalid value for '--management-port': " + managementPort + " (allowed: 0 to 65535)");
            return 2;
        }
        if (gatewayMaxWaitingPulls < 1) {
            System.err.println("invalid value for '--gateway-max-waiting-pulls' (gateway.max_waiting_pulls): "
                    + gatewayMaxWaitingPulls + " (allowed: an integer >= 1)");
            return 2;
        }
        if (!(gatewayWriteTimeout > 0) || Double.isInfinite(gatewayWriteTimeout)) {
            System.err.println("invalid value for '--gateway-write-timeout' (gateway.write_timeout): "
                    + gatewayWriteTimeout + " (allowed: a number of seconds > 0)");
            return 2;
        }
        String unguarded = unguardedGateway();
        if (unguarded != null) {
            System.err.println(unguarded);
            return 2;
        }
        RolloutSettings settings;
        Config pekko;
        try {
            settings =
                    RolloutConfig.load(config, overrides, demo ? LocalCommand.profile("demo") : ConfigFactory.empty());
            pekko = NodePekkoConfig.of(this, settings);
        } catch (InvalidConfigException | ConfigErrors e) {
            System.err.println("configuration error: " + e.getMessage());
            return 2;
        } catch (ConfigException e) {
            System.err.println("configuration error in a profile: " + e.getMessage());
            return 2;
        }
        List<AutoCloseable> toClose = new ArrayList<>();
        CountDownLatch closed = new CountDownLatch(1);
        boolean demoRun = demo || NodeAssembly.isDemoWorkflow(settings);
        NodeAssembly assembly;
        List<ServerAddress> fromFile;
        try {
            // rollout.server_file: read once now (a missing file or a bad line stops the node), then re-read.
            fromFile = settings.serverFile().map(ServerFile::read).orElse(List.of());
            // Before the engine reaches any server: the user's classes, and what a non-demo run must configure.
            Thread.currentThread()
                    .setContextClassLoader(
                            UserClassPath.of(classpath, settings.config()).loader(NodeCommand.class.getClassLoader()));
            assembly = new NodeAssembly(settings, demoRun, false, toClose).prepare();
        } catch (InvalidConfigException | ConfigErrors e) {
            System.err.println("configuration error: " + e.getMessage());
            return 2;
        }
        if (checkOnly != null) {
            closeAll(toClose);
            return checkOnly.passed(settings, demoRun, describeNode());
        }
        try {
            // A port another process holds is refused now, before the node joins and says it is up.
            NodePorts.requireFree(this, settings, pekko, assembly);
        } catch (PortInUseException e) {
            System.err.println(e.getMessage());
            if (debug) {
                e.printStackTrace(System.err);
            }
            return 1;
        }
        try {
            RemoteInferenceEngine engine =
                    new RemoteInferenceEngine(NodeInferenceConfig.of(settings, fromFile, toClose, out));
            toClose.add(engine);
            engine.initialize(message -> {
                out.println(message);
                out.flush();
            });
            Path runDir = settings.runDirectory().orElse(settings.rollout().fileroot());
            LocalRollout.Spec spec = assembly.spec(engine, runDir.resolve("stats-" + name + ".jsonl"));
            ClusterRollout node = ClusterRollout.start(spec, name, pekko, Duration.ofSeconds(5));
            toClose.add(node);
            NodeExitStatus.exitZeroAfterSigterm(node, closed);
            if (managementOn()) {
                NodeManagement management = NodeManagement.start(
                        node.system(),
                        new NodeReadiness.Node(roles.contains(ClusterRollout.ROLE_ROLLOUT), engine),
                        discovery != null);
                toClose.add(management);
                out.println("management listening on " + management.uri()
                        + (discovery != null
                                ? " (cluster bootstrap: " + discovery + " discovery of " + serviceName + ")"
                                : ""));
                out.flush();
            }
            node.awaitUp(Duration.ofMinutes(2));
            out.println("node up: " + name + " at " + node.address() + " roles=" + node.roles());
            NodeObservability observability =
                    new NodeObservability(name, engine, node.stats(), node.client()).withDumper(assembly.dumper());
            toClose.add(observability);
            // A run that cannot make progress: admission stops, /health and /metrics say why; the node runs on.
            FailureWatch.start(
                            rankClients(node),
                            settings.failureBreaker(),
                            FailureWatch.NODE_PAUSE,
                            message -> System.err.println("node " + name + ": admission stopped: " + message))
                    .ifPresent(w -> {
                        toClose.add(w);
                        observability.withFailureWatch(w);
                    });
            // Servers added or drained through any node's gateway reach every node's engine.
            ReplicatedServerList serverList = ReplicatedServerList.follow(node.system(), engine, Duration.ofSeconds(5));
            if (settings.serverFile().isPresent()) {
                toClose.add(ServerFile.watch(
                        settings.serverFile().get(),
                        settings.serverFileInterval(),
                        fromFile,
                        new EngineServerDirectory(engine, serverList)));
            }
            if (roles.contains(ClusterRollout.ROLE_GATEWAY)) {
                String token = gatewayToken();
                GatewayConfig gc = GatewayConfig.defaults()
                        .withHost(gatewayHost)
                        .withPort(gatewayPort)
                        .withMaxWaitingPulls(gatewayMaxWaitingPulls)
                        .withWriteTimeout(Duration.ofMillis(Math.round(gatewayWriteTimeout * 1000)));
                if (token != null && !token.isBlank()) {
                    gc = gc.withToken(token);
                }
                if (gatewayKeyStore != null) {
                    String password = System.getenv("ROLLOUT_GATEWAY_KEY_STORE_PASSWORD");
                    if (password == null) {
                        throw new InvalidConfigException(
                                "--gateway-key-store",
                                gatewayKeyStore.toString(),
                                "a key store whose password is in $ROLLOUT_GATEWAY_KEY_STORE_PASSWORD (unset)");
                    }
                    gc = gc.withTls(gatewayKeyStore, password);
                }
                GatewayConfig gatewayConfig = gc;
                TrainerGateway gateway = PortInUseException.binding(
                        NodePorts.GATEWAY,
                        "--gateway-port",
                        gatewayHost,
                        gatewayPort,
                        () -> TrainerGateway.start(
                                gatewayConfig, rankClients(node), observability.gatewayExtras(serverList)));
                toClose.add(gateway);
                // Should the collector run here, trainers that pull through other nodes' gateways read
                // from this one; withdrawn first when the node stops (toClose runs backwards).
                NodeGateway advertised = NodeGateway.get(node.system());
                advertised.advertise(gateway.uri());
                toClose.add(advertised::withdraw);
                out.println("gateway listening on " + gateway.uri());
                out.println("metrics on " + gateway.uri() + "/metrics, dashboard on " + gateway.uri() + "/dashboard");
            } else if (settings.metrics().port() >= 0) {
                URI metrics = PortInUseException.binding(
                        NodePorts.METRICS,
                        NodePorts.METRICS_KEY,
                        settings.metrics().host(),
                        settings.metrics().port(),
                        () -> observability.listen(
                                settings.metrics().host(), settings.metrics().port()));
                out.println("metrics on " + metrics + "/metrics, dashboard on " + metrics + "/dashboard");
            }
            out.flush();
            toClose.add(NodeProgress.start(node, name, out, progressEverySeconds));
            // Runs until the actor system stops: SIGTERM (coordinated shutdown) or being downed.
            node.system().getWhenTerminated().toCompletableFuture().get();
            out.println("node stopped: " + name);
            return 0;
        } catch (InvalidConfigException e) {
            System.err.println("configuration error: " + e.getMessage());
            return 2;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return 1;
        } catch (Exception e) {
            Optional<PortInUseException> portInUse = PortInUseException.in(e);
            if (portInUse.isPresent()) {
                System.err.println(portInUse.get().getMessage());
                if (debug) {
                    e.printStackTrace(System.err);
                }
                return 1;
            }
            System.err.println("the node failed: " + e);
            e.printStackTrace(System.err);
            return 1;
        } finally {
            for (int i = toClose.size() - 1; i >= 0; i--) {
                try {
                    toClose.get(i).close();
                } catch (Exception e) {
                    System.err.println("while shutting down: " + e);
                }
            }
            closed.countDown();
        }
    }

    /** Set by {@code rollout check-config --role node}: validate as a start would, then stop there. */
    CheckConfigCommand.Check checkOnly;

    /** The trainers' bearer token: --gateway-token, else $ROLLOUT_GATEWAY_TOKEN; null when neither is set. */
    private String gatewayToken() {
        String token = gatewayToken != null ? gatewayToken : System.getenv(GATEWAY_TOKEN_ENV);
        return token == null || token.isBlank() ? null : token;
    }

    static final String GATEWAY_TOKEN_ENV = "ROLLOUT_GATEWAY_TOKEN";

    /**
     * Why this node's trainer gateway may not start: bound to an address other hosts reach
     * (--gateway-host not 127.0.0.1, ::1 or localhost) with no token, which would let anyone who
     * reaches it pull batches and publish weights; null when it may.
     */
    private String unguardedGateway() {
        if (!roles.contains(ClusterRollout.ROLE_GATEWAY) || isLoopback(gatewayHost) || gatewayToken() != null) {
            return null;
        }
        return "invalid value for '--gateway-host': \"" + gatewayHost + "\" without a token (allowed: a loopback"
                + " address (127.0.0.1, ::1, localhost), or a token trainers must present: --gateway-token or $"
                + GATEWAY_TOKEN_ENV + ", unset)";
    }

    /** True for the loopback addresses a gateway may bind without a token. */
    static boolean isLoopback(String host) {
        String h = host.strip();
        return h.equalsIgnoreCase("localhost")
                || h.equals("::1")
                || h.equals("[::1]")
                || h.matches("127\\.\\d{1,3}\\.\\d{1,3}\\.\\d{1,3}");
    }

    /** What check-config says it checked of this node: its roles and, with the gateway role, where that binds. */
    private String describeNode() {
        String what = "rollout node --roles " + String.join(",", roles);
        if (roles.contains(ClusterRollout.ROLE_GATEWAY)) {
            what += ", gateway on " + gatewayHost + ":" + gatewayPort
                    + (gatewayToken() != null ? " with a token" : " (loopback, no token)");
        }
        return what;
    }

    private static void closeAll(List<AutoCloseable> toClose) {
        for (int i = toClose.size() - 1; i >= 0; i--) {
            try {
                toClose.get(i).close();
            } catch (Exception e) {
                System.err.println("while shutting down: " + e);
            }
        }
        toClose.clear();
    }

    boolean managementOn() {
        return managementPort != null || discovery != null;
    }

    /** A handle on the run for each trainer rank ({@code rollout.train_data_parallel_size}), by rank. */
    private static List<LocalRolloutClient> rankClients(ClusterRollout node) {
        List<LocalRolloutClient> clients = new ArrayList<>();
        for (int r = 0; r < node.ranks(); r++) {
            clients.add(node.client(r));
        }
        return clients;
    }
}
