package org.rollout.core;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.rollout.api.InvalidConfigException;
import org.rollout.api.Tokenizer;

/**
 * A Hugging Face tokenizer read from {@code tokenizer.json}, encoded and decoded by the {@code
 * tokenizers} library through DJL (its native library ships in the DJL jar and is extracted under
 * {@code ~/.djl.ai} on first use; set {@code DJL_CACHE_DIR} to move it).
 *
 * <pre>
 *   tokenizer_path/
 *     tokenizer.json            required: vocabulary, merges, added tokens (which are special)
 *     tokenizer_config.json     optional: eos_token, pad_token, bos_token, unk_token, chat_template
 *     special_tokens_map.json   optional: the token strings when tokenizer_config.json lacks them
 *     chat_template.jinja       optional: the chat template, preferred over tokenizer_config's
 * </pre>
 *
 * <p>{@code tokenizer_path} may name the directory or the {@code tokenizer.json} file itself; the
 * optional files are then looked for beside it.
 *
 * <p>Behaviour, as {@code transformers} would give it for these files:
 *
 * <ul>
 *   <li>{@link #encode} never adds BOS/EOS or other template tokens (no {@code
 *       add_special_tokens}): workflows add what their chat template says. Special-token strings
 *       in the text, such as {@code <|im_end|>}, become their ids. No truncation, no padding.
 *   <li>{@link #decode} with {@code skipSpecialTokens} leaves out the added tokens marked {@code
 *       "special": true}; an id outside {@code [0, vocabSize)} is an error naming it.
 *   <li>EOS and PAD come from {@code tokenizer_config.json}'s {@code eos_token} / {@code
 *       pad_token} (a string or an AddedToken object {@code {"content": …}}), else from {@code
 *       special_tokens_map.json}; EOS finally falls back to the first of {@link #FALLBACK_EOS}
 *       among the added tokens. PAD may be absent ({@code -1}); EOS may not.
 *   <li>{@link #applyChatTemplate} renders the model's {@link ChatTemplate} ({@code chat_template}
 *       as a string, or a list of {@code {name, template}} of which {@code "default"} is used).
 *       <b>Without a template it falls back to ChatML</b> ({@link ChatMl#render}), which is right
 *       for Qwen-family models and wrong for others: give such models a template.
 * </ul>
 *
 * <p>Loading takes about 0.4 s; {@link Tokenizers#load} caches instances per path. Every loading
 * problem is an {@link InvalidConfigException} for key {@code tokenizer_path} that names the path
 * and what is wrong with it. Immutable and thread-safe (the native tokenizer is only read).
 */
public final class HuggingFaceTokenizer implements Tokenizer {
    public static final String TOKENIZER_JSON = "tokenizer.json";
    public static final String TOKENIZER_CONFIG_JSON = "tokenizer_config.json";
    public static final String SPECIAL_TOKENS_MAP_JSON = "special_tokens_map.json";
    public static final String CHAT_TEMPLATE_JINJA = "chat_template.jinja";

    /** The EOS names tried among the added tokens, in order, when no config file names one. */
    public static final List<String> FALLBACK_EOS =
            List.of("</s>", "<|endoftext|>", "<|end_of_text|>", "<|eot_id|>", "<eos>", "<|eos|>");

    static final String CONFIG_KEY = "tokenizer_path";
    static final String ALLOWED = "\"\", \"builtin\" or \"byte-level\" for the built-in byte-level tokenizer,"
            + " or a directory containing a Hugging Face tokenizer.json, or that file itself";

    private static final List<String> SPECIAL_TOKEN_KEYS = List.of("bos_token", "eos_token", "pad_token", "unk_token");
    private static final ObjectMapper JSON = new ObjectMapper();

    static {
        // DJL reports usage to a telemetry endpoint when it thinks it runs on EC2, probing the
        // instance metadata address first. The engine contacts nothing it was not configured to.
        if (System.getProperty("OPT_OUT_TRACKING") == null && System.getenv("OPT_OUT_TRACKING") == null) {
            System.setProperty("OPT_OUT_TRACKING", "true");
        }
    }

    private final Path tokenizerFile;
    private final ai.djl.huggingface.tokenizers.HuggingFaceTokenizer tokenizer;
    private final int vocabSize;
    private final BitSet special;
    private final int eosTokenId;
    private final int padTokenId;
    private final Map<String, String> specialTokens;
    private final ChatTemplate chatTemplate;

    private HuggingFaceTokenizer(
            Path tokenizerFile,
            ai.djl.huggingface.tokenizers.HuggingFaceTokenizer tokenizer,
            int vocabSize,
            BitSet special,
            int eosTokenId,
            int padTokenId,
            Map<String, String> specialTokens,
            ChatTemplate chatTemplate) {
        this.tokenizerFile = tokenizerFile;
        this.tokenizer = tokenizer;
        this.vocabSize = vocabSize;
        this.special = special;
        this.eosTokenId = eosTokenId;
        this.padTokenId = padTokenId;
        this.specialTokens = specialTokens;
        this.chatTemplate = chatTemplate;
    }

    /**
     * Loads the tokenizer at {@code path} (a directory or its {@code tokenizer.json}). Not cached:
     * use {@link Tokenizers#load} to share instances.
     *
     * @throws InvalidConfigException for key {@code tokenizer_path} when the path is missing, not a
     *     tokenizer, or its files are invalid
     */
    public static HuggingFaceTokenizer load(Path path) {
        String configured = path.toString();
        return load(locate(path, configured), configured);
    }

    /** The real path of the {@code tokenizer.json} that {@code path} names. */
    static Path locate(Path path, String configured) {
        Path file = Files.isDirectory(path) ? path.resolve(TOKENIZER_JSON) : path;
        if (!Files.exists(path)) {
            throw invalid(configured, "it does not exist", null);
        }
        if (!Files.isRegularFile(file)) {
            throw invalid(configured, "the directory has no " + TOKENIZER_JSON, null);
        }
        try {
            return file.toRealPath();
        } catch (IOException e) {
            throw invalid(configured, "cannot resolve " + file + ": " + e, e);
        }
    }

    /** Loads from the located {@code tokenizer.json}; {@code configured} is the value for messages. */
    static HuggingFaceTokenizer load(Path tokenizerFile, String configured) {
        JsonNode tokenizerJson = readJson(tokenizerFile, configured, true);
        Path dir = tokenizerFile.getParent();
        JsonNode config = readJson(dir.resolve(TOKENIZER_CONFIG_JSON), configured, false);
        JsonNode specialMap = readJson(dir.resolve(SPECIAL_TOKENS_MAP_JSON), configured, false);

        Map<String, Integer> added = new LinkedHashMap<>();
        BitSet special = new BitSet();
        int maxId = -1;
        for (JsonNode t : tokenizerJson.path("added_tokens")) {
            int id = t.path("id").asInt(-1);
            String content = t.path("content").asText(null);
            if (id < 0 || content == null) {
                throw invalid(configured, TOKENIZER_JSON + " has an added token without an id or content: " + t, null);
            }
            added.put(content, id);
            if (t.path("special").asBoolean(false)) {
                special.set(id);
            }
            maxId = Math.max(maxId, id);
        }
        JsonNode vocab = tokenizerJson.path("model").path("vocab");
        if (vocab.isObject()) {
            for (JsonNode id : vocab) {
                maxId = Math.max(maxId, id.asInt(-1));
            }
        } else if (vocab.isArray()) {
            maxId = Math.max(maxId, vocab.size() - 1); // Unigram: [piece, score] pairs, the id is the index
        }
        if (maxId < 0) {
            throw invalid(configured, TOKENIZER_JSON + " has an empty vocabulary", null);
        }

        Map<String, String> tokens = new LinkedHashMap<>();
        for (String key : SPECIAL_TOKEN_KEYS) {
            String fromConfig = tokenString(config, key, TOKENIZER_CONFIG_JSON, configured);
            String value =
                    fromConfig != null ? fromConfig : tokenString(specialMap, key, SPECIAL_TOKENS_MAP_JSON, configured);
            if (value != null) {
                tokens.put(key, value);
            }
        }
        if (!tokens.containsKey("eos_token")) {
            FALLBACK_EOS.stream()
                    .filter(added::containsKey)
                    .findFirst()
                    .ifPresent(name -> tokens.put("eos_token", name));
        }
        String eos = tokens.get("eos_token");
        if (eos == null) {
            throw invalid(
                    configured,
                    "no EOS token: neither " + TOKENIZER_CONFIG_JSON + " nor " + SPECIAL_TOKENS_MAP_JSON
                            + " sets eos_token, and " + TOKENIZER_JSON + " has none of the added tokens "
                            + FALLBACK_EOS,
                    null);
        }
        int eosId = idOf(eos, "eos_token", added, vocab, configured);
        String pad = tokens.get("pad_token");
        int padId = pad == null ? -1 : idOf(pad, "pad_token", added, vocab, configured);

        ChatTemplate template = chatTemplate(dir, config, configured);

        // The native tokenizer is created last, so that no check above can leave it unreleased.
        ai.djl.huggingface.tokenizers.HuggingFaceTokenizer djl;
        try {
            djl = ai.djl.huggingface.tokenizers.HuggingFaceTokenizer.newInstance(
                    tokenizerFile, Map.of("addSpecialTokens", "false", "truncation", "false", "padding", "false"));
        } catch (IOException | RuntimeException e) {
            throw invalid(configured, TOKENIZER_JSON + " is not a valid Hugging Face tokenizer: " + e.getMessage(), e);
        }
        return new HuggingFaceTokenizer(
                tokenizerFile, djl, maxId + 1, special, eosId, padId, Collections.unmodifiableMap(tokens), template);
    }

    private static JsonNode readJson(Path file, String configured, boolean required) {
        if (!required && !Files.exists(file)) {
            return null;
        }
        try {
            return JSON.readTree(Files.readString(file, StandardCharsets.UTF_8));
        } catch (IOException e) {
            throw invalid(
                    configured,
                    file.getFileName() + " cannot be read as JSON: "
                            + e.getMessage().lines().findFirst().orElse(""),
                    e);
        }
    }

    /** A token string: {@code "<s>"}, or an AddedToken object {@code {"content": "<s>", ...}}, or null. */
    private static String tokenString(JsonNode json, String key, String fileName, String configured) {
        if (json == null) {
            return null;
        }
        JsonNode v = json.get(key);
        if (v == null || v.isNull()) {
            return null;
        }
        if (v.isTextual()) {
            return v.asText();
        }
        if (v.isObject() && v.path("content").isTextual()) {
            return v.path("content").asText();
        }
        throw invalid(
                configured,
                key + " in " + fileName + " must be a string or an object with a string \"content\", got " + v,
                null);
    }

    private static int idOf(String token, String key, Map<String, Integer> added, JsonNode vocab, String configured) {
        Integer id = added.get(token);
        if (id == null && vocab.isObject() && vocab.get(token) != null) {
            id = vocab.get(token).asInt();
        }
        if (id == null && vocab.isArray()) {
            for (int i = 0; i < vocab.size() && id == null; i++) {
                if (token.equals(vocab.get(i).path(0).asText(null))) {
                    id = i;
                }
            }
        }
        if (id == null) {
            throw invalid(configured, key + " \"" + token + "\" is not in the vocabulary of " + TOKENIZER_JSON, null);
        }
        return id;
    }

    private static ChatTemplate chatTemplate(Path dir, JsonNode config, String configured) {
        Path jinjaFile = dir.resolve(CHAT_TEMPLATE_JINJA);
        try {
            if (Files.isRegularFile(jinjaFile)) {
                return ChatTemplate.compile(
                        "chat template " + jinjaFile, Files.readString(jinjaFile, StandardCharsets.UTF_8));
            }
            JsonNode t = config == null ? null : config.get("chat_template");
            if (t == null || t.isNull()) {
                return null;
            }
            String origin = "chat_template of " + dir.resolve(TOKENIZER_CONFIG_JSON);
            if (t.isTextual()) {
                return ChatTemplate.compile(origin, t.asText());
            }
            if (t.isArray()) {
                List<String> names = new ArrayList<>();
                for (JsonNode named : t) {
                    String name = named.path("name").asText("");
                    names.add(name);
                    if (name.equals("default") && named.path("template").isTextual()) {
                        return ChatTemplate.compile(
                                origin + " (\"default\")",
                                named.path("template").asText());
                    }
                }
                throw invalid(
                        configured,
                        "chat_template in " + TOKENIZER_CONFIG_JSON + " lists templates " + names
                                + " but none named \"default\"",
                        null);
            }
            throw invalid(
                    configured,
                    "chat_template in " + TOKENIZER_CONFIG_JSON
                            + " must be a string or a list of {name, template}, got " + t.getNodeType(),
                    null);
        } catch (IOException e) {
            throw invalid(configured, CHAT_TEMPLATE_JINJA + " cannot be read: " + e, e);
        } catch (InvalidConfigException e) {
            throw e;
        } catch (IllegalArgumentException e) {
            throw invalid(configured, e.getMessage(), e);
        }
    }

    static InvalidConfigException invalid(String configured, String problem, Throwable cause) {
        InvalidConfigException e =
                new InvalidConfigException(CONFIG_KEY, configured, ALLOWED + "; this path: " + problem);
        if (cause != null) {
            e.initCause(cause);
        }
        return e;
    }

    /** The {@code tokenizer.json} this tokenizer was loaded from (its real path). */
    public Path tokenizerFile() {
        return tokenizerFile;
    }

    /** The chat template, or empty when the tokenizer has none and ChatML is used instead. */
    public Optional<ChatTemplate> chatTemplate() {
        return Optional.ofNullable(chatTemplate);
    }

    /** The special-token strings found ({@code bos_token}, {@code eos_token}, {@code pad_token}, {@code unk_token}). */
    public Map<String, String> specialTokens() {
        return specialTokens;
    }

    @Override
    public int[] encode(String text) {
        long[] ids = tokenizer.encode(text, false, false).getIds();
        int[] out = new int[ids.length];
        for (int i = 0; i < ids.length; i++) {
            out[i] = Math.toIntExact(ids[i]);
        }
        return out;
    }

    @Override
    public String decode(int[] ids, boolean skipSpecialTokens) {
        long[] wide = new long[ids.length];
        for (int i = 0; i < ids.length; i++) {
            if (ids[i] < 0 || ids[i] >= vocabSize) {
                throw new IllegalArgumentException(
                        "token id " + ids[i] + " is outside the vocabulary [0, " + vocabSize + ") of " + tokenizerFile);
            }
            wide[i] = ids[i];
        }
        return tokenizer.decode(wide, skipSpecialTokens);
    }

    @Override
    public int eosTokenId() {
        return eosTokenId;
    }

    @Override
    public int padTokenId() {
        return padTokenId;
    }

    @Override
    public int vocabSize() {
        return vocabSize;
    }

    @Override
    public boolean isSpecial(int id) {
        return id >= 0 && special.get(id);
    }

    /** {@link #applyChatTemplate(List, boolean, Map)} with no extra variables. */
    @Override
    public String applyChatTemplate(List<Map<String, Object>> messages, boolean addGenerationPrompt) {
        return applyChatTemplate(messages, addGenerationPrompt, Map.of());
    }

    /**
     * The prompt for {@code messages} by the model's chat template, with extra template variables
     * such as {@code tools} or {@code enable_thinking}. The special-token strings are passed as
     * {@code bos_token}, {@code eos_token}, etc.
     *
     * <p>Without a chat template the prompt is ChatML ({@link ChatMl#render}); extra variables are
     * then unused, except that non-null {@code tools} is an error because ChatML cannot show them.
     *
     * @throws IllegalArgumentException when the template raises or fails, naming the template
     */
    @Override
    public String applyChatTemplate(
            List<Map<String, Object>> messages, boolean addGenerationPrompt, Map<String, ?> variables) {
        if (chatTemplate == null) {
            if (variables != null && variables.get("tools") != null) {
                throw new IllegalArgumentException("the tokenizer at " + tokenizerFile
                        + " has no chat template, and the ChatML fallback cannot render tools");
            }
            return ChatMl.render(messages, addGenerationPrompt);
        }
        Map<String, Object> bindings = new HashMap<>(specialTokens);
        if (variables != null) {
            bindings.putAll(variables);
        }
        return chatTemplate.render(messages, addGenerationPrompt, bindings);
    }

    @Override
    public String toString() {
        return "HuggingFaceTokenizer{" + tokenizerFile + ", vocab=" + vocabSize + ", eos="
                + specialTokens.get("eos_token")
                + "(" + eosTokenId + "), pad="
                + (padTokenId < 0 ? "none" : specialTokens.get("pad_token") + "(" + padTokenId + ")")
                + ", chat_template=" + (chatTemplate == null ? "none (ChatML)" : chatTemplate.origin()) + "}";
    }
}
