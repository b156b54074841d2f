package org.rollout.core;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.ZoneOffset;
import java.time.ZonedDateTime;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** Expected strings were checked against Python's jinja2 3.1.6 with Hugging Face's settings. */
class ChatTemplateTest {
    private static final List<Map<String, Object>> TWO =
            List.of(Map.of("role", "user", "content", "ab"), Map.of("role", "assistant", "content", "cde"));

    private static String render(String template) {
        return render(template, Map.of());
    }

    private static String render(String template, Map<String, ?> variables) {
        return ChatTemplate.compile("test template", template).render(TWO, true, variables);
    }

    @Test
    void pythonStripFamilyWithAndWithoutCharacters() {
        assertThat(render(
                        "[{{ ' a '.strip() }}|{{ 'xxaxx'.strip('x') }}|{{ 'ab'.lstrip('a') }}|{{ 'ab  '.rstrip() }}]"))
                .isEqualTo("[a|a|b|ab]");
    }

    @Test
    void pythonStartswithAndEndswithAcceptAPrefixOrAList() {
        assertThat(render("{% if 'abc'.startswith('ab') and 'abc'.startswith(['x', 'a']) and 'abc'.endswith('bc')"
                        + " and not 'abc'.endswith('a') %}yes{% endif %}"))
                .isEqualTo("yes");
    }

    @Test
    void pythonSplitOnWhitespaceRunsOrASeparatorWithMaxsplit() {
        assertThat(render("{{ 'a b  c '.split()|join('/') }}|{{ 'a,b,,c'.split(',')|join('/') }}|"
                        + "{{ 'a,b,c'.split(',', 1)|join('/') }}|{{ '  a b  c  '.split(none, 1)|join('/') }}|"))
                .isEqualTo("a/b/c|a/b//c|a/b,c|a/b  c  |");
    }

    @Test
    void pythonCaseReplaceFindCountAndJoin() {
        assertThat(render("{{ 'hello wORLD they\\'re'.title() }}|{{ 'hELLO'.capitalize() }}|{{ 'AbC'.upper() }}"
                        + "|{{ 'AbC'.lower() }}|{{ 'aaa'.replace('a', 'b', 2) }}|{{ 'abc'.find('c') }}"
                        + "|{{ 'abcabc'.count('bc') }}|{{ '-'.join(['a', 'b']) }}"))
                .isEqualTo("Hello World They'Re|Hello|ABC|abc|bba|2|2|a-b");
    }

    @Test
    void javaStringMethodsStillWorkWhereNoPythonMethodMatches() {
        assertThat(render("{{ 'abc'.length() }}")).isEqualTo("3");
    }

    @Test
    void jinjaSemanticsHuggingFaceTemplatesRelyOn() {
        assertThat(render(
                        "{% for k in {'b': 1, 'a': 2} %}{{ k }}{% endfor %}"
                                + "|{% for i in [1, 2, 3, 4] %}{% if i == 2 %}{% continue %}{% endif %}"
                                + "{% if i == 4 %}{% break %}{% endif %}{{ i }}{% endfor %}"
                                + "|{% set ns = namespace(n=0) %}{% for m in messages %}{% set ns.n = ns.n + m.content|length %}"
                                + "{% endfor %}{{ ns.n }}"
                                + "|{{ messages[-1]['role'] }}"
                                + "|{{ messages|selectattr('role', 'equalto', 'user')|list|length }}"
                                + "|{{ {x: 1}[x] }}",
                        Map.of("x", "k")))
                .isEqualTo("ba|13|5|assistant|1|1");
    }

    @Test
    void trimBlocksAndLstripBlocksAreOnAndDashesTrimExpressions() {
        assertThat(render("{#- c -#}\n{%- if true %}\n    {{- 'A' }}\n    {{- \"B\\n\" -}}\n   x\n{%- endif %}\n"
                        + "{{ 'C' }}\n  {{- 'D' }}"))
                .isEqualTo("AB\nxCD");
    }

    @Test
    void toolsIsNoneUnlessGiven() {
        assertThat(render("{% if tools is none %}none{% endif %}")).isEqualTo("none");
        assertThat(render("{{ tools|length }}", Map.of("tools", List.of(1, 2)))).isEqualTo("2");
    }

    @Test
    void variablesCannotReplaceMessagesOrTheGenerationPromptFlag() {
        assertThat(render(
                        "{{ messages|length }} {{ add_generation_prompt }}",
                        Map.of("messages", List.of(), "add_generation_prompt", false)))
                .isEqualTo("2 true");
    }

    @Test
    void tojsonTakesIndentAndSortKeys() {
        assertThat(render("{{ {'b': 1, 'a': [1]}|tojson(indent=1, sort_keys=true) }}"))
                .isEqualTo("{\n \"a\": [\n  1\n ],\n \"b\": 1\n}");
    }

    @Test
    void raiseExceptionFailsWithTheTemplatesMessage() {
        assertThatThrownBy(() -> render("before{{ raise_exception('no ' + messages[0].role + ' turns') }}after"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("test template raised an exception: no user turns");
    }

    @Test
    void aRenderingErrorFailsNamingTheTemplateAndLine() {
        assertThatThrownBy(() -> render("line one\n{{ no_such_function(1) }}"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageStartingWith("rendering test template failed: ")
                .hasMessageContaining("no_such_function")
                .hasMessageEndingWith("(line 2)");
    }

    @Test
    void aFailingPythonStringMethodFailsTheRender() {
        assertThatThrownBy(() -> render("{{ 'a,b'.split('') }}"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageStartingWith("rendering test template failed: ");
    }

    @Test
    void unknownFiltersAndTestsAreRejectedAtCompileAsJinjaWould() {
        assertThatThrownBy(() -> ChatTemplate.compile("my template", "{{ x|no_such_filter }}{{ x is odd_ish }}"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("my template uses what the renderer does not have: filter 'no_such_filter',"
                        + " test 'odd_ish'");
    }

    @Test
    void itemsFilterYieldsKeyValuePairs() {
        assertThat(render("{% for k, v in {'b': 1, 'a': 2}|items %}{{ k }}={{ v }};{% endfor %}"))
                .isEqualTo("b=1;a=2;");
    }

    @Test
    void aTemplateThatDoesNotParseIsRejectedNamingOriginAndLine() {
        assertThatThrownBy(() -> ChatTemplate.compile("my template", "ok\n{% for m in messages %}"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageStartingWith("my template does not parse: ")
                .hasMessageEndingWith("(line 2)");
    }

    @Test
    void templatesCannotIncludeFiles() {
        assertThatThrownBy(() -> render("{% include '/etc/hostname' %}"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageStartingWith("rendering test template failed: ");
    }

    @Test
    void strftimeFormatsThePythonDirectivesTemplatesUse() {
        ZonedDateTime t = ZonedDateTime.of(2026, 12, 2, 9, 5, 7, 0, ZoneOffset.UTC);
        assertThat(ChatTemplate.strftime("%d %b %Y, %A %H:%M:%S %p %j %-d %y %B %a %I %%", t))
                .isEqualTo("02 Dec 2026, Wednesday 09:05:07 AM 336 2 26 December Wed 09 %");
        assertThat(ChatTemplate.strftime("%I %p", t.withHour(21))).isEqualTo("09 PM");
    }

    @Test
    void strftimeRejectsAnUnsupportedDirectiveNamingIt() {
        assertThatThrownBy(() -> ChatTemplate.strftime("%d %Q", ZonedDateTime.now()))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("strftime_now: unsupported directive %Q in \"%d %Q\"");
    }

    @Test
    void strftimeNowIsTheCurrentDate() {
        assertThat(render("{{ strftime_now('%d %b %Y') }}")).matches("\\d{2} [A-Z][a-z]{2} \\d{4}");
    }

    @Test
    void concurrentRendersOfOneTemplateAgree() throws Exception {
        ChatTemplate t = ChatTemplate.compile("test template", TokenizerFixtures.template("qwen2.5-style.jinja"));
        String expected = t.render(TWO, true, Map.of());
        ExecutorService pool = Executors.newFixedThreadPool(8);
        try {
            List<Future<String>> results = new ArrayList<>();
            for (int i = 0; i < 64; i++) {
                results.add(pool.submit(() -> t.render(TWO, true, Map.of())));
            }
            for (Future<String> f : results) {
                assertThat(f.get(30, TimeUnit.SECONDS)).isEqualTo(expected);
            }
        } finally {
            pool.shutdownNow();
        }
    }
}
