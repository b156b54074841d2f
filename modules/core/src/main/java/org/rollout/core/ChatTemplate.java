package org.rollout.core;

import com.hubspot.jinjava.Jinjava;
import com.hubspot.jinjava.JinjavaConfig;
import com.hubspot.jinjava.LegacyOverrides;
import com.hubspot.jinjava.el.JinjavaInterpreterResolver;
import com.hubspot.jinjava.interpret.JinjavaInterpreter;
import com.hubspot.jinjava.interpret.RenderResult;
import com.hubspot.jinjava.interpret.TemplateError;
import com.hubspot.jinjava.lib.filter.Filter;
import com.hubspot.jinjava.lib.fn.ELFunctionDefinition;
import com.hubspot.jinjava.loader.ResourceNotFoundException;
import java.lang.reflect.Method;
import java.time.ZonedDateTime;
import java.time.format.DateTimeFormatter;
import java.time.format.TextStyle;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import jinjava.javax.el.CompositeELResolver;

/**
 * A Hugging Face chat template: the Jinja program in {@code tokenizer_config.json} (or {@code
 * chat_template.jinja}) that turns OpenAI-style messages into the prompt a model was trained on,
 * rendered with Jinjava the way {@code transformers}' {@code apply_chat_template} renders it.
 *
 * <pre>
 *   messages + add_generation_prompt + special tokens ──render──► prompt text ──encode──► ids
 * </pre>
 *
 * <p>What a template sees, as in {@code transformers}:
 *
 * <ul>
 *   <li>variables {@code messages}, {@code add_generation_prompt}, the special-token strings
 *       ({@code bos_token}, {@code eos_token}, {@code pad_token}, {@code unk_token} when the
 *       tokenizer has them), {@code tools} (none unless given), plus any extra variables the
 *       caller passes (e.g. {@code enable_thinking});
 *   <li>{@code raise_exception(msg)}, which fails the render with an {@link
 *       IllegalArgumentException} naming this template and {@code msg};
 *   <li>{@code strftime_now(fmt)}, the current local time in Python {@code strftime} form
 *       (directives {@code %a %A %b %B %d %-d %m %y %Y %H %I %M %S %p %j %%});
 *   <li>the {@code tojson} filter with Python's spacing ({@link PythonJson}), and its {@code
 *       indent}, {@code sort_keys}, {@code ensure_ascii} and {@code separators} arguments; Jinja's
 *       {@code items} filter, which Jinjava lacks;
 *   <li>Python {@code str} methods ({@code .strip()}, {@code .startswith()}, {@code .split()}, …,
 *       see {@link PythonStringMethods});
 *   <li>Jinja's {@code trim_blocks} and {@code lstrip_blocks} on, and {@code break}/{@code
 *       continue} in loops, as Hugging Face configures its environment.
 * </ul>
 *
 * <p>Jinjava binds {@code not} tighter than comparisons, Jinja looser; {@link JinjaSource} rewrites
 * the template so {@code not x|length == 1} means what it means in Python. Jinjava ignores an
 * unknown filter or test; {@link #compile} refuses a template that uses one, as Jinja would.
 * Pitfalls left, where Jinjava still differs from Python's Jinja: {@code {{ true }}} prints {@code
 * true} (Python: {@code True}) and {@code {{ none }}} prints nothing (Python: {@code None}); {@code
 * 'a' + 1} concatenates instead of failing; the {@code min}/{@code max} filters are missing (so
 * refused). Templates in the form of Qwen2.5's (ChatML) and Llama 3.1's render exactly as {@code
 * transformers} renders them.
 *
 * <p>A template that does not parse is rejected by {@link #compile}. Rendering errors (a {@code
 * raise_exception}, an unknown function, a failing method) throw; nothing renders half-way
 * silently. Immutable and thread-safe: renders may run concurrently.
 */
public final class ChatTemplate {
    private static final Jinjava ENGINE = createEngine();

    private final String origin;
    private final String source;
    /** The source as Jinjava is given it: with Jinja's precedence of {@code not} made explicit. */
    private final String prepared;

    private ChatTemplate(String origin, String source, String prepared) {
        this.origin = origin;
        this.source = source;
        this.prepared = prepared;
    }

    /**
     * Parses {@code source}.
     *
     * @param origin where the template came from, for messages, e.g. {@code "chat_template of
     *     /m/tokenizer_config.json"}
     * @throws IllegalArgumentException when the template does not parse (naming {@code origin},
     *     the line and the parser's message) or uses a filter or test the renderer lacks
     */
    public static ChatTemplate compile(String origin, String source) {
        Objects.requireNonNull(origin, "origin");
        Objects.requireNonNull(source, "source");
        String prepared = JinjaSource.withJinjaNotPrecedence(source);
        // Jinjava renders an unknown filter or test as if it were not there; Jinja refuses.
        List<String> unknown = new ArrayList<>();
        JinjaSource.filterNames(prepared).stream()
                .filter(f -> ENGINE.getGlobalContext().getFilter(f) == null)
                .forEach(f -> unknown.add("filter '" + f + "'"));
        JinjaSource.testNames(prepared).stream()
                .filter(t -> ENGINE.getGlobalContext().getExpTest(t) == null)
                .forEach(t -> unknown.add("test '" + t + "'"));
        if (!unknown.isEmpty()) {
            throw new IllegalArgumentException(
                    origin + " uses what the renderer does not have: " + String.join(", ", unknown));
        }
        JinjavaInterpreter interpreter = ENGINE.newInterpreter();
        interpreter.parse(prepared);
        for (TemplateError e : interpreter.getErrorsCopy()) {
            if (e.getSeverity() == TemplateError.ErrorType.FATAL) {
                throw new IllegalArgumentException(
                        origin + " does not parse: " + e.getMessage() + " (line " + e.getLineno() + ")");
            }
        }
        return new ChatTemplate(origin, source, prepared);
    }

    /** Where this template came from. */
    public String origin() {
        return origin;
    }

    /** The template text. */
    public String source() {
        return source;
    }

    /**
     * Renders the prompt for {@code messages}.
     *
     * @param variables the special-token strings and any extra variables; they may override
     *     {@code tools} but not {@code messages} or {@code add_generation_prompt}
     * @throws IllegalArgumentException when the template calls {@code raise_exception} or fails to
     *     render, naming {@link #origin()}
     */
    public String render(List<Map<String, Object>> messages, boolean addGenerationPrompt, Map<String, ?> variables) {
        Objects.requireNonNull(messages, "messages");
        Map<String, Object> bindings = new HashMap<>();
        bindings.put("tools", null);
        if (variables != null) {
            bindings.putAll(variables);
        }
        bindings.put("messages", messages);
        bindings.put("add_generation_prompt", addGenerationPrompt);
        RenderResult result = ENGINE.renderForResult(prepared, bindings);
        for (TemplateError e : result.getErrors()) {
            if (e.getSeverity() != TemplateError.ErrorType.FATAL) {
                continue;
            }
            TemplateRaised raised = raisedIn(e.getException());
            if (raised != null) {
                throw new IllegalArgumentException(origin + " raised an exception: " + raised.getMessage());
            }
            IllegalArgumentException failure = new IllegalArgumentException(
                    "rendering " + origin + " failed: " + e.getMessage() + " (line " + e.getLineno() + ")");
            if (e.getException() != null) {
                failure.initCause(e.getException());
            }
            throw failure;
        }
        return result.getOutput();
    }

    private static TemplateRaised raisedIn(Throwable t) {
        for (Throwable c = t; c != null; c = c.getCause()) {
            if (c instanceof TemplateRaised r) {
                return r;
            }
            if (c.getCause() == c) {
                break;
            }
        }
        return null;
    }

    @Override
    public String toString() {
        return "ChatTemplate{" + origin + ", " + source.length() + " chars}";
    }

    private static Jinjava createEngine() {
        CompositeELResolver resolver = new CompositeELResolver();
        resolver.add(new PythonStringMethods());
        resolver.add(JinjavaInterpreterResolver.DEFAULT_RESOLVER_READ_WRITE);
        Jinjava jinjava = new Jinjava(JinjavaConfig.newBuilder()
                .withTrimBlocks(true)
                .withLstripBlocks(true)
                .withElResolver(resolver)
                // Python Jinja's semantics where Jinjava keeps other defaults for compatibility:
                // "{{-" and "{#-" trim whitespace, dict keys are expressions, iterating a dict
                // yields its keys, None stays in loops, operators bind as in Python.
                .withLegacyOverrides(LegacyOverrides.newBuilder()
                        .withUseTrimmingForNotesAndExpressions(true)
                        .withEvaluateMapKeys(true)
                        .withIterateOverMapKeys(true)
                        .withKeepNullableLoopValues(true)
                        .withUseNaturalOperatorPrecedence(true)
                        .build())
                .build());
        // Hugging Face's environment has no loader: a template cannot include files.
        jinjava.setResourceLocator((name, encoding, interpreter) -> {
            throw new ResourceNotFoundException("chat templates cannot include other templates: " + name);
        });
        jinjava.registerFunction(function("raise_exception", "raiseException"));
        jinjava.registerFunction(function("strftime_now", "strftimeNow"));
        jinjava.registerFilter(new PythonToJson());
        jinjava.registerFilter(new DictItems());
        return jinjava;
    }

    private static ELFunctionDefinition function(String name, String javaName) {
        try {
            Method m = ChatTemplate.class.getDeclaredMethod(javaName, Object.class);
            m.setAccessible(true);
            return new ELFunctionDefinition("", name, m);
        } catch (NoSuchMethodException e) {
            throw new IllegalStateException("ChatTemplate." + javaName + " is missing", e);
        }
    }

    /** {@code raise_exception(msg)}: Jinjava records the throw as a template error; render() finds it. */
    @SuppressWarnings("unused") // called by Jinjava through reflection
    private static Object raiseException(Object message) {
        throw new TemplateRaised(String.valueOf(message));
    }

    @SuppressWarnings("unused") // called by Jinjava through reflection
    private static Object strftimeNow(Object format) {
        return strftime(String.valueOf(format), ZonedDateTime.now());
    }

    /** Python's {@code strftime} for the directives chat templates use. */
    static String strftime(String format, ZonedDateTime t) {
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < format.length(); i++) {
            char c = format.charAt(i);
            if (c != '%' || i + 1 == format.length()) {
                sb.append(c);
                continue;
            }
            char d = format.charAt(++i);
            boolean unpadded = false;
            if (d == '-' && i + 1 < format.length()) {
                unpadded = true;
                d = format.charAt(++i);
            }
            switch (d) {
                case 'a' -> sb.append(t.getDayOfWeek().getDisplayName(TextStyle.SHORT, Locale.US));
                case 'A' -> sb.append(t.getDayOfWeek().getDisplayName(TextStyle.FULL, Locale.US));
                case 'b' -> sb.append(t.getMonth().getDisplayName(TextStyle.SHORT, Locale.US));
                case 'B' -> sb.append(t.getMonth().getDisplayName(TextStyle.FULL, Locale.US));
                case 'd' -> sb.append(pad(t.getDayOfMonth(), 2, unpadded));
                case 'm' -> sb.append(pad(t.getMonthValue(), 2, unpadded));
                case 'y' -> sb.append(pad(t.getYear() % 100, 2, unpadded));
                case 'Y' -> sb.append(t.getYear());
                case 'H' -> sb.append(pad(t.getHour(), 2, unpadded));
                case 'I' -> sb.append(pad(t.getHour() % 12 == 0 ? 12 : t.getHour() % 12, 2, unpadded));
                case 'M' -> sb.append(pad(t.getMinute(), 2, unpadded));
                case 'S' -> sb.append(pad(t.getSecond(), 2, unpadded));
                case 'p' -> sb.append(t.format(DateTimeFormatter.ofPattern("a", Locale.US)));
                case 'j' -> sb.append(pad(t.getDayOfYear(), 3, unpadded));
                case '%' -> sb.append('%');
                default ->
                    throw new IllegalArgumentException(
                            "strftime_now: unsupported directive %" + d + " in \"" + format + "\"");
            }
        }
        return sb.toString();
    }

    private static String pad(int v, int width, boolean unpadded) {
        String s = Integer.toString(v);
        return unpadded || s.length() >= width ? s : "0".repeat(width - s.length()) + s;
    }

    /** Thrown by {@code raise_exception}; carries the template's own message. */
    private static final class TemplateRaised extends RuntimeException {
        TemplateRaised(String message) {
            super(message);
        }
    }

    /** Jinja's {@code items} filter: a dict's {@code [key, value]} pairs, for {@code for k, v in d|items}. */
    private static final class DictItems implements Filter {
        @Override
        public String getName() {
            return "items";
        }

        @Override
        public Object filter(Object var, JinjavaInterpreter interpreter, String... args) {
            if (var == null) {
                return List.of();
            }
            if (!(var instanceof Map<?, ?> m)) {
                throw new IllegalArgumentException(
                        "items: expected a mapping, got " + var.getClass().getName());
            }
            List<List<Object>> pairs = new ArrayList<>();
            m.forEach((k, v) -> pairs.add(Arrays.asList(k, v)));
            return pairs;
        }
    }

    /** Hugging Face's {@code tojson}: {@code json.dumps(x, ensure_ascii=False, ...)}. */
    private static final class PythonToJson implements Filter {
        @Override
        public String getName() {
            return "tojson";
        }

        @Override
        public Object filter(Object var, JinjavaInterpreter interpreter, String... args) {
            return filter(var, interpreter, args, Map.of());
        }

        @Override
        public Object filter(Object var, JinjavaInterpreter interpreter, Object[] args, Map<String, Object> kwargs) {
            Object indent = kwargs.containsKey("indent") ? kwargs.get("indent") : args.length > 0 ? args[0] : null;
            String itemSeparator = null;
            String keySeparator = null;
            if (kwargs.get("separators") instanceof List<?> seps && seps.size() == 2) {
                itemSeparator = String.valueOf(seps.get(0));
                keySeparator = String.valueOf(seps.get(1));
            }
            return PythonJson.dumps(
                    var,
                    indent(indent),
                    itemSeparator,
                    keySeparator,
                    Boolean.TRUE.equals(kwargs.get("sort_keys")),
                    Boolean.TRUE.equals(kwargs.get("ensure_ascii")));
        }

        private static Integer indent(Object o) {
            if (o == null) {
                return null;
            }
            if (o instanceof Number n) {
                return n.intValue();
            }
            try {
                return Integer.valueOf(o.toString().trim());
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException("tojson: indent must be an integer, got " + o, e);
            }
        }
    }
}
