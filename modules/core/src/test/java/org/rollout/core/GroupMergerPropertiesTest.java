package org.rollout.core;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.rollout.api.EpisodeResult;
import org.rollout.api.TensorDict;
import org.rollout.testing.Gen;
import org.rollout.testing.Property;

/** The decision procedure against an independent model, over random groups of tensor results. */
class GroupMergerPropertiesTest {

    /** One random group: which slots are usable, their rows, their (per-slot common) rewards. */
    private record Group(List<EpisodeResult> slots, List<Integer> usable, List<float[]> rawRewards) {}

    private static Group randomGroup(int g, long seed, int rejectPercent) {
        Random random = new Random(seed);
        List<EpisodeResult> slots = new ArrayList<>();
        List<Integer> usable = new ArrayList<>();
        List<float[]> raw = new ArrayList<>();
        for (int s = 0; s < g; s++) {
            if (random.nextInt(100) < rejectPercent) {
                slots.add(random.nextBoolean() ? null : EpisodeResult.rejected("low_reward"));
                continue;
            }
            int rows = 1 + random.nextInt(3);
            float reward = (random.nextInt(21) - 10) / 4f;
            List<TensorDict> dicts = new ArrayList<>();
            float[] rewards = new float[rows];
            for (int r = 0; r < rows; r++) {
                int[] ids = new int[2 + random.nextInt(6)];
                for (int j = 0; j < ids.length; j++) {
                    ids[j] = 1 + random.nextInt(500);
                }
                dicts.add(TrajectoryFixtures.row(ids, 1, s, reward));
                rewards[r] = reward;
            }
            slots.add(EpisodeResult.trajectory(TensorDicts.concatPadded(dicts)));
            usable.add(s);
            raw.add(rewards);
        }
        return new Group(slots, usable, raw);
    }

    /**
     * Group size {@code g}, requested minimum {@code m}, the two options, how often a slot is
     * rejected, and the seed of the group's content.
     */
    private record Case(int g, int m, boolean dropIncomplete, boolean normalise, int rejectPercent, long seed) {}

    @Test
    void decidesAsTheProcedureSaysAndKeepsGroupBoundaries() {
        Gen<Case> cases = random -> new Case(
                Gen.ints(1, 8).generate(random),
                Gen.ints(1, 8).generate(random),
                Gen.booleans().generate(random),
                Gen.booleans().generate(random),
                Gen.ints(0, 60).generate(random),
                Gen.longs().generate(random));
        Property.forAll(
                "decidesAsTheProcedureSaysAndKeepsGroupBoundaries",
                1_000,
                cases,
                c -> decidesAsTheProcedureSays(
                        c.g(), c.m(), c.dropIncomplete(), c.normalise(), c.rejectPercent(), c.seed()));
    }

    private static void decidesAsTheProcedureSays(
            int g, int m, boolean dropIncomplete, boolean normalise, int rejectPercent, long seed) {
        int minimum = Math.min(m, g);
        Group group = randomGroup(g, seed, rejectPercent);
        int u = group.usable().size();

        GroupOutcome outcome =
                GroupMerger.merge(7, group.slots(), new GroupOptions(g, minimum, dropIncomplete, normalise, true));

        boolean expectDropped = u == 0 || (dropIncomplete && u < g) || u < minimum;
        assertThat(outcome.metrics().usableSlotCount()).isEqualTo(u);
        assertThat(outcome.metrics().targetSlotCount()).isEqualTo(g);
        if (expectDropped) {
            assertThat(outcome).isInstanceOf(GroupOutcome.Dropped.class);
            assertThat(outcome.metrics().trainableSlotCount()).isZero();
            return;
        }
        GroupOutcome.Merged merged = (GroupOutcome.Merged) outcome;
        assertThat(merged.metrics().trainableSlotCount()).isEqualTo(u);
        assertThat(merged.slotIndices())
                .containsExactly(
                        group.usable().stream().mapToInt(Integer::intValue).toArray());
        assertThat(merged.slotRowCounts())
                .containsExactly(
                        group.rawRewards().stream().mapToInt(r -> r.length).toArray());

        double[] refs = group.rawRewards().stream().mapToDouble(r -> r[0]).toArray();
        RewardNormalizer model = RewardNormalizer.fromReferences(refs, true);
        boolean normalised = normalise && g > 1;
        float[] rewards = merged.rows().float32("rewards").toArray();
        int row = 0;
        for (int k = 0; k < u; k++) {
            int slot = group.usable().get(k);
            TensorDict source = ((EpisodeResult.Trajectory) group.slots().get(slot)).data();
            for (int r = 0; r < merged.slotRowCounts()[k]; r++, row++) {
                float raw = group.rawRewards().get(k)[r];
                float expected = normalised ? (float) model.normalize(raw) : raw;
                assertThat(rewards[row]).isCloseTo(expected, within(1e-5f));
                if (normalised) {
                    assertThat(merged.rows().float32("original_rewards").get(row))
                            .isEqualTo(raw);
                }
                // Every row is its slot's row, followed by padding: boundaries are where they say.
                int width = source.tensor("input_ids").dim(1);
                assertThat(merged.rows().int32("input_ids").row(row).slice(0, width))
                        .isEqualTo(source.int32("input_ids").row(r));
                assertThat(merged.rows().int32("versions").get(row, width - 1)).isIn(slot, -1);
            }
        }
        assertThat(row).isEqualTo(merged.rows().batchSize());
        if (normalised) {
            double mean = 0;
            for (double ref : merged.slotReferences()) {
                mean += ref / u;
            }
            assertThat(mean).isCloseTo(0.0, within(1e-6));
        }
    }
}
