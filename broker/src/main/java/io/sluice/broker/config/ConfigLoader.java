package io.sluice.broker.config;

import com.fasterxml.jackson.annotation.JsonProperty;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.StreamReadFeature;
import com.fasterxml.jackson.core.exc.InputCoercionException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.JsonMappingException;
import com.fasterxml.jackson.databind.exc.InvalidFormatException;
import com.fasterxml.jackson.databind.exc.MismatchedInputException;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.exc.UnrecognizedPropertyException;
import com.fasterxml.jackson.databind.node.MissingNode;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import com.fasterxml.jackson.dataformat.yaml.snakeyaml.error.Mark;
import com.fasterxml.jackson.dataformat.yaml.snakeyaml.error.MarkedYAMLException;
import io.sluice.broker.UnreadableFile;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Collection;
import java.util.Map;
import java.util.stream.Collectors;

/**
 * Reads the configuration in three layers: the defaults embedded in the jar ({@code sluice.yaml},
 * the same file as {@code config/sluice.yaml}), then an optional file (YAML or JSON), then
 * {@code key=value} overrides from the command line. Unknown keys, badly typed values, emptied sections and
 * keys given twice are rejected with the key's path (see {@link ConfigTree}).
 */
public final class ConfigLoader {
    public static final String EMBEDDED_DEFAULTS = "/sluice.yaml";

    private final ObjectMapper mapper = new ObjectMapper(configurationYaml())
            // Each layer updates the nested sections in place instead of replacing them.
            .setDefaultMergeable(true)
            .enable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES)
            .enable(DeserializationFeature.FAIL_ON_NULL_FOR_PRIMITIVES)
            .enable(DeserializationFeature.FAIL_ON_NUMBERS_FOR_ENUMS)
            // On by default: 2.7 for a whole-number key would become 2 without a word.
            .disable(DeserializationFeature.ACCEPT_FLOAT_AS_INT);

    /**
     * Refusing YAML tags ({@link TagRefusingYamlFactory}), and without the source in the parser's locations: a file named
     * by mistake (--config /etc/shadow) must not have its lines repeated in an error message (Jackson's default since
     * 2.16, said here so that no upgrade brings it back).
     * Not made with YAMLFactory.builder(), which leaves out the parser's default features: an empty value would then be
     * "" instead of null, and an emptied section no longer refused as such.
     */
    private static YAMLFactory configurationYaml() {
        YAMLFactory yaml = new TagRefusingYamlFactory();
        yaml.configure(StreamReadFeature.INCLUDE_SOURCE_IN_LOCATION.mappedFeature(), false);
        return yaml;
    }

    /** Loads and validates. {@code file} may be null; {@code overrides} maps dotted keys to values. */
    public BrokerConfig load(Path file, Map<String, String> overrides) {
        BrokerConfig config = new BrokerConfig();
        try (InputStream defaults = ConfigLoader.class.getResourceAsStream(EMBEDDED_DEFAULTS)) {
            if (defaults == null) {
                throw new ConfigException("the embedded defaults " + EMBEDDED_DEFAULTS + " are missing from the classpath", null);
            }
            apply(config, "the embedded defaults", mapper.createParser(defaults));
        } catch (IOException e) {
            throw new ConfigException("the embedded defaults could not be read: " + e.getMessage(), e);
        }
        if (file != null) {
            if (Files.isDirectory(file)) {
                throw new ConfigException("configuration file " + file + " is a directory; --config takes a YAML or JSON file", null);
            }
            if (!Files.exists(file)) {
                throw new ConfigException("configuration file " + file + " does not exist", null);
            }
            if (!Files.isRegularFile(file)) {
                throw new ConfigException("configuration file " + file + " is not a regular file (a device or a pipe?)", null);
            }
            InputStream in;
            try {
                in = Files.newInputStream(file);
            } catch (IOException e) {
                throw new ConfigException(cannotRead(file, e), e);
            }
            try (in) {
                apply(config, file.toString(), mapper.createParser(in));
            } catch (IOException e) {
                throw new ConfigException(describe(file.toString(), e, null), e);
            }
        }
        if (overrides != null && !overrides.isEmpty()) {
            for (Map.Entry<String, String> e : overrides.entrySet()) {
                String source = "override " + e.getKey() + "=" + e.getValue();
                try {
                    apply(config, source, mapper.createParser(nest(e.getKey(), e.getValue())));
                } catch (IOException ex) {
                    throw new ConfigException(describe(source, ex, null), ex);
                }
            }
        }
        return config.validate();
    }

    /**
     * One layer onto {@code config}: read as a tree and checked by {@link ConfigTree} first, because a merging bind
     * takes a key twice, an octal-looking number, an emptied section and a scalar in a section's place without a word.
     */
    private void apply(BrokerConfig config, String source, JsonParser parser) throws IOException {
        try (parser) {
            JsonNode tree = ConfigTree.read(parser, source);
            ConfigTree.checkShape(tree, mapper.getDeserializationConfig(), source);
            try {
                mapper.readerForUpdating(config).readValue(tree);
            } catch (JsonMappingException e) {
                throw new ConfigException(describe(source, e, tree), e);
            }
        }
    }

    /** Why the file could not be opened, in words rather than the file system's exception. */
    static String cannotRead(Path file, IOException e) {
        return "configuration file " + file + " cannot be read: " + UnreadableFile.reason(file, e);
    }

    private static String nest(String dottedKey, String value) {
        String[] parts = dottedKey.split("\\.");
        StringBuilder yaml = new StringBuilder();
        for (int i = 0; i < parts.length; i++) {
            yaml.append("  ".repeat(i)).append(parts[i]).append(':');
            yaml.append(i == parts.length - 1 ? " " + quote(value) : "\n");
        }
        return yaml.toString();
    }

    private static String quote(String value) {
        if (value.matches("-?[0-9.]+|true|false")) {
            return value;
        }
        return "\"" + value.replace("\\", "\\\\").replace("\"", "\\\"") + "\"";
    }

    /**
     * The failure in the operator's terms: the YAML key, the value and what it must be; Jackson's wording only after the
     * key, for a failure none of these cases foresaw.
     */
    private static String describe(String source, IOException e, JsonNode tree) {
        if (e instanceof UnrecognizedPropertyException u) {
            String known = u.getKnownPropertyIds() == null ? "" : u.getKnownPropertyIds().stream().map(String::valueOf)
                    .sorted().collect(Collectors.joining(", "));
            return source + ": unknown key '" + path(u) + "'; known keys at that level: " + known;
        }
        if (e instanceof InvalidFormatException f) {
            return source + ": " + path(f) + " '" + f.getValue() + "' is not " + expected(f.getTargetType());
        }
        if (e instanceof MismatchedInputException m && m.getTargetType() != null) {
            return source + ": " + path(m) + " is not " + expected(m.getTargetType());
        }
        if (e instanceof JsonMappingException m && m.getCause() instanceof InputCoercionException range) {
            return source + ": " + path(m) + " " + valueAt(tree, m) + " is beyond the range of " + range(range.getTargetType());
        }
        if (e instanceof JsonMappingException m) {
            return source + ": bad value for '" + path(m) + "': " + m.getOriginalMessage();
        }
        if (e instanceof MarkedYAMLException y && y.getProblemMark() != null && y.getProblem() != null) {
            // The parser's problem and the construct it was in, each at its own place; not its message, which repeats the
            // line of the file (which may be one named by mistake: /etc/shadow) under a caret.
            String context = y.getContext() == null ? "" : " (" + oneLine(y.getContext())
                    + (y.getContextMark() == null ? "" : " that begins at " + place(y.getContextMark())) + ")";
            return source + ": not valid YAML at " + place(y.getProblemMark()) + ": " + oneLine(y.getProblem()) + context;
        }
        if (e instanceof JsonProcessingException p && p.getLocation() != null) {
            return source + ": not valid YAML at line " + p.getLocation().getLineNr() + ", column " + p.getLocation().getColumnNr()
                    + ": " + oneLine(p.getOriginalMessage());
        }
        return source + ": " + e.getMessage();
    }

    /** A mark of the YAML parser (lines and columns from 0) as the refusals name places (from 1). */
    private static String place(Mark mark) {
        return "line " + (mark.getLine() + 1) + ", column " + (mark.getColumn() + 1);
    }

    /** The first line of a parser's wording, its control characters (a character of the file it names) escaped. */
    private static String oneLine(String text) {
        String first = String.valueOf(text).lines().findFirst().orElse("");
        StringBuilder out = new StringBuilder(first.length());
        first.chars().forEach(c -> out.append(Character.isISOControl(c) ? String.format("\\u%04X", c) : String.valueOf((char) c)));
        return out.toString();
    }

    private static boolean isWholeNumber(Class<?> type) {
        return type == int.class || type == long.class || type == Integer.class || type == Long.class;
    }

    /** The range a whole number of {@code type} can hold, for a value past it. */
    private static String range(Class<?> type) {
        if (type == int.class || type == Integer.class) {
            return "this key's whole number (" + Integer.MIN_VALUE + ".." + Integer.MAX_VALUE + ")";
        }
        if (type == long.class || type == Long.class) {
            return "this key's whole number (" + Long.MIN_VALUE + ".." + Long.MAX_VALUE + ")";
        }
        return "this key's type";
    }

    /** The value the failed key has in the layer's tree, as written. */
    private static String valueAt(JsonNode tree, JsonMappingException e) {
        JsonNode node = tree == null ? MissingNode.getInstance() : tree;
        for (JsonMappingException.Reference r : e.getPath()) {
            node = r.getFieldName() != null ? node.path(r.getFieldName()) : node.path(r.getIndex());
        }
        return node.isMissingNode() ? "?" : node.asText();
    }

    /** What a key of {@code type} takes, in the operator's words. */
    static String expected(Class<?> type) {
        if (isWholeNumber(type)) {
            return "a whole number";
        }
        if (type == double.class || type == Double.class) {
            return "a number";
        }
        if (type == boolean.class || type == Boolean.class) {
            return "true or false";
        }
        if (type == String.class) {
            return "a string";
        }
        if (Collection.class.isAssignableFrom(type)) {
            return "a list";
        }
        if (type.isEnum()) {
            return "one of " + java.util.Arrays.stream(type.getFields()).filter(java.lang.reflect.Field::isEnumConstant)
                    .map(f -> {
                        JsonProperty name = f.getAnnotation(JsonProperty.class);
                        return name != null ? name.value() : f.getName();
                    })
                    .collect(Collectors.joining(", "));
        }
        return "a section of keys";
    }

    private static String path(JsonMappingException e) {
        return e.getPath().stream()
                .map(r -> r.getFieldName() != null ? "." + r.getFieldName() : "[" + r.getIndex() + "]")
                .collect(Collectors.joining()).replaceFirst("^\\.", "");
    }
}
