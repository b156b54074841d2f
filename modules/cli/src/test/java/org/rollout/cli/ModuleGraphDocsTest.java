package org.rollout.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.xml.parsers.DocumentBuilderFactory;
import org.junit.jupiter.api.Test;
import org.w3c.dom.Document;
import org.w3c.dom.Element;
import org.w3c.dom.Node;
import org.w3c.dom.NodeList;

/**
 * docs/architecture.md's table of modules and what each depends on is the build's: every module of
 * the parent pom, with the engine modules it depends on outside test scope, read from its pom. A
 * dependency added or removed without the table fails here.
 */
class ModuleGraphDocsTest {
    private static final Path ROOT = Path.of("../..");
    private static final Pattern ROW = Pattern.compile("^\\| `([\\w/-]+)` \\| (.*) \\|$");
    private static final Pattern NAME = Pattern.compile("`([\\w-]+)`");

    @Test
    void theModuleTableListsEveryModuleWithItsEngineDependencies() throws Exception {
        Map<String, Set<String>> built = fromPoms();
        Map<String, Set<String>> documented = fromDocs();
        assertThat(documented).as("docs/architecture.md's module table").isEqualTo(built);
    }

    /** Module directory → the engine modules (by directory name) it depends on outside test scope. */
    private static Map<String, Set<String>> fromPoms() throws Exception {
        Element root = parse(ROOT.resolve("pom.xml")).getDocumentElement();
        List<String> modules = texts(child(root, "modules"), "module");
        Map<String, String> dirByArtifact = new LinkedHashMap<>();
        Map<String, Element> poms = new LinkedHashMap<>();
        for (String m : modules) {
            Element pom = parse(ROOT.resolve(m).resolve("pom.xml")).getDocumentElement();
            poms.put(m, pom);
            dirByArtifact.put(text(pom, "artifactId"), m);
        }
        Map<String, Set<String>> graph = new TreeMap<>();
        for (var e : poms.entrySet()) {
            Set<String> deps = new TreeSet<>();
            Element dependencies = child(e.getValue(), "dependencies");
            if (dependencies != null) {
                NodeList list = dependencies.getElementsByTagName("dependency");
                for (int i = 0; i < list.getLength(); i++) {
                    Element d = (Element) list.item(i);
                    String scope = text(d, "scope");
                    String dir = dirByArtifact.get(text(d, "artifactId"));
                    if (dir != null && !"test".equals(scope)) {
                        deps.add(shortName(dir));
                    }
                }
            }
            graph.put(e.getKey(), deps);
        }
        return graph;
    }

    private static Map<String, Set<String>> fromDocs() throws IOException {
        String doc = Files.readString(ROOT.resolve("docs/architecture.md"));
        String part = doc.substring(doc.indexOf("| module | depends on"));
        Map<String, Set<String>> graph = new TreeMap<>();
        for (String line : part.lines().skip(2).toList()) {
            Matcher row = ROW.matcher(line);
            if (!row.matches()) {
                break;
            }
            Set<String> deps = new TreeSet<>();
            Matcher n = NAME.matcher(row.group(2));
            while (n.find()) {
                deps.add(n.group(1));
            }
            graph.put(row.group(1), deps);
        }
        return graph;
    }

    private static String shortName(String dir) {
        return dir.substring(dir.lastIndexOf('/') + 1);
    }

    private static Document parse(Path pom) throws Exception {
        return DocumentBuilderFactory.newInstance().newDocumentBuilder().parse(pom.toFile());
    }

    /** The direct child element {@code name} of {@code e}, or null. */
    private static Element child(Element e, String name) {
        for (Node n = e.getFirstChild(); n != null; n = n.getNextSibling()) {
            if (n instanceof Element c && c.getTagName().equals(name)) {
                return c;
            }
        }
        return null;
    }

    private static String text(Element e, String name) {
        Element c = child(e, name);
        return c == null ? null : c.getTextContent().trim();
    }

    private static List<String> texts(Element e, String name) {
        List<String> out = new ArrayList<>();
        for (Node n = e.getFirstChild(); n != null; n = n.getNextSibling()) {
            if (n instanceof Element c && c.getTagName().equals(name)) {
                out.add(c.getTextContent().trim());
            }
        }
        return out;
    }
}
