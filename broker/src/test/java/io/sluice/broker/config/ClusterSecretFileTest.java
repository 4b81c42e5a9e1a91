package io.sluice.broker.config;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.charset.StandardCharsets;
import java.nio.file.AccessDeniedException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Arrays;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Each way a cluster secret file can be unusable is refused with a sentence naming the key, the file and what is wrong,
 * never with the file system's or the decoder's bare message ("Input length = 1", a path alone), and never repeating
 * the secret. A trailing newline (what {@code base64 > FILE} writes) and CRLF line ends are no problem.
 */
class ClusterSecretFileTest {
    private static final String SECRET = "Zm9vYmFyYmF6cXV1eDAxMjM0NTY3ODlhYmNkZWZnaGlq";

    @TempDir
    Path dir;

    private Path secretFile(byte[] content) throws Exception {
        Path file = dir.resolve("cluster-secret");
        Files.write(file, content);
        Files.setPosixFilePermissions(file, PosixFilePermissions.fromString("rw-------"));
        return file;
    }

    private String problem(Path file) {
        String problem = ClusterSecretFile.problem("cluster.secret-file", file.toString());
        assertTrue(problem == null || problem.startsWith("cluster.secret-file " + file + " "), problem);
        assertFalse(problem != null && problem.contains(SECRET.substring(0, 8)), "the secret is never shown: " + problem);
        return problem;
    }

    @Test
    void aTrailingNewlineOrCrlfIsNoPartOfTheSecret() throws Exception {
        byte[] bare = ClusterSecretFile.load(secretFile(SECRET.getBytes(StandardCharsets.US_ASCII)).toString()).proving();
        for (String written : new String[] {SECRET + "\n", SECRET + "\r\n", "  " + SECRET + "  \n\n", "\n" + SECRET + "\n"}) {
            Path file = secretFile(written.getBytes(StandardCharsets.US_ASCII));
            assertNull(problem(file), written);
            assertArrayEquals(bare, ClusterSecretFile.load(file.toString()).proving(), written);
        }
    }

    @Test
    void aFileThatIsNotThereOrNotAFileIsSaidToBeSo() throws Exception {
        assertEquals("cluster.secret-file " + dir.resolve("nowhere") + " does not exist; " + ClusterSecretFile.HOW,
                problem(dir.resolve("nowhere")));
        Path directory = Files.createDirectory(dir.resolve("a-directory"));
        assertTrue(problem(directory).startsWith("cluster.secret-file " + directory + " is a directory, not a file;"),
                problem(directory));
        assertTrue(problem(Path.of("/dev/null")).contains("is not a regular file"), problem(Path.of("/dev/null")));
    }

    @Test
    void anEmptyOrShortFileSaysSoWithoutTheSecret() throws Exception {
        assertTrue(problem(secretFile(new byte[0])).contains(" is empty;"), problem(secretFile(new byte[0])));
        Path blank = secretFile("\n  \n\n".getBytes(StandardCharsets.US_ASCII));
        assertTrue(problem(blank).contains(" holds only blank lines;"), problem(blank));
        Path shortOne = secretFile((SECRET.substring(0, 20) + "\n").getBytes(StandardCharsets.US_ASCII));
        assertTrue(problem(shortOne).contains("holds 20 characters, fewer than 32"), problem(shortOne));
    }

    /** Raw bytes ({@code head -c 32 /dev/urandom > FILE} without base64) were "cannot be read: Input length = 1". */
    @Test
    void rawBytesOrAnUnprintableCharacterAreRefusedNamingWhere() throws Exception {
        byte[] raw = new byte[48];
        Arrays.fill(raw, (byte) 0xC3);
        raw[10] = (byte) 0xFF;
        String notText = problem(secretFile(raw));
        assertTrue(notText.contains("is not UTF-8 text") && notText.contains("base64"), notText);
        assertFalse(notText.contains("Input length"), notText);
        for (String bad : new String[] {SECRET.substring(0, 5) + "\u0000" + SECRET, SECRET + "\tmore", "\uFEFF" + SECRET,
                SECRET + "\u001b[0m"}) {
            String problem = problem(secretFile((bad + "\n").getBytes(StandardCharsets.UTF_8)));
            assertTrue(problem != null && problem.contains("line 1 holds an unprintable character (U+"), bad + ": " + problem);
        }
        String second = problem(secretFile((SECRET + "\n" + SECRET + "\u0007\n").getBytes(StandardCharsets.UTF_8)));
        assertTrue(second.contains("line 2 holds an unprintable character (U+0007) at character 45"), second);
    }

    @Test
    void aFileTooLargeToBeASecretIsNotRead() throws Exception {
        byte[] large = new byte[ClusterSecretFile.MAX_BYTES + 1];
        Arrays.fill(large, (byte) 'a');
        String problem = problem(secretFile(large));
        assertTrue(problem.contains("is " + large.length + " bytes; a secret file holds a few lines of at most"), problem);
    }

    /** The file system's exception carries the path alone; as root the test cannot make one, so it is given one. */
    @Test
    void aFileTheBrokersUserMayNotReadSaysPermissionDenied() {
        String problem = ClusterSecretFile.cannotRead("cluster.secret-file", "/etc/sluice/cluster-secret",
                new AccessDeniedException("/etc/sluice/cluster-secret"));
        assertEquals("cluster.secret-file /etc/sluice/cluster-secret cannot be read: permission denied to user "
                + System.getProperty("user.name") + "; give the broker's user read access (chown it, chmod 600)", problem);
    }
}
