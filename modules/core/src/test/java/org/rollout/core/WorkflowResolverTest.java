package org.rollout.core;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.rollout.api.AcceptFilter;
import org.rollout.api.AgentWorkflow;
import org.rollout.api.EpisodeResult;
import org.rollout.api.InferenceEngine;
import org.rollout.api.InvalidConfigException;
import org.rollout.api.RolloutWorkflow;
import org.rollout.api.TensorDict;
import org.rollout.core.WorkflowFixtures.BothWorkflow;
import org.rollout.core.WorkflowFixtures.EchoAgent;
import org.rollout.core.WorkflowFixtures.Holder;
import org.rollout.core.WorkflowFixtures.KeepAll;
import org.rollout.core.WorkflowFixtures.MapAgent;
import org.rollout.core.WorkflowFixtures.MapWorkflow;
import org.rollout.core.WorkflowFixtures.NoArgWorkflow;
import org.slf4j.LoggerFactory;

class WorkflowResolverTest {
    private static final String FIXTURES = "org.rollout.core.WorkflowFixtures$";
    private static final String ACCEPTED = "accepted: a RolloutWorkflow (instance or class), an AgentWorkflow"
            + " (instance or class), a string naming one ('pkg.Class', 'pkg.Class.FIELD' or 'pkg.Class#FIELD'), or"
            + " null for online mode";
    private static final String NO_PROXY = "no OpenAI proxy is running on this node (no proxy address); configure"
            + " the agent proxy (rollout.agent) so it starts with the node";

    /** What the proxy's wrapping produces: remembers the agent it runs. */
    record ProxyWorkflow(AgentWorkflow agent) implements RolloutWorkflow {
        @Override
        public EpisodeResult runEpisode(InferenceEngine engine, Map<String, Object> data) {
            return EpisodeResult.rejected("proxy");
        }
    }

    private final List<AgentWorkflow> wrapped = new ArrayList<>();
    private final AgentWrapping proxy = agent -> {
        wrapped.add(agent);
        return new ProxyWorkflow(agent);
    };
    private final WorkflowResolver inline = new WorkflowResolver("inline", proxy);
    private final WorkflowResolver noProxy = new WorkflowResolver("inline", null);

    private final Logger resolverLog = (Logger) LoggerFactory.getLogger(WorkflowResolver.class);
    private final ListAppender<ILoggingEvent> logged = new ListAppender<>();

    @BeforeEach
    void captureLog() {
        logged.start();
        resolverLog.addAppender(logged);
    }

    @AfterEach
    void releaseLog() {
        resolverLog.detachAppender(logged);
    }

    private List<String> warnings() {
        return logged.list.stream()
                .filter(e -> e.getLevel() == Level.WARN)
                .map(ILoggingEvent::getFormattedMessage)
                .toList();
    }

    // --- rule 0: null means online mode ---

    @Test
    void nullInOnlineModeWrapsNoAgentBehindTheProxy() {
        ResolvedWorkflow r = new WorkflowResolver("online", proxy).resolve(null, null);
        assertThat(r.workflow()).isEqualTo(new ProxyWorkflow(null));
        assertThat(wrapped).containsExactly((AgentWorkflow) null);
        assertThat(r.description()).isEqualTo("online mode: OpenAI proxy sessions with no agent");
    }

    @Test
    void nullOutsideOnlineModeIsRejectedAskingForAWorkflowOrOnlineMode() {
        assertThatThrownBy(() -> inline.resolve(null, Map.of()))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("workflow is null, which means online mode, but rollout.agent.mode is 'inline', not"
                        + " 'online': pass a workflow, or set rollout.agent.mode = online");
    }

    @Test
    void onlineModeWithoutAProxyIsRejected() {
        assertThatThrownBy(() -> new WorkflowResolver("online", null).resolve(null, null))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("online mode (workflow null) needs the OpenAI proxy, but " + NO_PROXY);
    }

    // --- rule 1: an instance ---

    @Test
    void anInstanceIsUsedAsIsWithoutWarningForEmptyKwargs() {
        NoArgWorkflow w = new NoArgWorkflow();
        ResolvedWorkflow r = inline.resolve(w, Map.of());
        assertThat(r.workflow()).isSameAs(w);
        assertThat(r.description()).isEqualTo("RolloutWorkflow instance of " + FIXTURES + "NoArgWorkflow");
        assertThat(warnings()).isEmpty();
    }

    @Test
    void kwargsGivenWithAnInstanceAreIgnoredWithAWarning() {
        NoArgWorkflow w = new NoArgWorkflow();
        assertThat(inline.resolve(w, Map.of("lr", 1)).workflow()).isSameAs(w);
        assertThat(warnings())
                .containsExactly("workflow_kwargs [lr] ignored: the workflow is already an instance of " + FIXTURES
                        + "NoArgWorkflow");
    }

    // --- rule 2: a RolloutWorkflow class ---

    @Test
    void aClassWithAMapConstructorReceivesAnUnmodifiableCopyOfTheKwargs() {
        Map<String, Object> kwargs = new HashMap<>(Map.of("reward_fn", "math"));
        ResolvedWorkflow r = inline.resolve(MapWorkflow.class, kwargs);
        MapWorkflow w = (MapWorkflow) r.workflow();
        assertThat(w.kwargs).isEqualTo(Map.of("reward_fn", "math"));
        assertThatThrownBy(() -> w.kwargs.put("x", 1)).isInstanceOf(UnsupportedOperationException.class);
        kwargs.put("later", 2);
        assertThat(w.kwargs).doesNotContainKey("later");
        assertThat(r.description())
                .isEqualTo("RolloutWorkflow class " + FIXTURES + "MapWorkflow constructed with workflow_kwargs"
                        + " [reward_fn]");
    }

    @Test
    void aClassWithAMapConstructorGetsEmptyKwargsToo() {
        assertThat(((MapWorkflow) inline.resolve(MapWorkflow.class, Map.of()).workflow()).kwargs)
                .isEmpty();
    }

    @Test
    void aClassWithOnlyANoArgConstructorIsBuiltWhenKwargsAreEmpty() {
        ResolvedWorkflow r = inline.resolve(NoArgWorkflow.class, Map.of());
        assertThat(r.workflow()).isInstanceOf(NoArgWorkflow.class);
        assertThat(r.description())
                .isEqualTo("RolloutWorkflow class " + FIXTURES + "NoArgWorkflow constructed with no arguments");
    }

    @Test
    void everyResolveBuildsANewInstance() {
        assertThat(inline.resolve(NoArgWorkflow.class, Map.of()).workflow())
                .isNotSameAs(inline.resolve(NoArgWorkflow.class, Map.of()).workflow());
    }

    @Test
    void aClassNeedsKwargsEvenIfEmpty() {
        assertThatThrownBy(() -> inline.resolve(NoArgWorkflow.class, null))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("workflow_kwargs must be given to instantiate workflow class " + FIXTURES + "NoArgWorkflow"
                        + " (an empty map is fine), got null");
    }

    @Test
    void kwargsForAClassWithoutAMapConstructorAreAnErrorNamingTheConstructors() {
        assertThatThrownBy(() -> inline.resolve(NoArgWorkflow.class, Map.of("a", 1)))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("cannot instantiate workflow class " + FIXTURES + "NoArgWorkflow with workflow_kwargs [a]:"
                        + " it has no public constructor NoArgWorkflow(Map<String, Object>) (a public no-arg"
                        + " constructor NoArgWorkflow() is used only when workflow_kwargs is empty)");
    }

    @Test
    void aClassWithoutPublicConstructorsIsAnErrorNamingBoth() {
        assertThatThrownBy(() -> inline.resolve(WorkflowFixtures.HiddenWorkflow.class, Map.of()))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("cannot instantiate workflow class " + FIXTURES + "HiddenWorkflow: it has neither a public"
                        + " constructor HiddenWorkflow(Map<String, Object>) nor a public no-arg constructor"
                        + " HiddenWorkflow()");
    }

    @Test
    void anAbstractClassIsAnError() {
        assertThatThrownBy(() -> inline.resolve(WorkflowFixtures.AbstractWorkflow.class, Map.of()))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("cannot instantiate workflow class " + FIXTURES + "AbstractWorkflow: it is abstract");
    }

    @Test
    void aFailingConstructorIsWrappedWithTheClassName() {
        assertThatThrownBy(() -> inline.resolve(WorkflowFixtures.ThrowingWorkflow.class, Map.of()))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("constructing workflow class " + FIXTURES + "ThrowingWorkflow failed:"
                        + " java.lang.IllegalStateException: reward_fn is not configured")
                .hasCauseInstanceOf(IllegalStateException.class);
    }

    @Test
    void aClassThatIsAlsoAnAgentFollowsTheRolloutWorkflowRules() {
        assertThat(noProxy.resolve(BothWorkflow.class, Map.of()).workflow()).isInstanceOf(BothWorkflow.class);
        assertThat(wrapped).isEmpty();
    }

    // --- rule 3: a string ---

    @Test
    void aClassNameStringIsInstantiatedWithTheKwargs() {
        ResolvedWorkflow r = inline.resolve(FIXTURES + "MapWorkflow", Map.of("k", "v"));
        assertThat(((MapWorkflow) r.workflow()).kwargs).isEqualTo(Map.of("k", "v"));
        assertThat(r.description())
                .isEqualTo("'" + FIXTURES + "MapWorkflow' → RolloutWorkflow class " + FIXTURES + "MapWorkflow"
                        + " constructed with workflow_kwargs [k]");
    }

    @Test
    void nestedClassesMayBeWrittenWithDots() {
        assertThat(inline.resolve("org.rollout.core.WorkflowFixtures.NoArgWorkflow", Map.of())
                        .workflow())
                .isInstanceOf(NoArgWorkflow.class);
    }

    @Test
    void aClassNameStringStillNeedsKwargs() {
        assertThatThrownBy(() -> inline.resolve(FIXTURES + "NoArgWorkflow", null))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageStartingWith("workflow_kwargs must be given to instantiate workflow class ");
    }

    @Test
    void aStaticFieldWithAnInstanceIsUsedAsIsInBothSpellings() {
        assertThat(inline.resolve(FIXTURES + "Holder.INSTANCE", null).workflow())
                .isSameAs(Holder.INSTANCE);
        assertThat(inline.resolve("org.rollout.core.WorkflowFixtures.Holder#INSTANCE", Map.of("x", 1))
                        .workflow())
                .isSameAs(Holder.INSTANCE);
        assertThat(warnings()).hasSize(1);
    }

    @Test
    void aStaticFieldHoldingAClassIsInstantiated() {
        assertThat(inline.resolve(FIXTURES + "Holder.WORKFLOW_CLASS", Map.of()).workflow())
                .isInstanceOf(NoArgWorkflow.class);
    }

    @Test
    void aStringNamingAnAgentClassOrInstanceIsWrapped() {
        assertThat(inline.resolve(FIXTURES + "EchoAgent", null).workflow()).isInstanceOf(ProxyWorkflow.class);
        assertThat(inline.resolve(FIXTURES + "Holder.AGENT", null).workflow())
                .isEqualTo(new ProxyWorkflow(Holder.AGENT));
        assertThat(wrapped.get(0)).isInstanceOf(EchoAgent.class);
    }

    @Test
    void anUnknownClassIsAnImportErrorNamingTheString() {
        assertThatThrownBy(() -> inline.resolve("com.example.Nope", Map.of()))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("Failed to import workflow from string 'com.example.Nope': no class 'com.example.Nope',"
                        + " and no class 'com.example' to hold a field 'Nope'");
        assertThatThrownBy(() -> inline.resolve("Nope", Map.of()))
                .hasMessage("Failed to import workflow from string 'Nope': no class 'Nope'");
    }

    @Test
    void aMissingFieldIsAnImportError() {
        assertThatThrownBy(() -> inline.resolve(FIXTURES + "Holder.MISSING", Map.of()))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("Failed to import workflow from string '" + FIXTURES + "Holder.MISSING': class " + FIXTURES
                        + "Holder has no public static field 'MISSING'");
        assertThatThrownBy(() -> inline.resolve("com.example.Nope#X", Map.of()))
                .hasMessage("Failed to import workflow from string 'com.example.Nope#X': no class 'com.example.Nope'");
    }

    @Test
    void anInstanceFieldIsAnImportError() {
        assertThatThrownBy(() -> inline.resolve(FIXTURES + "Holder#perInstance", Map.of()))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("Failed to import workflow from string '" + FIXTURES + "Holder#perInstance': field "
                        + FIXTURES + "Holder.perInstance is not static");
    }

    @Test
    void aNullFieldIsAnImportError() {
        assertThatThrownBy(() -> inline.resolve(FIXTURES + "Holder.UNSET", Map.of()))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("Failed to import workflow from string '" + FIXTURES + "Holder.UNSET': field " + FIXTURES
                        + "Holder.UNSET is null");
    }

    @Test
    void anEmptyStringIsAnImportError() {
        assertThatThrownBy(() -> inline.resolve(" ", Map.of()))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("Failed to import workflow from string ' ': the string is empty");
    }

    @Test
    void aClassWhoseInitialisationFailsIsAnImportError() {
        assertThatThrownBy(() -> inline.resolve(FIXTURES + "FailingStaticInit", Map.of()))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageStartingWith("Failed to import workflow from string '" + FIXTURES
                        + "FailingStaticInit': loading class '" + FIXTURES + "FailingStaticInit' failed:"
                        + " java.lang.ExceptionInInitializerError")
                .hasCauseInstanceOf(ExceptionInInitializerError.class);
    }

    @Test
    void aStringResolvingToSomethingElseIsAnErrorNamingIt() {
        assertThatThrownBy(() -> inline.resolve(FIXTURES + "Holder.NOT_A_WORKFLOW", Map.of()))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("workflow string '" + FIXTURES + "Holder.NOT_A_WORKFLOW' resolved to an instance of"
                        + " java.lang.String, which is not a workflow; " + ACCEPTED);
        assertThatThrownBy(() -> inline.resolve(FIXTURES + "NotAWorkflow", Map.of()))
                .hasMessage("workflow string '" + FIXTURES + "NotAWorkflow' resolved to class " + FIXTURES
                        + "NotAWorkflow, which implements neither RolloutWorkflow nor AgentWorkflow; " + ACCEPTED);
    }

    // --- rule 4: an AgentWorkflow class ---

    @Test
    void anAgentClassIsBuiltWithEmptyKwargsForNullAndWrapped() {
        ResolvedWorkflow r = inline.resolve(EchoAgent.class, null);
        assertThat(r.workflow()).isInstanceOf(ProxyWorkflow.class);
        assertThat(((ProxyWorkflow) r.workflow()).agent()).isInstanceOf(EchoAgent.class);
        assertThat(r.description())
                .isEqualTo("AgentWorkflow class " + FIXTURES + "EchoAgent constructed with no arguments, behind the"
                        + " OpenAI proxy");
    }

    @Test
    void anAgentClassWithAMapConstructorGetsTheKwargs() {
        ProxyWorkflow w = (ProxyWorkflow)
                inline.resolve(MapAgent.class, Map.of("tools", "calc")).workflow();
        assertThat(((MapAgent) w.agent()).kwargs).isEqualTo(Map.of("tools", "calc"));
    }

    @Test
    void anAgentClassWithoutAProxyIsRejected() {
        assertThatThrownBy(() -> noProxy.resolve(EchoAgent.class, null))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("workflow " + FIXTURES + "EchoAgent is an AgentWorkflow class, which runs behind an"
                        + " OpenAI-compatible proxy, but " + NO_PROXY);
    }

    // --- rule 5: an AgentWorkflow instance ---

    @Test
    void anAgentInstanceIsWrappedAndItsKwargsIgnoredWithAWarning() {
        EchoAgent agent = new EchoAgent();
        ResolvedWorkflow r = inline.resolve(agent, Map.of("x", 1));
        assertThat(r.workflow()).isEqualTo(new ProxyWorkflow(agent));
        assertThat(r.description())
                .isEqualTo("AgentWorkflow instance of " + FIXTURES + "EchoAgent, behind the OpenAI proxy");
        assertThat(warnings()).singleElement().asString().contains("workflow_kwargs [x] ignored");
    }

    @Test
    void anAgentInstanceWithoutAProxyIsRejected() {
        assertThatThrownBy(() -> noProxy.resolve(new EchoAgent(), null))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("workflow " + FIXTURES + "EchoAgent is an AgentWorkflow, which runs behind an"
                        + " OpenAI-compatible proxy, but " + NO_PROXY);
    }

    @Test
    void aWrappingThatReturnsNothingIsAnError() {
        WorkflowResolver broken = new WorkflowResolver("inline", agent -> null);
        assertThatThrownBy(() -> broken.resolve(new EchoAgent(), null))
                .isInstanceOf(IllegalStateException.class)
                .hasMessage("the agent wrapping returned no workflow for " + FIXTURES + "EchoAgent");
    }

    // --- rule 6: anything else ---

    @Test
    void anyOtherObjectIsRejectedNamingItsTypeAndWhatIsAccepted() {
        assertThatThrownBy(() -> inline.resolve(42, Map.of()))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("unsupported workflow: an instance of java.lang.Integer; " + ACCEPTED);
    }

    @Test
    void aClassThatIsNoWorkflowIsRejected() {
        assertThatThrownBy(() -> inline.resolve(WorkflowFixtures.NotAWorkflow.class, Map.of()))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("unsupported workflow: class " + FIXTURES + "NotAWorkflow, which implements neither"
                        + " RolloutWorkflow nor AgentWorkflow; " + ACCEPTED);
    }

    @Test
    void anUnknownAgentModeIsAnInvalidConfig() {
        assertThatThrownBy(() -> new WorkflowResolver("remote", proxy))
                .isInstanceOf(InvalidConfigException.class)
                .hasMessage("invalid value for 'rollout.agent.mode': \"remote\" (allowed: inline, subproc or online)");
    }

    // --- should_accept_fn ---

    @Test
    void noAcceptFilterAcceptsEverything() throws Exception {
        assertThat(WorkflowResolver.resolveAcceptFilter(null).accept(TensorDict.empty()))
                .isTrue();
    }

    @Test
    void anAcceptFilterIsUsedAsIs() {
        AcceptFilter f = group -> false;
        assertThat(WorkflowResolver.resolveAcceptFilter(f)).isSameAs(f);
    }

    @Test
    void anAcceptFilterClassNameIsInstantiated() {
        assertThat(WorkflowResolver.resolveAcceptFilter(FIXTURES + "KeepAll")).isInstanceOf(KeepAll.class);
    }

    @Test
    void anAcceptFilterFieldIsItsValue() {
        assertThat(WorkflowResolver.resolveAcceptFilter(FIXTURES + "Holder.NON_EMPTY"))
                .isSameAs(Holder.NON_EMPTY);
    }

    @Test
    void aFailedAcceptFilterImportNamesTheString() {
        assertThatThrownBy(() -> WorkflowResolver.resolveAcceptFilter("com.example.Filters.LONG"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("Failed to import should_accept_fn from string 'com.example.Filters.LONG': no class"
                        + " 'com.example.Filters.LONG', and no class 'com.example.Filters' to hold a field 'LONG'");
    }

    @Test
    void anAcceptFilterTargetOfAnotherTypeIsRejectedNamingItsClass() {
        assertThatThrownBy(() -> WorkflowResolver.resolveAcceptFilter(FIXTURES + "Holder.NOT_A_WORKFLOW"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("should_accept_fn '" + FIXTURES + "Holder.NOT_A_WORKFLOW' resolved to an instance of"
                        + " java.lang.String, which is not an AcceptFilter");
        assertThatThrownBy(() -> WorkflowResolver.resolveAcceptFilter(FIXTURES + "NoArgWorkflow"))
                .hasMessage("should_accept_fn '" + FIXTURES + "NoArgWorkflow' resolved to class " + FIXTURES
                        + "NoArgWorkflow, which is not an AcceptFilter");
    }

    @Test
    void anAcceptFilterClassWithoutANoArgConstructorIsRejected() {
        assertThatThrownBy(() -> WorkflowResolver.resolveAcceptFilter(FIXTURES + "FilterNeedingArgs"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("cannot instantiate should_accept_fn class " + FIXTURES + "FilterNeedingArgs: it has no"
                        + " public no-arg constructor FilterNeedingArgs()");
    }

    @Test
    void anAcceptFilterOfAnyOtherTypeIsRejected() {
        assertThatThrownBy(() -> WorkflowResolver.resolveAcceptFilter(List.of()))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageStartingWith("should_accept_fn must be null, an AcceptFilter, or a string naming an"
                        + " AcceptFilter class or static field ('pkg.Class', 'pkg.Class.FIELD' or"
                        + " 'pkg.Class#FIELD'), got java.util.");
    }
}
