package io.sluice.broker.config;

import com.fasterxml.jackson.core.JsonLocation;
import com.fasterxml.jackson.core.JsonParseException;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.databind.DeserializationConfig;
import com.fasterxml.jackson.databind.JavaType;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.introspect.BeanPropertyDefinition;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.MissingNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.fasterxml.jackson.databind.node.TextNode;
import com.fasterxml.jackson.dataformat.yaml.YAMLParser;

import java.io.IOException;
import java.math.BigInteger;
import java.util.regex.Pattern;

/**
 * One layer of the configuration (the embedded defaults, the file, one override) read as a tree and checked before
 * Jackson binds it to {@link BrokerConfig}, for what the binding would take without a word: a key given twice (the
 * last would win), an integer with a leading zero (YAML 1.1 reads {@code 07672} as octal 4026), a section or a list
 * left empty (YAML null: the field would become null and the broker end in a NullPointerException), and a scalar or
 * list where a section belongs (a merging bind leaves the section as it was), a number in any form but plain decimal
 * digits (YAML 1.1 reads 0x1f as 31, 7_672 and +7672 as 7672, 1e-1 as 0.1), a boolean in any form but true or false
 * (YAML 1.1 reads yes, no, on and off as booleans, YAML 1.2 as words; Jackson takes 1 and 0 for one), and a second
 * document (which the bind never reads), and a YAML alias or merge key ({@code *name}, {@code <<}): Jackson's parser
 * gives an alias as its anchor's name, a string, and the parser of Jackson's that resolves them made an alias of an
 * anchor holding an alias an empty list, so they are refused rather than read as something else, and a YAML tag
 * ({@code !!binary}, {@code !custom}; see {@link TagRefusingYamlFactory}), which Jackson reads its own way or drops. Each is a
 * {@link ConfigException} naming the key or the place. A number or a YAML 1.1 boolean in another form is kept as
 * written, and refused only where a number or a boolean belongs: a string key takes {@code no} as "no", where the bind
 * made it "false".
 *
 * <p>A file given by mistake ({@code --config /etc/shadow}) is refused without repeating what it holds: a key that is
 * no key name, or a file that is a single value, is named by its place alone.
 */
final class ConfigTree {
    /** An integer the YAML parser would read as octal, or whose zeros an operator may not have meant. */
    private static final Pattern LEADING_ZERO = Pattern.compile("[-+]?0[0-9_]+");
    /** How a number is written in the configuration: digits, a '-' before them if negative, a '.' and digits in a fraction. */
    private static final Pattern PLAIN_DECIMAL = Pattern.compile("-?[0-9]+(\\.[0-9]+)?");
    /** The booleans of YAML 1.2's core schema, which YAML 1.1 reads as booleans too: the only ones a boolean key takes. */
    private static final Pattern TRUE_OR_FALSE = Pattern.compile("true|True|TRUE|false|False|FALSE");
    /** What the configuration's keys are made of; a key of anything else is not shown (it may be a line of any file). */
    private static final Pattern KEY_NAME = Pattern.compile("[A-Za-z0-9_.-]{1,100}");

    private final String source;

    private ConfigTree(String source) {
        this.source = source;
    }

    /** The layer {@code parser} reads; {@link MissingNode} if it holds nothing (every line a comment). */
    static JsonNode read(JsonParser parser, String source) throws IOException {
        ConfigTree layer = new ConfigTree(source);
        if (layer.next(parser, "the document") == null) {
            return MissingNode.getInstance();
        }
        JsonNode tree = layer.value(parser, "");
        if (layer.next(parser, "a second document") != null) {
            throw layer.refused("holds a second YAML document at " + place(parser) + "; the configuration is one document");
        }
        return tree;
    }

    /**
     * Refuses a tree that is not a mapping of sections, a null anywhere but on a string key, and anything but a
     * section where the type has one; unknown keys and badly typed scalars are left to the bind, which names them.
     */
    static void checkShape(JsonNode root, DeserializationConfig config, String source) {
        if (root.isMissingNode()) {
            throw new ConfigException(source + ": holds no settings (is every line a comment?); the configuration must be a"
                    + " mapping of sections", null);
        }
        if (!root.isObject()) {
            throw new ConfigException(source + ": the configuration must be a mapping of sections, got " + kind(root), null);
        }
        new ConfigTree(source).check(root, config.constructType(BrokerConfig.class), "", config);
    }

    private JsonNode value(JsonParser p, String path) throws IOException {
        JsonToken token = p.currentToken();
        if (p instanceof YAMLParser yaml && yaml.isCurrentAlias()) {
            throw refused(place(p) + " holds a YAML alias (*name), which the configuration does not resolve: write the value out"
                    + " where it is used");
        }
        if (token == JsonToken.START_OBJECT) {
            ObjectNode section = JsonNodeFactory.instance.objectNode();
            while (next(p, path.isEmpty() ? "a top-level key" : "a key of '" + path + "'") == JsonToken.FIELD_NAME) {
                String key = p.currentName();
                if (key.equals("<<")) {
                    throw refused(place(p) + " holds a YAML merge key (<<), which the configuration does not take: write the"
                            + " keys out in the section");
                }
                if (!KEY_NAME.matcher(key).matches()) {
                    throw refused(place(p) + " holds a key that is no configuration key (keys are letters, digits, '-', '_'"
                            + " and '.'); is this a Sluice configuration file?");
                }
                String keyPath = path.isEmpty() ? key : path + "." + key;
                if (section.has(key)) {
                    throw refused("key '" + keyPath + "' appears twice (again at line " + p.currentLocation().getLineNr()
                            + "); give it once");
                }
                next(p, "'" + keyPath + "'");
                section.set(key, value(p, keyPath));
            }
            return section;
        }
        if (token == JsonToken.START_ARRAY) {
            ArrayNode list = JsonNodeFactory.instance.arrayNode();
            while (next(p, "'" + path + "[" + list.size() + "]'") != JsonToken.END_ARRAY) {
                list.add(value(p, path + "[" + list.size() + "]"));
            }
            return list;
        }
        if ((token == JsonToken.VALUE_TRUE || token == JsonToken.VALUE_FALSE) && !TRUE_OR_FALSE.matcher(p.getText()).matches()) {
            return new Written(p.getText(), String.valueOf(token == JsonToken.VALUE_TRUE), false);
        }
        boolean octal = token == JsonToken.VALUE_NUMBER_INT && LEADING_ZERO.matcher(p.getText()).matches();
        if (token.isNumeric() && (octal || !PLAIN_DECIMAL.matcher(p.getText()).matches())) {
            return new Written(p.getText(), yamlReads(p), true);
        }
        return p.readValueAsTree();
    }

    /** The parser's next token; a YAML tag on it, or on what it begins, is refused as on {@code what}. */
    private JsonToken next(JsonParser p, String what) throws IOException {
        try {
            return p.nextToken();
        } catch (TagRefusingYamlFactory.TagFound tag) {
            throw refused(tag.place() + " holds a YAML tag" + (tag.tag().isEmpty() ? "" : " (" + tag.tag() + ")") + " on " + what
                    + ", which the configuration does not take: write it without the tag");
        }
    }

    private void check(JsonNode node, JavaType type, String path, DeserializationConfig config) {
        if (type.isCollectionLikeType()) {
            if (node.isNull()) {
                throw refused("'" + path + "' is empty: is every entry under it commented out? Write [] for no entries,"
                        + " or leave the key out for its default");
            }
            // Not a list at all: the bind refuses it ("is not a list").
            for (int i = 0; node.isArray() && i < node.size(); i++) {
                if (node.get(i).isNull()) {
                    throw refused("'" + path + "[" + i + "]' is empty: a '-' with nothing after it");
                }
                check(node.get(i), type.getContentType(), path + "[" + i + "]", config);
            }
        } else if (isSection(type)) {
            if (node.isNull()) {
                throw refused("'" + path + "' is empty: is every key under it commented out? Leave the section out for its defaults");
            }
            if (!node.isObject()) {
                throw refused("'" + path + "' must be a section of keys, got " + shown(node));
            }
            for (BeanPropertyDefinition property : config.introspect(type).findProperties()) {
                JsonNode child = node.get(property.getName());
                if (child != null) {
                    check(child, property.getPrimaryType(), path.isEmpty() ? property.getName() : path + "." + property.getName(), config);
                }
            }
        } else if (isBoolean(type.getRawClass()) && node.isValueNode() && !node.isNull() && !node.isBoolean()
                && !(node.isTextual() && TRUE_OR_FALSE.matcher(node.textValue()).matches())) {
            // Refused here, not by the bind: it takes 1 and 0 and names no way out.
            throw refused(path + " '" + node.asText() + "' is not true or false" + (node instanceof Written word
                    ? " (YAML 1.1 reads it as " + word.yamlReads + ", YAML 1.2 as the word)" : "") + "; write true or false");
        } else if (node instanceof Written written && written.number && type.getRawClass() != String.class) {
            throw refused(written.refusal(path, type.getRawClass()));
        } else if (node.isTextual() && isNumber(type.getRawClass()) && node.textValue().chars().anyMatch(Character::isDigit)
                && !PLAIN_DECIMAL.matcher(node.textValue()).matches()) {
            // A string the bind would turn into a number ("+7672", quoted or from a command-line override); one without a
            // digit ("many") is left to the bind, which refuses it as no number.
            throw refused(path + " '" + node.textValue() + "' is not " + ConfigLoader.expected(type.getRawClass())
                    + " in plain decimal digits");
        } else if (node.isNull() && type.getRawClass() != String.class) {
            // A string key may be empty (unset: the checks of BrokerConfig.validate() say so if it must not be); a number,
            // a boolean or a choice has no empty value, and a primitive would be refused in Jackson's words.
            throw refused("'" + path + "' is empty; it needs " + ConfigLoader.expected(type.getRawClass()));
        }
    }

    /** The sections are BrokerConfig and the classes declared in it; its enums (ScrapeAccess) are top-level. */
    private static boolean isSection(JavaType type) {
        Class<?> raw = type.getRawClass();
        return raw == BrokerConfig.class || (raw.getDeclaringClass() == BrokerConfig.class && !raw.isEnum());
    }

    private static boolean isBoolean(Class<?> type) {
        return type == boolean.class || type == Boolean.class;
    }

    /** What YAML makes of a number not written in plain decimal digits, in words for the refusal. */
    private static String yamlReads(JsonParser p) throws IOException {
        try {
            return String.valueOf(p.getNumberValue());
        } catch (JsonParseException e) {
            // .inf, -.inf and .nan: YAML's infinities and not-a-number, which Jackson does not parse
            String written = p.getText().toLowerCase(java.util.Locale.ROOT);
            return written.contains("nan") ? "not-a-number" : written.startsWith("-") ? "minus infinity" : "infinity";
        }
    }

    private static boolean isNumber(Class<?> type) {
        return type.isPrimitive() ? type != boolean.class : Number.class.isAssignableFrom(type);
    }

    /**
     * A number written otherwise than in plain decimal digits, or a word YAML 1.1 reads as a boolean (yes, no, on, off in
     * any case), kept as written: a string key (broker.name 0700, 0x1f or no) takes it verbatim, where YAML would have made
     * it "448", "31" or "false"; a number key refuses a number so written ({@link #refusal}), a boolean key such a word.
     */
    private static final class Written extends TextNode {
        private static final long serialVersionUID = 1L;
        /** What YAML 1.1 reads: the number, or true or false. */
        private final String yamlReads;
        private final boolean number;

        Written(String written, String yamlReads, boolean number) {
            super(written);
            this.yamlReads = yamlReads;
            this.number = number;
        }

        String refusal(String path, Class<?> type) {
            String written = textValue();
            if (LEADING_ZERO.matcher(written).matches()) {
                String decimal = new BigInteger(written.replace("_", "")).toString();
                return path + " '" + written + "' has a leading zero, which YAML reads as an octal number; write " + decimal;
            }
            return path + " '" + written + "' is not " + ConfigLoader.expected(type) + " in plain decimal digits; YAML reads it as "
                    + yamlReads;
        }
    }

    private static String shown(JsonNode node) {
        return node.isArray() ? "a list" : node.toString();
    }

    /** What a layer that is no mapping holds, without its content: it may be any file named by mistake. */
    private static String kind(JsonNode node) {
        if (node.isArray()) {
            return "a list";
        }
        if (node.isNumber()) {
            return "a single number";
        }
        return node.isBoolean() ? "a single true or false" : "a single string";
    }

    private static String place(JsonParser p) {
        JsonLocation at = p.currentTokenLocation();
        return "line " + at.getLineNr() + ", column " + at.getColumnNr();
    }

    private ConfigException refused(String problem) {
        return new ConfigException(source + ": " + problem, null);
    }
}
