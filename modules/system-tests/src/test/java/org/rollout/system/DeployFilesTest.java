package org.rollout.system;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.MappingIterator;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The deployment files of {@code deploy/}: the Kubernetes example overlay as {@code kubectl
 * kustomize} renders it (skipped, saying so, when kubectl is absent; {@code .ci/run} installs
 * it), checked against Kubernetes' schemas offline by {@code deploy/kubernetes/check}, and the
 * Slurm scripts' host-list expansion and role assignment, run with bash and the variables Slurm
 * sets.
 */
@Timeout(120)
class DeployFilesTest {
    private static final Duration RUN_TIMEOUT = Duration.ofSeconds(60);

    @RegisterExtension
    final SystemTestRun run = new SystemTestRun();

    private final Path repoRoot = Path.of(System.getProperty("rollout.repo.root", "../.."))
            .toAbsolutePath()
            .normalize();

    @Test
    void theRenderedManifestsPassKubernetesSchemasAndAMisspelledOrMistypedFieldFailsNamingItsPath() throws Exception {
        Path kubectl = Path.of("/usr/bin/kubectl");
        Path checker = repoRoot.resolve("deploy/kubernetes/check");
        assumeTrue(
                Files.isExecutable(kubectl),
                "kubectl is not installed (/usr/bin/kubectl; .ci/run installs the Debian package kubectl)");
        assumeTrue(
                Files.isDirectory(checker.resolve("node_modules")),
                "the schema checker's packages are not installed (.ci/run runs npm ci in deploy/kubernetes/check)");
        String yaml = ManagedProcess.run(
                List.of(kubectl.toString(), "kustomize", "deploy/kubernetes/overlays/example"),
                Map.of(),
                repoRoot,
                RUN_TIMEOUT);
        Path rendered = run.dir().resolve("rendered.yaml");
        Files.writeString(rendered, yaml);
        String valid = ManagedProcess.run(
                List.of("node", "deploy/kubernetes/check/validate.mjs", rendered.toString()),
                Map.of(),
                repoRoot,
                RUN_TIMEOUT);
        int documents = yaml.split("(?m)^---$").length;
        assertThat(valid.strip()).isEqualTo(documents + " objects valid");

        // A misspelled field, a field of the wrong type and a misspelled enum value: each named.
        String broken = yaml.replaceFirst("(?m)^  replicas:", "  replics:")
                .replaceFirst("periodSeconds: \\d+", "periodSeconds: often")
                .replaceFirst("(?m)^(\\s*)- name: management", "$1- nme: management");
        assertThat(broken).isNotEqualTo(yaml);
        Path brokenFile = run.dir().resolve("broken.yaml");
        Files.writeString(brokenFile, broken);
        AssertionError failure = org.assertj.core.api.Assertions.catchThrowableOfType(
                AssertionError.class,
                () -> ManagedProcess.run(
                        List.of("node", "deploy/kubernetes/check/validate.mjs", brokenFile.toString()),
                        Map.of(),
                        repoRoot,
                        RUN_TIMEOUT));
        assertThat(failure).as("the checker's exit on broken manifests").isNotNull();
        assertThat(failure.getMessage())
                .contains("exited with 1")
                .contains("/spec/replics: unknown field (did you mean replicas?)")
                .contains("periodSeconds: must be integer")
                .contains("/nme: unknown field (did you mean name?)");
    }

    @Test
    void theKubernetesOverlayRendersWithProbesRbacSelectorsAndDiscoveryThatFit() throws Exception {
        Map<String, JsonNode> byKindAndName = renderedExampleOverlay();
        assertThat(byKindAndName)
                .containsKeys(
                        "StatefulSet/rollout-coordinator",
                        "Deployment/rollout-node",
                        "Service/rollout-gateway",
                        "Role/rollout-pod-reader",
                        "RoleBinding/rollout-pod-reader",
                        "ServiceAccount/rollout",
                        "PodDisruptionBudget/rollout-coordinator");

        // Kubernetes API discovery's label selector (kubernetes.conf, %s = the service name "rollout").
        JsonNode profileMap = byKindAndName.entrySet().stream()
                .filter(e -> e.getKey().startsWith("ConfigMap/rollout-profile"))
                .findFirst()
                .orElseThrow(() -> new AssertionError("no rollout-profile ConfigMap"))
                .getValue();
        Config profile =
                ConfigFactory.parseString(profileMap.at("/data/kubernetes.conf").asText());
        String selector = profile.getString("pekko.discovery.kubernetes-api.pod-label-selector")
                .replace("%s", "rollout");
        String[] kv = selector.split("=", 2);
        String portName = profile.getString("pekko.management.cluster.bootstrap.contact-point-discovery.port-name");

        for (String workload : List.of("StatefulSet/rollout-coordinator", "Deployment/rollout-node")) {
            JsonNode w = byKindAndName.get(workload);
            JsonNode podLabels = w.at("/spec/template/metadata/labels");
            // The workload's selector picks its own pods.
            w.at("/spec/selector/matchLabels")
                    .fields()
                    .forEachRemaining(e -> assertThat(podLabels.path(e.getKey()).asText())
                            .as(workload + " pod label " + e.getKey())
                            .isEqualTo(e.getValue().asText()));
            // Discovery finds these pods.
            assertThat(podLabels.path(kv[0]).asText())
                    .as(workload + " matches " + selector)
                    .isEqualTo(kv[1]);
            assertThat(w.at("/spec/template/spec/serviceAccountName").asText()).isEqualTo("rollout");
            JsonNode engine = container(w, "rollout");
            Map<String, Integer> ports = new HashMap<>();
            engine.path("ports")
                    .forEach(p -> ports.put(
                            p.path("name").asText(), p.path("containerPort").asInt()));
            assertThat(ports).containsKey(portName);
            // Probes on the management port: /ready for readiness, /alive for liveness.
            for (String probe : List.of("readinessProbe", "livenessProbe")) {
                JsonNode get = engine.at("/" + probe + "/httpGet");
                String port = get.path("port").asText();
                assertThat(port.equals(portName) || port.equals(Integer.toString(ports.get(portName))))
                        .as(workload + " " + probe + " port " + port)
                        .isTrue();
            }
            assertThat(engine.at("/readinessProbe/httpGet/path").asText()).isEqualTo("/ready");
            assertThat(engine.at("/livenessProbe/httpGet/path").asText()).isEqualTo("/alive");
            // The management endpoint the probes reach is the one the node starts.
            List<String> args = new ArrayList<>();
            engine.path("args").forEach(a -> args.add(a.asText()));
            assertThat(args).contains("--discovery=kubernetes-api", "--management-port=" + ports.get(portName));
            assertThat(engine.at("/resources/requests/cpu").isMissingNode()).isFalse();
            assertThat(engine.at("/resources/requests/memory").isMissingNode()).isFalse();
            // The overlay's image replaced the base's.
            assertThat(engine.path("image").asText()).isEqualTo("registry.example.com/rl/rollout:0.1.0-SNAPSHOT");
        }
        assertThat(container(byKindAndName.get("Deployment/rollout-node"), "model-server")
                        .path("image")
                        .asText())
                .isEqualTo("registry.example.com/rl/rollout:0.1.0-SNAPSHOT");

        // RBAC lets the pods' service account list, watch and get pods.
        JsonNode role = byKindAndName.get("Role/rollout-pod-reader");
        boolean podListing = false;
        for (JsonNode rule : role.path("rules")) {
            List<String> resources = texts(rule.path("resources"));
            List<String> verbs = texts(rule.path("verbs"));
            podListing |= resources.contains("pods") && verbs.containsAll(List.of("get", "watch", "list"));
        }
        assertThat(podListing).as("the Role allows get, watch, list on pods").isTrue();
        JsonNode binding = byKindAndName.get("RoleBinding/rollout-pod-reader");
        assertThat(binding.at("/roleRef/name").asText()).isEqualTo("rollout-pod-reader");
        assertThat(texts(binding.path("subjects"), "name")).contains("rollout");

        // The gateway Service and the PDB select the coordinator-capable pods; the PDB keeps a majority.
        JsonNode coordinatorLabels =
                byKindAndName.get("StatefulSet/rollout-coordinator").at("/spec/template/metadata/labels");
        JsonNode gateway = byKindAndName.get("Service/rollout-gateway");
        gateway.at("/spec/selector")
                .fields()
                .forEachRemaining(
                        e -> assertThat(coordinatorLabels.path(e.getKey()).asText())
                                .isEqualTo(e.getValue().asText()));
        assertThat(gateway.at("/spec/ports/0/targetPort").asText()).isEqualTo("gateway");
        JsonNode pdb = byKindAndName.get("PodDisruptionBudget/rollout-coordinator");
        pdb.at("/spec/selector/matchLabels")
                .fields()
                .forEachRemaining(
                        e -> assertThat(coordinatorLabels.path(e.getKey()).asText())
                                .isEqualTo(e.getValue().asText()));
        int replicas = byKindAndName
                .get("StatefulSet/rollout-coordinator")
                .at("/spec/replicas")
                .asInt();
        assertThat(pdb.at("/spec/minAvailable").asInt()).isEqualTo(replicas / 2 + 1);
        assertThat(byKindAndName
                        .get("Deployment/rollout-node")
                        .at("/spec/replicas")
                        .asInt())
                .isEqualTo(4);
    }

    @Test
    void theExampleJobsPodsMountTheModelDataAndWeightVolumesAtTheSamePathsAndShareTheGatewayToken() throws Exception {
        Map<String, JsonNode> byKindAndName = renderedExampleOverlay();
        Map<String, String> claims =
                Map.of("/models", "rollout-models", "/data", "rollout-data", "/shared/weights", "rollout-weights");
        for (String claim : claims.values()) {
            assertThat(byKindAndName).containsKey("PersistentVolumeClaim/" + claim);
        }
        assertThat(byKindAndName
                        .get("PersistentVolumeClaim/rollout-weights")
                        .at("/spec/accessModes")
                        .toString())
                .contains("ReadWriteMany");
        // Where each container mounts which claim: the same path everywhere.
        for (String[] c : List.of(
                new String[] {"StatefulSet/rollout-coordinator", "rollout", "/models,/data,/shared/weights"},
                new String[] {"Deployment/rollout-node", "rollout", "/models,/data,/shared/weights"},
                new String[] {"Deployment/rollout-node", "model-server", "/models,/shared/weights"},
                new String[] {"Job/rollout-trainer", "trainer", "/models,/shared/weights"})) {
            JsonNode w = byKindAndName.get(c[0]);
            assertThat(w).as(c[0]).isNotNull();
            Map<String, String> volumeClaims = new HashMap<>();
            w.at("/spec/template/spec/volumes")
                    .forEach(v -> volumeClaims.put(
                            v.path("name").asText(),
                            v.at("/persistentVolumeClaim/claimName").asText()));
            Map<String, String> mountedClaims = new HashMap<>();
            container(w, c[1])
                    .path("volumeMounts")
                    .forEach(m -> mountedClaims.put(
                            m.path("mountPath").asText(),
                            volumeClaims.get(m.path("name").asText())));
            for (String path : c[2].split(",")) {
                assertThat(mountedClaims).as(c[0] + " " + c[1] + " at " + path).containsEntry(path, claims.get(path));
            }
        }
        // The gateway's nodes and the trainer read the same token Secret.
        for (String[] c : List.of(
                new String[] {"StatefulSet/rollout-coordinator", "rollout"},
                new String[] {"Job/rollout-trainer", "trainer"})) {
            JsonNode token = null;
            for (JsonNode e : container(byKindAndName.get(c[0]), c[1]).path("env")) {
                if (e.path("name").asText().equals("ROLLOUT_GATEWAY_TOKEN")) {
                    token = e.at("/valueFrom/secretKeyRef");
                }
            }
            assertThat(token).as(c[0] + " ROLLOUT_GATEWAY_TOKEN").isNotNull();
            assertThat(token.path("name").asText()).isEqualTo("rollout-gateway-token");
            assertThat(token.path("key").asText()).isEqualTo("token");
        }
        // The trainer runs the Python client's GRPO trainer against the gateway Service, writing
        // where every server reads.
        String trainer = String.join(
                " ",
                texts(container(byKindAndName.get("Job/rollout-trainer"), "trainer")
                        .path("args")));
        assertThat(trainer)
                .contains("examples/grpo_trainer.py", "--contact http://rollout-gateway:8470")
                .contains("--weights-dir /shared/weights", "--initial-weights /models/demo/v0.rlm");
    }

    @Test
    void slurmRefusesToStartAGatewayWithoutAToken() throws Exception {
        Map<String, String> env =
                new HashMap<>(Map.of("SLURM_JOB_NODELIST", "node[01-02]", "SLURMD_NODENAME", "node01"));
        assumeTrue(System.getenv("ROLLOUT_GATEWAY_TOKEN") == null, "ROLLOUT_GATEWAY_TOKEN is set in this environment");
        assertThat(runScript("rollout-node.sh", List.of(), env, 2))
                .contains("ROLLOUT_GATEWAY_TOKEN is not set", "node01");
        assertThat(runScript("rollout.sbatch", List.of(), env, 2)).contains("ROLLOUT_GATEWAY_TOKEN is not set");
        // A node without the gateway role needs none: it gets as far as its plan.
        assertThat(runScript(
                        "rollout-node.sh",
                        List.of("--plan"),
                        Map.of("SLURM_JOB_NODELIST", "node[01-02]", "SLURMD_NODENAME", "node02"),
                        0))
                .contains("ROLE=coordinator,rollout");
    }

    @Test
    void slurmHostListsExpandAsSlurmDoes() throws Exception {
        assertThat(hostlist("node[01-03,07]")).containsExactly("node01", "node02", "node03", "node07");
        assertThat(hostlist("gpu[8-11],login")).containsExactly("gpu8", "gpu9", "gpu10", "gpu11", "login");
        assertThat(hostlist("rack[1-2]-n[01-02]")).containsExactly("rack1-n01", "rack1-n02", "rack2-n01", "rack2-n02");
        assertThat(hostlist("single")).containsExactly("single");
        String refused = runScript("hostlist.sh", List.of("n[3-1]"), Map.of(), 2);
        assertThat(refused).contains("range 3-1 in 'n[3-1]' goes down");
        assertThat(runScript("hostlist.sh", List.of("n[1-2"), Map.of(), 2)).contains("unbalanced '['");
    }

    @Test
    void slurmRolesSeedsAndGatewayFollowTheNodeList() throws Exception {
        Map<String, String> first = plan("node[01-04]", "node01", null);
        assertThat(first)
                .containsEntry("ROLE", "coordinator,rollout,gateway")
                .containsEntry("SEEDS", "node01:25520,node02:25520,node03:25520")
                .containsEntry("GATEWAY", "http://node01:8470");
        assertThat(plan("node[01-04]", "node03", null)).containsEntry("ROLE", "coordinator,rollout");
        assertThat(plan("node[01-04]", "node04", null)).containsEntry("ROLE", "rollout");
        // Fewer hosts than coordinators: every host is one.
        assertThat(plan("gpu[1-2]", "gpu2", null))
                .containsEntry("ROLE", "coordinator,rollout")
                .containsEntry("SEEDS", "gpu1:25520,gpu2:25520");
        assertThat(plan("node[01-03,07]", "node07", "1"))
                .containsEntry("ROLE", "rollout")
                .containsEntry("SEEDS", "node01:25520");
        // A host outside the list is refused, naming it.
        String refused = runScript(
                "rollout-node.sh",
                List.of("--plan"),
                Map.of("SLURM_JOB_NODELIST", "node[01-02]", "SLURMD_NODENAME", "other"),
                2);
        assertThat(refused).contains("this host (other) is not in SLURM_JOB_NODELIST");
        // The batch script asks Slurm for one task per node.
        String sbatch = Files.readString(repoRoot.resolve("deploy/slurm/rollout.sbatch"));
        assertThat(sbatch).contains("#SBATCH --ntasks-per-node=1").contains("rollout-node.sh");
    }

    private Map<String, String> plan(String nodeList, String self, String coordinators) throws Exception {
        Map<String, String> env = new HashMap<>(Map.of("SLURM_JOB_NODELIST", nodeList, "SLURMD_NODENAME", self));
        if (coordinators != null) {
            env.put("ROLLOUT_COORDINATORS", coordinators);
        }
        Map<String, String> plan = new HashMap<>();
        for (String line :
                runScript("rollout-node.sh", List.of("--plan"), env, 0).split("\n")) {
            String[] kv = line.split("=", 2);
            if (kv.length == 2) {
                plan.put(kv[0], kv[1]);
            }
        }
        assertThat(plan).containsEntry("HOST", self);
        return plan;
    }

    private List<String> hostlist(String list) throws Exception {
        return List.of(
                runScript("hostlist.sh", List.of(list), Map.of(), 0).strip().split("\n"));
    }

    /** Runs {@code deploy/slurm/<script>} with bash; returns its output, checking its exit status. */
    private String runScript(String script, List<String> args, Map<String, String> env, int expectedStatus)
            throws Exception {
        List<String> cmd = new ArrayList<>(
                List.of("/bin/bash", repoRoot.resolve("deploy/slurm/" + script).toString()));
        cmd.addAll(args);
        String name = script + "-" + Integer.toHexString(String.join(" ", args).hashCode() ^ env.hashCode());
        ManagedProcess p = run.register(
                ManagedProcess.start(name, cmd, env, repoRoot, run.dir().resolve(name + ".log")));
        int status = p.awaitExit(RUN_TIMEOUT);
        List<String> lines = p.lines();
        String out = String.join("\n", lines.subList(1, lines.size())); // the first line is the command
        assertThat(status)
                .as(script + " " + args + " exit status; output:\n" + out)
                .isEqualTo(expectedStatus);
        return out;
    }

    private static JsonNode container(JsonNode workload, String name) {
        for (JsonNode c : workload.at("/spec/template/spec/containers")) {
            if (c.path("name").asText().equals(name)) {
                return c;
            }
        }
        throw new AssertionError("no container " + name + " in " + workload.at("/metadata/name"));
    }

    private static List<String> texts(JsonNode array) {
        List<String> out = new ArrayList<>();
        array.forEach(n -> out.add(n.asText()));
        return out;
    }

    private static List<String> texts(JsonNode array, String field) {
        List<String> out = new ArrayList<>();
        for (Iterator<JsonNode> it = array.elements(); it.hasNext(); ) {
            out.add(it.next().path(field).asText());
        }
        return out;
    }

    /** The example overlay rendered by {@code kubectl kustomize}, by "Kind/name"; skips the test without kubectl. */
    private Map<String, JsonNode> renderedExampleOverlay() throws Exception {
        Path kubectl = Path.of("/usr/bin/kubectl");
        assumeTrue(
                Files.isExecutable(kubectl),
                "kubectl is not installed (/usr/bin/kubectl; .ci/run installs the Debian package kubectl):"
                        + " the Kubernetes manifests are not rendered");
        String yaml = ManagedProcess.run(
                List.of(kubectl.toString(), "kustomize", "deploy/kubernetes/overlays/example"),
                Map.of(),
                repoRoot,
                RUN_TIMEOUT);
        Map<String, JsonNode> byKindAndName = new LinkedHashMap<>();
        try (MappingIterator<JsonNode> docs =
                new ObjectMapper(new YAMLFactory()).readerFor(JsonNode.class).readValues(yaml)) {
            while (docs.hasNext()) {
                JsonNode d = docs.next();
                if (d != null && d.has("kind")) {
                    byKindAndName.put(
                            d.get("kind").asText() + "/"
                                    + d.at("/metadata/name").asText(),
                            d);
                }
            }
        }
        return byKindAndName;
    }
}
