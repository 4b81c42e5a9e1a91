package io.sluice.broker;

import io.sluice.client.Connection;
import io.sluice.client.ConnectionOptions;
import io.sluice.client.ProducerOptions;
import io.sluice.client.ReconnectPolicy;
import io.sluice.protocol.ErrorCode;
import io.sluice.protocol.FrameType;
import io.sluice.protocol.QueueSettings;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A PUBLISH to a queue that does not exist (or that the user may not publish to) is refused with one PUBLISH_ERROR per
 * message, and each carried a sentence with the queue name as the client wrote it: up to 65,535 bytes. A message takes
 * 24 bytes, so one frame of N messages under a long name made N copies of the name: a 256 KiB frame with an 8,000-byte
 * name made some 85 MB of answers, and at the default broker.max-frame-bytes (8 MiB) one frame with a 64 KiB name makes
 * about 22 GB, written on the event loop in one go (rule H4 stops reading only after the frame), far past any heap or
 * direct memory: a client without any permission crashes the broker. The answers to one frame must stay within a small
 * multiple of it whatever the name.
 */
@Timeout(120)
class PublishRefusalSizeTest {
    private static final int FRAME_BYTES = 256 << 10;
    private static final int NAME_CHARS = 8_000;

    @TempDir
    Path dir;

    private static void frame(DataOutputStream out, int type, byte[] body) throws IOException {
        out.writeInt(body.length + 2);
        out.writeByte(type);
        out.writeByte(0);
        out.write(body);
    }

    private static void string(DataOutputStream out, String s) throws IOException {
        byte[] b = s.getBytes(StandardCharsets.UTF_8);
        out.writeShort(b.length);
        out.write(b);
    }

    @Test
    void theAnswersToAPublishToAnUnknownQueueDoNotRepeatItsNameForEveryMessage() throws Exception {
        try (Broker broker = TestBrokers.start(dir, Map.of("broker.max-frame-bytes", String.valueOf(FRAME_BYTES),
                "storage.max-message-bytes", "65536"))) {
            char[] chars = new char[NAME_CHARS];
            Arrays.fill(chars, 'q');
            String name = new String(chars);
            int messages = (FRAME_BYTES - 2 - (2 + NAME_CHARS) - 4) / 24;

            ByteArrayOutputStream hello = new ByteArrayOutputStream();
            DataOutputStream h = new DataOutputStream(hello);
            h.writeShort(1);
            h.writeShort(1);
            string(h, "long-name");
            h.writeInt(0);
            h.writeInt(0);
            string(h, "");
            string(h, "");
            ByteArrayOutputStream publish = new ByteArrayOutputStream();
            DataOutputStream p = new DataOutputStream(publish);
            string(p, name);
            p.writeInt(messages);
            for (int i = 0; i < messages; i++) {
                p.writeLong(i + 1); // a producer each: no two refusals share a range
                p.writeLong(1);
                p.writeInt(0);
                p.writeInt(0);
            }
            long answerBytes = 0;
            int refused = 0;
            int credited = 0;
            String first = null;
            try (Socket s = new Socket("127.0.0.1", broker.port())) {
                DataOutputStream out = new DataOutputStream(s.getOutputStream());
                frame(out, FrameType.HELLO.code(), hello.toByteArray());
                frame(out, FrameType.PUBLISH.code(), publish.toByteArray());
                out.flush();
                DataInputStream in = new DataInputStream(s.getInputStream());
                while (refused < messages || credited < messages) {
                    int length = in.readInt();
                    int type = in.readUnsignedByte();
                    in.readUnsignedByte();
                    byte[] body = new byte[length - 2];
                    in.readFully(body);
                    if (type == FrameType.HELLO_OK.code()) {
                        continue;
                    }
                    answerBytes += 4 + length;
                    DataInputStream b = new DataInputStream(new java.io.ByteArrayInputStream(body));
                    if (type == FrameType.PUBLISH_ERROR.code()) {
                        b.readLong();
                        assertEquals(b.readLong(), b.readLong());
                        assertEquals(ErrorCode.UNKNOWN_QUEUE.code(), b.readUnsignedShort());
                        if (first == null) {
                            first = b.readUTF();
                        }
                        refused++;
                    } else if (type == FrameType.PUBLISH_CREDIT.code()) {
                        credited += b.readInt();
                    }
                }
            }
            assertEquals(messages, refused, "every message is refused once");
            assertTrue(first.contains("queue 'qqqq") && first.contains("does not exist"), first);
            assertTrue(answerBytes < 32L * FRAME_BYTES, "the answers to one " + FRAME_BYTES + "-byte PUBLISH took "
                    + answerBytes + " bytes");

            broker.queues().declare("other", QueueSettings.EMPTY);
            try (Connection c = Connection.connect(ConnectionOptions.builder().host("127.0.0.1").port(broker.port())
                    .reconnectPolicy(ReconnectPolicy.DISABLED).build())) {
                c.createProducer("other", ProducerOptions.DEFAULT).send(Payloads.of(1));
            }
        }
    }
}
