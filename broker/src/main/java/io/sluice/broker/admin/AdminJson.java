package io.sluice.broker.admin;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonLocation;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.StreamReadFeature;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.exc.MismatchedInputException;

import java.io.IOException;
import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;

/**
 * The admin API's JSON: reads request bodies ({@link QueueEndpoints}, {@link ClusterAdmin}), refusing what is
 * not JSON with 400 {@code bad_json}, and writes answers ({@link AdminAnswers}), indented.
 *
 * <p>Threads: the HTTP threads, any number at once; the mapper is configured once here and then only used,
 * which Jackson allows from any thread.
 */
final class AdminJson {
    /**
     * Refuses a body naming a key twice (which the last would otherwise win), and one with anything but whitespace after
     * its first value (readTree alone stops there, so a body of two objects declared a queue with the first).
     */
    private final ObjectMapper json = new ObjectMapper(JsonFactory.builder().enable(StreamReadFeature.STRICT_DUPLICATE_DETECTION).build())
            .enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS)
            .enable(SerializationFeature.INDENT_OUTPUT);

    /** The body's JSON, null for an empty body; 400 {@code bad_json} if it is not one JSON value. */
    JsonNode read(byte[] body) {
        if (body.length == 0) {
            return null;
        }
        try {
            return json.readTree(body);
        } catch (JsonProcessingException e) {
            throw new ApiException(400, "bad_json", notValidJson(e, body));
        } catch (IOException e) {
            throw new ApiException(400, "bad_json", "the body could not be read: " + e.getMessage());
        }
    }

    String write(Object value) throws JsonProcessingException {
        return json.writeValueAsString(value);
    }

    /**
     * Why a number written with a leading zero ({@code written}, as {@code 05} or {@code -007}) is refused, naming
     * {@code key} (null: a number that is no key's value): in the words of the configuration file's refusal
     * (ConfigTree), since a leading zero is refused there too. The CLI's {@code declare} refuses it in these words
     * before sending it, as the API refuses it in a body.
     */
    static String leadingZero(String key, String written) {
        String plain;
        try {
            plain = new BigDecimal(written).toPlainString();
        } catch (NumberFormatException e) {
            plain = "the number without it";
        }
        return (key == null ? "the number" : key) + " '" + written + "' has a leading zero, which JSON does not allow and YAML"
                + " reads as an octal number (the configuration file refuses it too); write " + plain;
    }

    /**
     * Why a body is refused, in a sentence; jackson-core words a key given twice "Duplicate field 'name'", a number with
     * a leading zero "Invalid numeric value: Leading zeroes not allowed", and jackson-databind a second value
     * "Trailing token (of type ...)".
     */
    private static String notValidJson(JsonProcessingException e, byte[] body) {
        String said = String.valueOf(e.getOriginalMessage());
        if (said.startsWith("Invalid numeric value: Leading zeroes not allowed") && e.getProcessor() instanceof JsonParser p) {
            String written = numberAround(body, e.getLocation().getByteOffset());
            if (written != null) {
                return leadingZero(p.getParsingContext().getCurrentName(), written);
            }
        }
        if (said.startsWith("Duplicate field ")) {
            return "the body gives the key " + said.substring("Duplicate field ".length()) + " twice; give each key once";
        }
        if (e instanceof MismatchedInputException && said.startsWith("Trailing token ")) {
            JsonLocation at = e.getLocation();
            return "the body holds more than one JSON value: another starts at line " + at.getLineNr() + ", column "
                    + at.getColumnNr() + "; send one JSON object";
        }
        return "the body is not valid JSON: " + said;
    }

    /**
     * The number written around {@code offset}, where jackson-core stops at a leading zero (the byte after that zero); null
     * if no number is there, so that the refusal falls back to jackson-core's words.
     */
    private static String numberAround(byte[] body, long offset) {
        int zero = (int) offset - 1;
        if (offset < 1 || offset > body.length || body[zero] != '0') {
            return null;
        }
        int start = zero > 0 && body[zero - 1] == '-' ? zero - 1 : zero;
        int end = zero + 1;
        while (end < body.length && "0123456789.eE+-".indexOf(body[end]) >= 0) {
            end++;
        }
        return new String(body, start, end - start, StandardCharsets.US_ASCII);
    }
}
