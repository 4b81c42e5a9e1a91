package io.sluice.broker.config;

import com.fasterxml.jackson.core.JsonParseException;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.ObjectCodec;
import com.fasterxml.jackson.core.io.IOContext;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import com.fasterxml.jackson.dataformat.yaml.YAMLParser;
import org.yaml.snakeyaml.LoaderOptions;
import org.yaml.snakeyaml.error.Mark;
import org.yaml.snakeyaml.events.CollectionStartEvent;
import org.yaml.snakeyaml.events.Event;
import org.yaml.snakeyaml.events.ScalarEvent;

import java.io.CharArrayReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.Reader;
import java.util.regex.Pattern;

/**
 * Jackson's YAML factory, whose parsers refuse a YAML tag ({@code !!binary}, {@code !custom}, {@code !!python/object})
 * on any node, a key included, with {@link TagFound}: Jackson reads some tags its own way ({@code !!binary} as bytes,
 * {@code !!int} as a number) and drops the rest without a word, so a tagged value would not be read as written. The
 * tag is refused where the parser meets its event, before Jackson reads the value it is on (a {@code !!binary} that is
 * no base64 would otherwise fail as something else), and before the first key of a mapping, whose tag Jackson's own
 * {@code getTypeId()} does not give. {@link ConfigTree} names the key the tag is on. Each parser is used by one thread.
 */
final class TagRefusingYamlFactory extends YAMLFactory {
    private static final long serialVersionUID = 1L;
    /** How snakeyaml resolves the {@code !!} of a tag: {@code !!binary} is {@code tag:yaml.org,2002:binary}. */
    private static final String YAML_TAG_PREFIX = "tag:yaml.org,2002:";
    /** A tag shown in a refusal: printable ASCII, as tags are written; one of anything else is not repeated. */
    private static final Pattern SHOWN_TAG = Pattern.compile("[!-~]{1,100}");

    @Override
    protected YAMLParser _createParser(InputStream in, IOContext ctxt) throws IOException {
        return _createParser(_createReader(in, null, ctxt), ctxt);
    }

    @Override
    protected YAMLParser _createParser(Reader r, IOContext ctxt) throws IOException {
        return new Parser(ctxt, _parserFeatures, _yamlParserFeatures, _loaderOptions, _objectCodec, r);
    }

    @Override
    protected YAMLParser _createParser(char[] data, int offset, int len, IOContext ctxt, boolean recyclable) throws IOException {
        return _createParser(new CharArrayReader(data, offset, len), ctxt);
    }

    @Override
    protected YAMLParser _createParser(byte[] data, int offset, int len, IOContext ctxt) throws IOException {
        return _createParser(_createReader(data, offset, len, null, ctxt), ctxt);
    }

    /** A YAML tag met by the parser: the tag as written, and its place (lines and columns from 1). */
    static final class TagFound extends JsonParseException {
        private static final long serialVersionUID = 1L;
        private final String tag;
        private final int line;
        private final int column;

        TagFound(JsonParser parser, String tag, Mark mark) {
            super(parser, "a YAML tag (" + tag + ") at line " + (mark.getLine() + 1) + ", column " + (mark.getColumn() + 1)
                    + "; the configuration takes no tags");
            this.tag = tag;
            this.line = mark.getLine() + 1;
            this.column = mark.getColumn() + 1;
        }

        /** The tag as the file writes it ({@code !!binary}, {@code !custom}, {@code !<tag:...>}), or "" if it is not shown. */
        String tag() {
            return tag;
        }

        /** Where the tag begins, as the configuration's refusals name places. */
        String place() {
            return "line " + line + ", column " + column;
        }
    }

    private static final class Parser extends YAMLParser {
        Parser(IOContext ctxt, int parserFeatures, int yamlFeatures, LoaderOptions options,
               ObjectCodec codec, Reader reader) {
            super(ctxt, parserFeatures, yamlFeatures, options, codec, reader);
        }

        /** Every event of the file passes here, before Jackson makes a token of it. */
        @Override
        protected Event getEvent() throws IOException {
            Event event = super.getEvent();
            String tag = event instanceof ScalarEvent scalar ? scalar.getTag()
                    : event instanceof CollectionStartEvent collection ? collection.getTag() : null;
            if (tag != null) {
                throw new TagFound(this, written(tag), event.getStartMark());
            }
            return event;
        }

        /** The tag as written from snakeyaml's resolved form: {@code !!} for YAML's own, {@code !<...>} for a verbatim one. */
        private static String written(String resolved) {
            String tag = resolved.startsWith(YAML_TAG_PREFIX) ? "!!" + resolved.substring(YAML_TAG_PREFIX.length())
                    : resolved.startsWith("!") ? resolved : "!<" + resolved + ">";
            return SHOWN_TAG.matcher(tag).matches() ? tag : "";
        }
    }
}
