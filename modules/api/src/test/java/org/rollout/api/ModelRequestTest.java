package org.rollout.api;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

class ModelRequestTest {
    private static final GenerationConfig G = GenerationConfig.defaults();

    @Test
    void aFreshRidIsA32HexDigitUuidThatDiffersEachTime() {
        Set<String> rids = new HashSet<>();
        for (int i = 0; i < 100; i++) {
            String rid = ModelRequest.of(new int[] {1}, G).rid();
            assertThat(rid).matches("[0-9a-f]{32}");
            rids.add(rid);
        }
        assertThat(rids).hasSize(100);
        assertThat(ModelRequest.newRid()).matches("[0-9a-f]{12}4[0-9a-f]{3}[89ab][0-9a-f]{15}");
    }

    @Test
    void inputIdsAreCopiedInAndOut() {
        int[] ids = {1, 2, 3};
        ModelRequest r = ModelRequest.of("r1", ids, G);
        ids[0] = 99;
        assertThat(r.inputIds()).containsExactly(1, 2, 3);
        r.inputIds()[1] = 99;
        assertThat(r.inputId(1)).isEqualTo(2);
        assertThat(r.inputLength()).isEqualTo(3);
    }

    @Test
    void metadataIsCopiedAndImmutable() {
        Map<String, Object> meta = new HashMap<>(Map.of("return_routed_experts", true));
        ModelRequest r = ModelRequest.of("r1", new int[] {1}, G).withMetadata(meta);
        meta.put("later", 1);
        assertThat(r.metadata()).containsOnlyKeys("return_routed_experts");
        assertThatThrownBy(() -> r.metadata().put("x", 1)).isInstanceOf(UnsupportedOperationException.class);
        assertThat(ModelRequest.of(new int[] {1}, G).metadata()).isEmpty();
    }

    @Test
    void withersKeepEveryOtherField() {
        ModelRequest r = ModelRequest.of("r1", new int[] {1, 2}, G).withMetadata(Map.of("k", "v"));
        GenerationConfig g2 = G.withMaxNewTokens(5);

        ModelRequest longer = r.withInputIds(new int[] {1, 2, 3});
        assertThat(longer.rid()).isEqualTo("r1");
        assertThat(longer.inputIds()).containsExactly(1, 2, 3);
        assertThat(longer.metadata()).isEqualTo(Map.of("k", "v"));
        assertThat(r.withGconfig(g2).gconfig()).isSameAs(g2);
        assertThat(r.withGconfig(g2).rid()).isEqualTo("r1");
        assertThat(r.withRid("r2").rid()).isEqualTo("r2");
        assertThat(r.withRid("r2").inputIds()).containsExactly(1, 2);
        assertThat(r.inputIds()).containsExactly(1, 2);
    }

    @Test
    void aBlankRidIsRejected() {
        assertThatThrownBy(() -> ModelRequest.of(" ", new int[] {1}, G))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("rid must not be blank");
        assertThatThrownBy(() -> ModelRequest.of(null, new int[] {1}, G)).hasMessage("rid");
        assertThatThrownBy(() -> ModelRequest.of("r", new int[] {1}, null)).hasMessage("gconfig");
    }

    @Test
    void equalityComparesContent() {
        ModelRequest a = ModelRequest.of("r1", new int[] {1, 2}, G);
        ModelRequest b = ModelRequest.of("r1", new int[] {1, 2}, G);
        assertThat(a).isEqualTo(b).hasSameHashCodeAs(b);
        assertThat(a).isNotEqualTo(a.withRid("r2"));
        assertThat(a).isNotEqualTo(a.withInputIds(new int[] {1}));
    }

    @Test
    void toStringNamesRidAndSizesNotTokens() {
        assertThat(ModelRequest.of("r1", new int[] {1, 2}, G))
                .hasToString("ModelRequest{rid=r1, input_len=2, max_new_tokens=16384}");
    }
}
