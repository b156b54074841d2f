package org.rollout.config;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.rollout.api.InvalidConfigException;

/**
 * Configuration of a {@code RemoteInferenceEngine} (modules/inference), with AReaL's key names where AReaL has the knob
 * (semantics §10, {@code rollout.*}).
 *
 * <table>
 *   <caption>keys</caption>
 *   <tr><th>key</th><th>default</th><th>meaning</th></tr>
 *   <tr><td>backend</td><td>sglang</td><td>{@code sglang} or {@code vllm}; AReaL's allocation suffix
 *       ({@code sglang:d4}, {@code vllm:d2t4}, {@code sglang:d4p1t2}) is accepted: {@code d} is kept
 *       as {@link #dataParallelSize()}, {@code t} and {@code p} are checked and ignored</td></tr>
 *   <tr><td>addresses</td><td>(required)</td><td>{@code host:port} of every server, at least one, no duplicates</td></tr>
 *   <tr><td>request_timeout</td><td>3600 s</td><td>per attempt of one segment (connect + response)</td></tr>
 *   <tr><td>request_retries</td><td>3</td><td>total attempts per segment, across servers (not 1 + 3)</td></tr>
 *   <tr><td>setup_timeout</td><td>300 s</td><td>how long {@code RemoteInferenceEngine.initialize()} waits for servers</td></tr>
 *   <tr><td>routing_strategy</td><td>group_affinity</td><td>{@code group_affinity}, {@code prefix_aware}, {@code least_requests}, {@code round_robin},
 *       {@code group_affinity} or {@code prefix_aware}; see {@link RoutingStrategy}</td></tr>
 *   <tr><td>sticky_by_rid</td><td>true</td><td>send a rid's segments back to its server while it is not overloaded</td></tr>
 *   <tr><td>sticky_slack</td><td>8</td><td>how many more outstanding requests than the least-loaded server a
 *       sticky server may have and still be preferred</td></tr>
 *   <tr><td>affinity_slack</td><td>16</td><td>with {@code group_affinity} or {@code prefix_aware}: how many more
 *       outstanding requests than the least-loaded server the server holding a request's prefix may have and
 *       still take it (so a group of 16 fits on one server of an idle fleet)</td></tr>
 *   <tr><td>affinity_load_factor</td><td>1.25</td><td>with {@code group_affinity} or {@code prefix_aware}: the
 *       bounded-load factor; an affine server may also take a request while its outstanding requests stay
 *       within this multiple of the fleet's mean (whichever of the two bounds is larger)</td></tr>
 *   <tr><td>prefix_view_tokens</td><td>262144</td><td>with {@code prefix_aware}: how many prompt tokens the
 *       engine remembers per server as that server's cached prefixes (least recently used forgotten first);
 *       about the servers' own prefix-cache capacity</td></tr>
 *   <tr><td>health_check_interval</td><td>1 s</td><td>how often ejected servers are probed with {@code GET /health}</td></tr>
 *   <tr><td>health_check_timeout</td><td>5 s</td><td>timeout of one health probe</td></tr>
 *   <tr><td>control_timeout</td><td>60 s</td><td>timeout of one pause/continue call (weight loads use request_timeout)</td></tr>
 *   <tr><td>retry_backoff_initial</td><td>1 s</td><td>first back-off before retrying the same server</td></tr>
 *   <tr><td>retry_backoff_max</td><td>10 s</td><td>cap of the exponential back-off</td></tr>
 *   <tr><td>pause_grace_period</td><td>0 s</td><td>sleep after the servers' pause requests, before loading weights</td></tr>
 *   <tr><td>interrupt_mode</td><td>resume</td><td>{@code resume} (keep the tokens of an aborted segment and
 *       continue) or {@code discard} (drop them and regenerate from the prompt); see {@link InterruptMode}</td></tr>
 *   <tr><td>deterministic_sampling</td><td>false</td><td>give every segment a sampling seed derived from its task,
 *       slot and segment index (stable across reruns), sent as SGLang's {@code sampling_params.sampling_seed}
 *       and vLLM's {@code seed}</td></tr>
 *   <tr><td>vllm_api</td><td>areal</td><td>with {@code backend = vllm}: {@code areal} (AReaL's {@code /areal_*} control routes) or {@code upstream} (vLLM's own {@code /pause}, {@code /resume}, {@code /collective_rpc reload_weights})</td></tr>
 *   <tr><td>weight_transfer</td><td>disk</td><td>{@code disk} (servers read the published path), {@code http}
 *       (the engine streams the file's bytes to every server) or {@code nccl} (the trainer broadcasts the
 *       tensors; the engine sends the group's control calls); see {@link WeightTransfer}</td></tr>
 *   <tr><td>nccl_master_address</td><td>none</td><td>with {@code weight_transfer = nccl}: the host of the
 *       weight-update group's master, the trainer's rank 0 (AReaL's {@code nccl_master_address})</td></tr>
 *   <tr><td>nccl_master_port</td><td>none</td><td>with {@code weight_transfer = nccl}: its port</td></tr>
 *   <tr><td>nccl_group_name</td><td>update_weight_group</td><td>the group's name, sent in every group call</td></tr>
 *   <tr><td>shared_disk_servers</td><td>launched</td><td>with {@code weight_transfer = http}: the servers that
 *       read this node's disk and are sent {@code update_weights_from_disk} with the node-local path instead of the
 *       bytes: {@code launched} (those {@code rollout.launch} started here), {@code local} (also any server at a
 *       loopback address or this host's name or addresses) or {@code none}</td></tr>
 *   <tr><td>use_lora</td><td>false</td><td>weights are LoRA adapters: each version's file is loaded as adapter
 *       {@code <lora_name>-v<version>} and generation names the adapter of its pinned version</td></tr>
 *   <tr><td>lora_name</td><td>lora</td><td>the adapters' base name (non-blank, no blanks)</td></tr>
 * </table>
 *
 * <p>Valid by construction: the canonical constructor throws {@link InvalidConfigException} naming
 * the key. Build with {@link #builder()} or, from a configuration tree, {@link #fromMap(Map)}.
 * Durations are given in seconds in maps, as in AReaL.
 */
public record InferenceConfig(
        Backend backend,
        int dataParallelSize,
        List<ServerAddress> addresses,
        Duration requestTimeout,
        int requestRetries,
        Duration setupTimeout,
        RoutingStrategy routingStrategy,
        boolean stickyByRid,
        int stickySlack,
        int affinitySlack,
        double affinityLoadFactor,
        int prefixViewTokens,
        Duration healthCheckInterval,
        Duration healthCheckTimeout,
        Duration controlTimeout,
        Duration retryBackoffInitial,
        Duration retryBackoffMax,
        Duration pauseGracePeriod,
        InterruptMode interruptMode,
        boolean deterministicSampling,
        WeightTransfer weightTransfer,
        boolean useLora,
        String loraName,
        String vllmApi,
        String ncclMasterAddress,
        int ncclMasterPort,
        String ncclGroupName,
        String sharedDiskServers,
        Set<ServerAddress> launchedServers) {

    /** {@code vllm_api}: AReaL's server extension ({@code /areal_*} routes), the default. */
    public static final String VLLM_API_AREAL = "areal";

    /** {@code vllm_api}: upstream vLLM's own routes ({@code /pause}, {@code /resume}, {@code /collective_rpc}). */
    public static final String VLLM_API_UPSTREAM = "upstream";

    /** {@code shared_disk_servers}: the servers this node launched read its disk (the default). */
    public static final String SHARED_DISK_LAUNCHED = "launched";

    /** {@code shared_disk_servers}: also every server at a loopback address or this host's name or addresses. */
    public static final String SHARED_DISK_LOCAL = "local";

    /** {@code shared_disk_servers}: no server reads this node's disk; every one is sent the bytes. */
    public static final String SHARED_DISK_NONE = "none";

    /** {@code nccl_group_name}'s default, AReaL's group name. */
    public static final String DEFAULT_NCCL_GROUP_NAME = "update_weight_group";

    /** The keys {@link #fromMap} accepts, in documentation order. */
    public static final List<String> KEYS = List.of(
            "backend",
            "addresses",
            "request_timeout",
            "request_retries",
            "setup_timeout",
            "routing_strategy",
            "sticky_by_rid",
            "sticky_slack",
            "affinity_slack",
            "affinity_load_factor",
            "prefix_view_tokens",
            "health_check_interval",
            "health_check_timeout",
            "control_timeout",
            "retry_backoff_initial",
            "retry_backoff_max",
            "pause_grace_period",
            "interrupt_mode",
            "deterministic_sampling",
            "weight_transfer",
            "use_lora",
            "lora_name",
            "vllm_api",
            "nccl_master_address",
            "nccl_master_port",
            "nccl_group_name",
            "shared_disk_servers");

    private static final Pattern BACKEND = Pattern.compile("(sglang|vllm)(?::([a-z0-9]+))?");
    private static final Pattern PARALLELISM = Pattern.compile("([a-z])(\\d+)");

    public InferenceConfig {
        Objects.requireNonNull(backend, "backend");
        require(dataParallelSize >= 1, "backend", dataParallelSize, "a data-parallel size >= 1");
        require(addresses != null && !addresses.isEmpty(), "addresses", addresses, "at least one host:port");
        addresses = List.copyOf(addresses);
        require(new HashSet<>(addresses).size() == addresses.size(), "addresses", addresses, "no duplicates");
        positive(requestTimeout, "request_timeout");
        require(requestRetries >= 1, "request_retries", requestRetries, "an integer >= 1 (total attempts)");
        positive(setupTimeout, "setup_timeout");
        Objects.requireNonNull(routingStrategy, "routing_strategy");
        require(stickySlack >= 0, "sticky_slack", stickySlack, "an integer >= 0");
        require(affinitySlack >= 0, "affinity_slack", affinitySlack, "an integer >= 0");
        require(
                Double.isFinite(affinityLoadFactor) && affinityLoadFactor >= 1.0,
                "affinity_load_factor",
                affinityLoadFactor,
                "a number >= 1.0");
        require(prefixViewTokens >= 0, "prefix_view_tokens", prefixViewTokens, "an integer >= 0");
        positive(healthCheckInterval, "health_check_interval");
        positive(healthCheckTimeout, "health_check_timeout");
        positive(controlTimeout, "control_timeout");
        nonNegative(retryBackoffInitial, "retry_backoff_initial");
        nonNegative(retryBackoffMax, "retry_backoff_max");
        require(
                retryBackoffMax.compareTo(retryBackoffInitial) >= 0,
                "retry_backoff_max",
                seconds(retryBackoffMax),
                "a number of seconds >= retry_backoff_initial (" + seconds(retryBackoffInitial) + ")");
        nonNegative(pauseGracePeriod, "pause_grace_period");
        Objects.requireNonNull(interruptMode, "interrupt_mode");
        Objects.requireNonNull(weightTransfer, "weight_transfer");
        require(
                loraName != null && !loraName.isBlank() && !loraName.matches(".*\\s.*"),
                "lora_name",
                loraName,
                "a non-blank name without blanks");
        require(
                VLLM_API_AREAL.equals(vllmApi) || VLLM_API_UPSTREAM.equals(vllmApi),
                "vllm_api",
                vllmApi,
                "areal (AReaL's /areal_* routes) or upstream (vLLM's /pause, /resume, /collective_rpc)");
        require(
                !useLora || weightTransfer == WeightTransfer.DISK,
                "weight_transfer",
                weightTransfer,
                "disk with use_lora = true (adapters are loaded from a path)");
        if (weightTransfer == WeightTransfer.NCCL) {
            require(
                    backend != Backend.VLLM || !VLLM_API_UPSTREAM.equals(vllmApi),
                    "weight_transfer",
                    weightTransfer,
                    "disk or http with vllm_api = upstream (NCCL updates use AReaL's vLLM extension routes)");
            require(
                    ncclMasterAddress != null && !ncclMasterAddress.isBlank(),
                    "nccl_master_address",
                    ncclMasterAddress,
                    "the host of the trainer's rank 0 (the group's master) with weight_transfer = nccl");
            require(
                    ncclMasterPort >= 1 && ncclMasterPort <= 65535,
                    "nccl_master_port",
                    ncclMasterPort,
                    "a port in 1..65535 with weight_transfer = nccl");
        }
        require(
                SHARED_DISK_LAUNCHED.equals(sharedDiskServers)
                        || SHARED_DISK_LOCAL.equals(sharedDiskServers)
                        || SHARED_DISK_NONE.equals(sharedDiskServers),
                "shared_disk_servers",
                sharedDiskServers,
                "launched, local or none");
        launchedServers = Set.copyOf(launchedServers);
        require(
                ncclGroupName != null && !ncclGroupName.isBlank() && !ncclGroupName.matches(".*\\s.*"),
                "nccl_group_name",
                ncclGroupName,
                "a non-blank name without blanks");
    }

    /**
     * The LoRA adapter that generation at weight version {@code version} names: {@code
     * <lora_name>-v<version>}; null without {@code use_lora} or at version 0 (the base model).
     */
    public String loraAdapter(int version) {
        return useLora && version > 0 ? loraName + "-v" + version : null;
    }

    /** A builder with every default; only {@code addresses} must be set. */
    public static Builder builder() {
        return new Builder();
    }

    public Builder toBuilder() {
        return new Builder(this);
    }

    /**
     * A config from snake_case keys (a parsed configuration tree). Durations are seconds (numbers or
     * numeric strings); {@code addresses} is a list of strings or one comma-separated string (as
     * AReaL's {@code AREAL_LLM_SERVER_ADDRS}); keys not given keep their defaults.
     *
     * @throws InvalidConfigException naming an unknown key, a value of the wrong type or one out of range
     */
    public static InferenceConfig fromMap(Map<String, ?> values) {
        return InferenceConfigMap.read(values);
    }

    private static void require(boolean ok, String key, Object value, String allowed) {
        if (!ok) {
            throw new InvalidConfigException(key, value, allowed);
        }
    }

    private static void positive(Duration d, String key) {
        Objects.requireNonNull(d, key);
        require(!d.isNegative() && !d.isZero(), key, seconds(d), "a number of seconds > 0");
    }

    private static void nonNegative(Duration d, String key) {
        Objects.requireNonNull(d, key);
        require(!d.isNegative(), key, seconds(d), "a number of seconds >= 0");
    }

    private static double seconds(Duration d) {
        return d.toNanos() / 1e9;
    }

    /** Builds an {@link InferenceConfig}; starts from the defaults in the class comment. */
    public static final class Builder {
        private Backend backend = Backend.SGLANG;
        private int dataParallelSize = 1;
        private List<ServerAddress> addresses = List.of();
        private Duration requestTimeout = Duration.ofSeconds(3600);
        private int requestRetries = 3;
        private Duration setupTimeout = Duration.ofSeconds(300);
        private RoutingStrategy routingStrategy = RoutingStrategy.GROUP_AFFINITY;
        private boolean stickyByRid = true;
        private int stickySlack = 8;
        private int affinitySlack = 16;
        private double affinityLoadFactor = 1.25;
        private int prefixViewTokens = 262_144;
        private Duration healthCheckInterval = Duration.ofSeconds(1);
        private Duration healthCheckTimeout = Duration.ofSeconds(5);
        private Duration controlTimeout = Duration.ofSeconds(60);
        private Duration retryBackoffInitial = Duration.ofSeconds(1);
        private Duration retryBackoffMax = Duration.ofSeconds(10);
        private Duration pauseGracePeriod = Duration.ZERO;
        private InterruptMode interruptMode = InterruptMode.RESUME;
        private boolean deterministicSampling;
        private WeightTransfer weightTransfer = WeightTransfer.DISK;
        private boolean useLora;
        private String loraName = "lora";
        private String vllmApi = VLLM_API_AREAL;
        private String ncclMasterAddress;
        private int ncclMasterPort;
        private String ncclGroupName = DEFAULT_NCCL_GROUP_NAME;
        private String sharedDiskServers = SHARED_DISK_LAUNCHED;
        private Set<ServerAddress> launchedServers = Set.of();

        private Builder() {}

        private Builder(InferenceConfig c) {
            backend = c.backend;
            dataParallelSize = c.dataParallelSize;
            addresses = c.addresses;
            requestTimeout = c.requestTimeout;
            requestRetries = c.requestRetries;
            setupTimeout = c.setupTimeout;
            routingStrategy = c.routingStrategy;
            stickyByRid = c.stickyByRid;
            stickySlack = c.stickySlack;
            affinitySlack = c.affinitySlack;
            affinityLoadFactor = c.affinityLoadFactor;
            prefixViewTokens = c.prefixViewTokens;
            healthCheckInterval = c.healthCheckInterval;
            healthCheckTimeout = c.healthCheckTimeout;
            controlTimeout = c.controlTimeout;
            retryBackoffInitial = c.retryBackoffInitial;
            retryBackoffMax = c.retryBackoffMax;
            deterministicSampling = c.deterministicSampling;
            weightTransfer = c.weightTransfer;
            useLora = c.useLora;
            loraName = c.loraName;
            vllmApi = c.vllmApi;
            ncclMasterAddress = c.ncclMasterAddress;
            ncclMasterPort = c.ncclMasterPort;
            ncclGroupName = c.ncclGroupName;
            sharedDiskServers = c.sharedDiskServers;
            launchedServers = c.launchedServers;
            pauseGracePeriod = c.pauseGracePeriod;
            interruptMode = c.interruptMode;
        }

        /**
         * Sets the backend from its configuration spelling, with AReaL's optional allocation suffix:
         * {@code sglang}, {@code vllm}, {@code sglang:d4}, {@code vllm:d2t4}, {@code sglang:d4p1t2}.
         *
         * @throws InvalidConfigException (key {@code backend}) for anything else
         */
        public Builder backend(String spec) {
            Objects.requireNonNull(spec, "backend");
            Matcher m = BACKEND.matcher(spec.strip());
            String allowed = "sglang or vllm, optionally with an allocation suffix such as sglang:d4 or vllm:d2t4";
            if (!m.matches()) {
                throw new InvalidConfigException("backend", spec, allowed);
            }
            int dp = 1;
            if (m.group(2) != null) {
                Matcher part = PARALLELISM.matcher(m.group(2));
                Set<String> seen = new HashSet<>();
                int end = 0;
                while (part.find() && part.start() == end) {
                    String letter = part.group(1);
                    int size;
                    try {
                        size = Integer.parseInt(part.group(2));
                    } catch (NumberFormatException e) {
                        throw new InvalidConfigException("backend", spec, allowed);
                    }
                    if (!"dtp".contains(letter) || !seen.add(letter) || size < 1) {
                        throw new InvalidConfigException(
                                "backend", spec, "an allocation of d<n>, t<n>, p<n>, each at most once and >= 1");
                    }
                    if (letter.equals("d")) {
                        dp = size;
                    }
                    end = part.end();
                }
                if (end != m.group(2).length()) {
                    throw new InvalidConfigException("backend", spec, allowed);
                }
            }
            this.backend = m.group(1).equals("sglang") ? Backend.SGLANG : Backend.VLLM;
            this.dataParallelSize = dp;
            return this;
        }

        public Builder backend(Backend v) {
            backend = Objects.requireNonNull(v, "backend");
            return this;
        }

        public Builder dataParallelSize(int v) {
            dataParallelSize = v;
            return this;
        }

        /** Sets the servers from {@code host:port} strings. */
        public Builder addresses(List<String> v) {
            List<ServerAddress> parsed = new ArrayList<>(v.size());
            for (String s : v) {
                parsed.add(ServerAddress.parse(s));
            }
            addresses = parsed;
            return this;
        }

        public Builder addresses(String... v) {
            return addresses(List.of(v));
        }

        public Builder serverAddresses(List<ServerAddress> v) {
            addresses = List.copyOf(v);
            return this;
        }

        public Builder requestTimeout(Duration v) {
            requestTimeout = v;
            return this;
        }

        public Builder requestRetries(int v) {
            requestRetries = v;
            return this;
        }

        public Builder setupTimeout(Duration v) {
            setupTimeout = v;
            return this;
        }

        public Builder routingStrategy(RoutingStrategy v) {
            routingStrategy = v;
            return this;
        }

        public Builder stickyByRid(boolean v) {
            stickyByRid = v;
            return this;
        }

        public Builder stickySlack(int v) {
            stickySlack = v;
            return this;
        }

        /** How much busier than the least-loaded server an affine server may be and still be chosen. */
        public Builder affinitySlack(int v) {
            affinitySlack = v;
            return this;
        }

        /** The bounded-load factor of affine placement (a multiple of the fleet's mean load). */
        public Builder affinityLoadFactor(double v) {
            affinityLoadFactor = v;
            return this;
        }

        /** How many prompt tokens the prefix-aware router remembers per server. */
        public Builder prefixViewTokens(int v) {
            prefixViewTokens = v;
            return this;
        }

        public Builder healthCheckInterval(Duration v) {
            healthCheckInterval = v;
            return this;
        }

        public Builder healthCheckTimeout(Duration v) {
            healthCheckTimeout = v;
            return this;
        }

        public Builder controlTimeout(Duration v) {
            controlTimeout = v;
            return this;
        }

        public Builder retryBackoffInitial(Duration v) {
            retryBackoffInitial = v;
            return this;
        }

        public Builder retryBackoffMax(Duration v) {
            retryBackoffMax = v;
            return this;
        }

        public Builder pauseGracePeriod(Duration v) {
            pauseGracePeriod = v;
            return this;
        }

        public Builder interruptMode(InterruptMode v) {
            interruptMode = v;
            return this;
        }

        public Builder deterministicSampling(boolean v) {
            deterministicSampling = v;
            return this;
        }

        public Builder weightTransfer(WeightTransfer v) {
            weightTransfer = v;
            return this;
        }

        public Builder useLora(boolean v) {
            useLora = v;
            return this;
        }

        public Builder loraName(String v) {
            loraName = v;
            return this;
        }

        /** {@code areal} or {@code upstream}: which control routes vLLM servers are driven with. */
        public Builder vllmApi(String v) {
            vllmApi = v;
            return this;
        }

        /** With {@code weight_transfer = nccl}: the host of the group's master (the trainer's rank 0). */
        public Builder ncclMasterAddress(String v) {
            ncclMasterAddress = v;
            return this;
        }

        /** With {@code weight_transfer = nccl}: the port of the group's master. */
        public Builder ncclMasterPort(int v) {
            ncclMasterPort = v;
            return this;
        }

        /** The weight-update group's name ({@code update_weight_group}, AReaL's default). */
        public Builder ncclGroupName(String v) {
            ncclGroupName = v;
            return this;
        }

        /**
         * With {@code weight_transfer = http}: which servers read this node's disk and are sent the
         * node-local path instead of the bytes: {@code launched}, {@code local} or {@code none}.
         */
        public Builder sharedDiskServers(String v) {
            sharedDiskServers = v;
            return this;
        }

        /** The servers this node started ({@code rollout.launch}); they see its disk. Not a configuration key. */
        public Builder launchedServers(Collection<ServerAddress> v) {
            launchedServers = Set.copyOf(v);
            return this;
        }

        /** @throws InvalidConfigException naming the first key whose value is not allowed */
        public InferenceConfig build() {
            return new InferenceConfig(
                    backend,
                    dataParallelSize,
                    addresses,
                    requestTimeout,
                    requestRetries,
                    setupTimeout,
                    routingStrategy,
                    stickyByRid,
                    stickySlack,
                    affinitySlack,
                    affinityLoadFactor,
                    prefixViewTokens,
                    healthCheckInterval,
                    healthCheckTimeout,
                    controlTimeout,
                    retryBackoffInitial,
                    retryBackoffMax,
                    pauseGracePeriod,
                    interruptMode,
                    deterministicSampling,
                    weightTransfer,
                    useLora,
                    loraName,
                    vllmApi,
                    ncclMasterAddress,
                    ncclMasterPort,
                    ncclGroupName,
                    sharedDiskServers,
                    launchedServers);
        }
    }
}
