package io.sluice.broker.admin;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonLocation;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.StreamReadFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;

import java.io.IOException;

/**
 * The admin API's JSON: reads request bodies ({@link QueueEndpoints}, {@link ClusterAdmin}), refusing what is
 * not JSON with 400 {@code bad_json}, and writes answers ({@link AdminAnswers}), indented.
 *
 * <p>Threads: the HTTP threads, any number at once; the mapper is configured once here and then only used,
 * which Jackson allows from any thread.
 */
final class AdminJson {
    /** Refuses a body naming a key twice (which the last would otherwise win). */
    private final ObjectMapper json = new ObjectMapper(JsonFactory.builder().enable(StreamReadFeature.STRICT_DUPLICATE_DETECTION).build())
            .enable(SerializationFeature.INDENT_OUTPUT);

    /**
     * The body's JSON, null for an empty body; 400 {@code bad_json} if it is not JSON, or if anything but whitespace
     * follows its first value (readTree alone stops there, so a body of two objects declared a queue with the first).
     */
    JsonNode read(byte[] body) {
        if (body.length == 0) {
            return null;
        }
        try (JsonParser parser = json.createParser(body)) {
            JsonNode value = json.readTree(parser);
            if (parser.nextToken() != null) {
                JsonLocation at = parser.currentTokenLocation();
                throw new ApiException(400, "bad_json", "the body holds more than one JSON value: another starts at line "
                        + at.getLineNr() + ", column " + at.getColumnNr() + "; send one JSON object");
            }
            return value;
        } catch (JsonProcessingException e) {
            throw new ApiException(400, "bad_json", notValidJson(e));
        } catch (IOException e) {
            throw new ApiException(400, "bad_json", "the body could not be read: " + e.getMessage());
        }
    }

    String write(Object value) throws JsonProcessingException {
        return json.writeValueAsString(value);
    }

    /** Why a body is refused, in a sentence; jackson-core words a key given twice "Duplicate field 'name'". */
    private static String notValidJson(JsonProcessingException e) {
        String said = String.valueOf(e.getOriginalMessage());
        return said.startsWith("Duplicate field ") ? "the body gives the key " + said.substring("Duplicate field ".length())
                + " twice; give each key once" : "the body is not valid JSON: " + said;
    }
}
