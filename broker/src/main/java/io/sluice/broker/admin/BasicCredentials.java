package io.sluice.broker.admin;

import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.regex.Pattern;

/**
 * The credentials of an {@code Authorization} header as RFC 7617 writes them: {@code Basic base64(user ":" password)},
 * UTF-8 text without control characters. A header of another scheme is credentials the admin API does not take (401
 * {@code unauthorized}); anything else that is not this form is malformed (400 {@code bad_authorization}). Neither
 * sentence repeats what the header holds beyond its scheme, which may be a secret.
 *
 * <p>Threads: made and read on the HTTP thread serving the request; immutable.
 */
record BasicCredentials(String user, String password) {
    /** An auth-scheme as RFC 7235 writes it (a token), short enough to be named in a sentence. */
    private static final Pattern SCHEME = Pattern.compile("[A-Za-z0-9!#$%&'*+.^_`|~-]{1,40}");

    /**
     * The credentials {@code header} carries.
     *
     * @throws ApiException 401 for another scheme than Basic, 400 for a header that is not of the form
     */
    static BasicCredentials parse(String header) {
        String value = header.strip();
        int space = value.indexOf(' ');
        String scheme = space < 0 ? value : value.substring(0, space);
        if (scheme.isEmpty()) {
            throw AdminRequestGate.malformed("the Authorization header is empty");
        }
        if (!SCHEME.matcher(scheme).matches()) {
            throw AdminRequestGate.malformed("the Authorization header does not start with an authentication scheme");
        }
        if (!scheme.equalsIgnoreCase("Basic")) {
            throw new ApiException(401, "unauthorized", "the admin API takes HTTP Basic credentials only; the Authorization"
                    + " header's scheme is " + scheme + ", not Basic");
        }
        String encoded = space < 0 ? "" : value.substring(space + 1).strip();
        if (encoded.isEmpty()) {
            throw AdminRequestGate.malformed("the Authorization header says Basic but carries no credentials");
        }
        byte[] bytes;
        try {
            bytes = Base64.getDecoder().decode(encoded);
        } catch (IllegalArgumentException e) {
            throw AdminRequestGate.malformed("the Basic credentials are not base64");
        }
        String decoded;
        try {
            decoded = StandardCharsets.UTF_8.newDecoder().onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT).decode(ByteBuffer.wrap(bytes)).toString();
        } catch (CharacterCodingException e) {
            throw AdminRequestGate.malformed("the Basic credentials are not UTF-8 text");
        }
        int colon = decoded.indexOf(':');
        if (colon < 0) {
            throw AdminRequestGate.malformed("the Basic credentials have no ':' between the user name and the password");
        }
        if (decoded.chars().anyMatch(Character::isISOControl)) {
            throw AdminRequestGate.malformed("the Basic credentials hold a control character, which neither a user name nor a"
                    + " password may");
        }
        return new BasicCredentials(decoded.substring(0, colon), decoded.substring(colon + 1));
    }

    @Override
    public String toString() {
        return "BasicCredentials[user=" + user + "]"; // never the password
    }
}
