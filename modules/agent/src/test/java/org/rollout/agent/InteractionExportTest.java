package org.rollout.agent;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.rollout.api.Interaction;

class InteractionExportTest {
    private static List<Interaction> chain(Double... rewards) {
        Interaction a = Interaction.builder("c1")
                .reward(rewards[0])
                .chatTemplateType(Interaction.ChatTemplateType.CONCAT)
                .build();
        Interaction b = Interaction.builder("c2")
                .reward(rewards[1])
                .parent(a)
                .chatTemplateType(Interaction.ChatTemplateType.CONCAT)
                .build();
        Interaction c = Interaction.builder("c3")
                .reward(rewards[2])
                .parent(b)
                .chatTemplateType(Interaction.ChatTemplateType.CONCAT)
                .build();
        return List.of(a, b, c);
    }

    @Test
    void individualPropagatesTheFinalRewardBackwardsWithTheTurnDiscount() {
        Map<String, Interaction> out = InteractionExport.export(chain(null, null, 1.0), ExportStyle.INDIVIDUAL, 0.5);
        assertThat(out.keySet()).containsExactly("c1", "c2", "c3");
        assertThat(out.values()).extracting(Interaction::reward).containsExactly(0.25, 0.5, 1.0);
    }

    @Test
    void ownRewardsAddToTheDiscountedLaterOnesAsInAReaL() {
        Map<String, Interaction> out = InteractionExport.export(chain(0.1, null, 1.0), ExportStyle.INDIVIDUAL, 0.5);
        assertThat(out.values()).extracting(Interaction::reward).containsExactly(0.35, 0.5, 1.0);
    }

    @Test
    void everyRowGetsTheTerminalRewardAsRolloutRewardUnlessItHasOne() {
        List<Interaction> in = chain(null, null, 1.0);
        in = List.of(in.get(0).withRolloutReward(9.0), in.get(1), in.get(2));
        Map<String, Interaction> out = InteractionExport.export(in, ExportStyle.INDIVIDUAL, 0.5);
        assertThat(out.values()).extracting(Interaction::rolloutReward).containsExactly(9.0, 1.0, 1.0);
    }

    @Test
    void concatExportsOnlyTheLeavesLinkedToRewardedParents() {
        Map<String, Interaction> out = InteractionExport.export(chain(null, null, 1.0), ExportStyle.CONCAT, 0.5);
        assertThat(out.keySet()).containsExactly("c3");
        Interaction leaf = out.get("c3");
        assertThat(leaf.reward()).isEqualTo(1.0);
        assertThat(leaf.parent().id()).isEqualTo("c2");
        assertThat(leaf.parent().reward()).isEqualTo(0.5);
        assertThat(leaf.parent().parent().reward()).isEqualTo(0.25);
    }

    @Test
    void concatKeepsEveryLeafOfABranchingConversation() {
        Interaction root = Interaction.builder("r").build();
        Interaction left = Interaction.builder("l").parent(root).build();
        Interaction right = Interaction.builder("x").parent(root).reward(1.0).build();
        Map<String, Interaction> out = InteractionExport.export(List.of(root, left, right), ExportStyle.CONCAT, 1.0);
        assertThat(out.keySet()).containsExactly("l", "x");
        assertThat(out.values()).extracting(Interaction::reward).containsExactly(1.0, 1.0);
    }

    @Test
    void aTurnDiscountOutsideTheUnitIntervalIsRefused() {
        assertThatThrownBy(() -> InteractionExport.export(List.of(), ExportStyle.INDIVIDUAL, 0.0))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("turn_discount must be in (0, 1], got 0.0");
    }
}
