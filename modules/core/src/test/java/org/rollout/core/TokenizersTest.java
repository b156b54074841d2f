package org.rollout.core;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.rollout.core.TokenizerFixtures.bareTokenizerIn;
import static org.rollout.core.TokenizerFixtures.tinyDir;
import static org.rollout.core.TokenizerFixtures.write;

import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.rollout.api.InvalidConfigException;
import org.rollout.api.Tokenizer;

class TokenizersTest {
    private static final String ALLOWED = "\"\", \"builtin\" or \"byte-level\" for the built-in byte-level tokenizer,"
            + " or a directory containing a Hugging Face tokenizer.json, or that file itself";

    @TempDir
    Path tmp;

    @Test
    void builtinNamesAndNullSelectTheByteLevelTokenizer() {
        for (String name : new String[] {"", "builtin", "byte-level", null}) {
            assertThat(Tokenizers.load(name)).as("tokenizer_path %s", name).isSameAs(ByteLevelTokenizer.INSTANCE);
        }
    }

    @Test
    void aPathLoadsAHuggingFaceTokenizer() {
        Tokenizer t = Tokenizers.load(tinyDir().toString());
        assertThat(t).isInstanceOf(HuggingFaceTokenizer.class);
        assertThat(t.eosTokenId()).isEqualTo(TokenizerFixtures.IM_END);
    }

    @Test
    void theDirectoryTheFileAndAnUnnormalisedPathShareOneCachedInstance() {
        Tokenizer viaDir = Tokenizers.load(tinyDir().toString());
        assertThat(Tokenizers.load(tinyDir().resolve("tokenizer.json").toString()))
                .isSameAs(viaDir);
        assertThat(Tokenizers.load(tinyDir().resolve("../tiny/.").toString())).isSameAs(viaDir);
    }

    @Test
    void aMissingPathIsAnInvalidConfigNamingKeyValueAllowedAndProblem() {
        String missing = tmp.resolve("nope").toString();
        assertThatThrownBy(() -> Tokenizers.load(missing))
                .isInstanceOfSatisfying(InvalidConfigException.class, e -> {
                    assertThat(e.key()).isEqualTo("tokenizer_path");
                    assertThat(e.value()).isEqualTo(missing);
                })
                .hasMessage("invalid value for 'tokenizer_path': \"" + missing + "\" (allowed: " + ALLOWED
                        + "; this path: it does not exist)");
    }

    @Test
    void aDirectoryWithoutTokenizerJsonIsRejected() {
        assertThatThrownBy(() -> Tokenizers.load(tmp.toString()))
                .isInstanceOf(InvalidConfigException.class)
                .hasMessageEndingWith("; this path: the directory has no tokenizer.json)");
    }

    @Test
    void aFileThatIsNotJsonIsRejected() throws Exception {
        Path file = tmp.resolve("tokenizer.json");
        Files.writeString(file, "not json");
        assertThatThrownBy(() -> Tokenizers.load(file.toString()))
                .isInstanceOf(InvalidConfigException.class)
                .hasMessageContaining("; this path: tokenizer.json cannot be read as JSON: Unrecognized token 'not'")
                .hasCauseInstanceOf(java.io.IOException.class);
    }

    @Test
    void jsonWithoutAVocabularyIsRejected() throws Exception {
        Files.writeString(tmp.resolve("tokenizer.json"), "{}");
        assertThatThrownBy(() -> Tokenizers.load(tmp.toString()))
                .isInstanceOf(InvalidConfigException.class)
                .hasMessageEndingWith("; this path: tokenizer.json has an empty vocabulary)");
    }

    @Test
    void jsonTheTokenizersLibraryRefusesIsRejectedWithItsReason() throws Exception {
        Files.writeString(
                tmp.resolve("tokenizer.json"),
                "{\"added_tokens\": [{\"id\": 0, \"content\": \"</s>\", \"special\": true}],"
                        + " \"model\": {\"type\": \"NoSuchModel\", \"vocab\": {\"a\": 1}}}");
        assertThatThrownBy(() -> Tokenizers.load(tmp.toString()))
                .isInstanceOf(InvalidConfigException.class)
                .hasMessageContaining("; this path: tokenizer.json is not a valid Hugging Face tokenizer: ");
    }

    @Test
    void anInvalidTokenizerConfigIsRejectedNamingTheFile() {
        Path dir = bareTokenizerIn(tmp.resolve("tok"));
        write(dir.resolve("tokenizer_config.json"), "{\"eos_token\": ");
        assertThatThrownBy(() -> Tokenizers.load(dir.toString()))
                .isInstanceOf(InvalidConfigException.class)
                .hasMessageContaining("; this path: tokenizer_config.json cannot be read as JSON: ");
    }

    @Test
    void aFailedLoadIsNotCachedSoAFixedPathLoadsNextTime() throws Exception {
        Path dir = tmp.resolve("later");
        Files.createDirectories(dir);
        assertThatThrownBy(() -> Tokenizers.load(dir.toString())).isInstanceOf(InvalidConfigException.class);
        bareTokenizerIn(dir);
        assertThat(Tokenizers.load(dir.toString()).vocabSize()).isEqualTo(TokenizerFixtures.VOCAB_SIZE);
    }

    @Test
    void anInvalidPathStringIsRejected() {
        assertThatThrownBy(() -> Tokenizers.load("bad\0path"))
                .isInstanceOf(InvalidConfigException.class)
                .hasMessageContaining("; this path: not a valid path: ");
    }
}
