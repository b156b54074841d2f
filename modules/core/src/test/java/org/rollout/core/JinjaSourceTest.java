package org.rollout.core;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class JinjaSourceTest {

    @Test
    void wrapsTheComparisonANotNegates() {
        assertThat(JinjaSource.withJinjaNotPrecedence("{% if not m.tool_calls|length == 1 %}x{% endif %}"))
                .isEqualTo("{% if not (m.tool_calls|length == 1) %}x{% endif %}");
    }

    @Test
    void stopsAtAndOrIfElseCommasAndClosingBrackets() {
        assertThat(JinjaSource.withJinjaNotPrecedence("{{ 'a' if not x == 1 and y else 'b' }}"))
                .isEqualTo("{{ 'a' if not (x == 1) and y else 'b' }}");
        assertThat(JinjaSource.withJinjaNotPrecedence("{{ f(not a in b, c) }}")).isEqualTo("{{ f(not (a in b), c) }}");
        assertThat(JinjaSource.withJinjaNotPrecedence("{%- if (not a is defined) or b -%}"))
                .isEqualTo("{%- if (not (a is defined)) or b -%}");
    }

    @Test
    void leavesIsNotNotInAndPlainNegationAlone() {
        String[] unchanged = {
            "{% if a is not none %}",
            "{% if a not in b %}",
            "{% if not loop.first %}",
            "{% if not (a == b) %}",
            "{{ 'not a == b' }}",
            "{# not a == b #}",
            "text not a == b"
        };
        for (String s : unchanged) {
            assertThat(JinjaSource.withJinjaNotPrecedence(s)).isEqualTo(s);
        }
    }

    @Test
    void wrapsEachNestedNot() {
        assertThat(JinjaSource.withJinjaNotPrecedence("{{ not not a == b }}")).isEqualTo("{{ not (not (a == b)) }}");
    }

    @Test
    void keepsWhitespaceControlOutsideTheExpression() {
        assertThat(JinjaSource.withJinjaNotPrecedence("{%- if not a == b -%}")).isEqualTo("{%- if not (a == b) -%}");
    }

    @Test
    void leavesRawBlocksAlone() {
        String s = "{% raw %}{% if not a == b %}{% endraw %}{% if not a == b %}";
        assertThat(JinjaSource.withJinjaNotPrecedence(s))
                .isEqualTo("{% raw %}{% if not a == b %}{% endraw %}{% if not (a == b) %}");
    }

    @Test
    void dictLiteralsInsideExpressionsDoNotEndThem() {
        assertThat(JinjaSource.withJinjaNotPrecedence("{{ {'a': {'b': not x == 1}} }}"))
                .isEqualTo("{{ {'a': {'b': not (x == 1)}} }}");
    }

    @Test
    void findsFilterAndTestNamesOutsideStringsAndComments() {
        String t = "{# x|ignored #}{{ m|trim|tojson(indent=2) }}{% if a is not none and b is defined %}"
                + "{{ '|not_a_filter' }}{% endif %}{% for k, v in d|items %}{% endfor %}";
        assertThat(JinjaSource.filterNames(t)).containsExactly("trim", "tojson", "items");
        assertThat(JinjaSource.testNames(t)).containsExactly("none", "defined");
    }

    @Test
    void rendersNotOverAComparisonAsPythonJinjaDoes() {
        ChatTemplate t = ChatTemplate.compile("test", "{% if not messages|length == 1 %}many{% else %}one{% endif %}");
        Map<String, Object> m = Map.of("role", "user", "content", "x");
        assertThat(t.render(List.of(m), false, Map.of())).isEqualTo("one");
        assertThat(t.render(List.of(m, m), false, Map.of())).isEqualTo("many");
    }
}
