package org.rollout.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.typesafe.config.ConfigFactory;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.jar.JarOutputStream;
import java.util.zip.ZipEntry;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.rollout.api.InvalidConfigException;

class UserClassPathTest {
    @TempDir
    Path dir;

    @Test
    void theFlagComesFirstThenTheKeyAsAListOrAColonSeparatedString() throws Exception {
        Path a = jar("a.jar");
        Path b = jar("b.jar");
        Path classes = Files.createDirectories(dir.resolve("classes"));
        UserClassPath list = UserClassPath.of(
                a.toString(), ConfigFactory.parseString("rollout.classpath = [\"" + b + "\", \"" + classes + "\"]"));
        assertThat(list.entries()).containsExactly(a, b, classes);
        UserClassPath string =
                UserClassPath.of(null, ConfigFactory.parseString("rollout.classpath = \"" + b + ":" + a + "\""));
        assertThat(string.entries()).containsExactly(b, a);
        assertThat(UserClassPath.of(null, ConfigFactory.parseString("rollout.classpath = []"))
                        .isEmpty())
                .isTrue();
    }

    @Test
    void aStarIsEveryJarOfItsDirectoryAsJavaCpReadsIt() throws Exception {
        Path libs = Files.createDirectories(dir.resolve("libs"));
        Path x = jar("libs/x.jar");
        Path y = jar("libs/Y.JAR");
        Files.writeString(libs.resolve("notes.txt"), "not a jar");
        Files.createDirectories(libs.resolve("nested"));
        assertThat(UserClassPath.of(libs + "/*", null).entries()).containsExactlyInAnyOrder(x, y);
    }

    @Test
    void aRelativeEntryResolvesAgainstTheWorkingDirectory() {
        Path cwd = Path.of("").toAbsolutePath();
        assertThat(UserClassPath.of("pom.xml", null).entries()).containsExactly(cwd.resolve("pom.xml"));
    }

    @Test
    void aMissingEntryIsRefusedNamingTheKeyAndThePath() {
        assertThatThrownBy(() -> UserClassPath.of(dir.resolve("nope.jar").toString(), null))
                .isInstanceOf(InvalidConfigException.class)
                .hasMessageContaining("'--classpath'")
                .hasMessageContaining("nope.jar")
                .hasMessageContaining("does not exist");
        assertThatThrownBy(() -> UserClassPath.of(
                        null, ConfigFactory.parseString("rollout.classpath = [\"" + dir.resolve("gone") + "/*\"]")))
                .isInstanceOf(InvalidConfigException.class)
                .hasMessageContaining("'rollout.classpath'")
                .hasMessageContaining("no directory");
        assertThatThrownBy(() -> UserClassPath.of(dir + "/*.jar", null))
                .isInstanceOf(InvalidConfigException.class)
                .hasMessageContaining("'*' is only allowed as a whole last element");
        assertThatThrownBy(() -> UserClassPath.of(null, ConfigFactory.parseString("rollout.classpath = 3")))
                .isInstanceOf(InvalidConfigException.class)
                .hasMessageContaining("'rollout.classpath'");
    }

    @Test
    void theLoaderFindsTheUsersClassesAndTheEnginesAbove() throws Exception {
        Path jar = dir.resolve("res.jar");
        try (JarOutputStream out = new JarOutputStream(Files.newOutputStream(jar))) {
            out.putNextEntry(new ZipEntry("com/example/hello.txt"));
            out.write("hello".getBytes(java.nio.charset.StandardCharsets.UTF_8));
            out.closeEntry();
        }
        ClassLoader loader =
                UserClassPath.of(jar.toString(), null).loader(getClass().getClassLoader());
        assertThat(loader.getResource("com/example/hello.txt")).isNotNull();
        assertThat(loader.loadClass(UserClassPath.class.getName())).isSameAs(UserClassPath.class);
        assertThat(UserClassPath.EMPTY.loader(getClass().getClassLoader()))
                .isSameAs(getClass().getClassLoader());
        assertThat(List.of(loader.getParent())).containsExactly(getClass().getClassLoader());
    }

    private Path jar(String name) throws Exception {
        Path p = dir.resolve(name);
        Files.createDirectories(p.getParent());
        try (OutputStream out = new JarOutputStream(Files.newOutputStream(p))) {
            // an empty jar
        }
        return p;
    }
}
