package io.sluice.broker.txn;

import org.junit.jupiter.api.Test;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

/** The commit record's encoding: format 3 names each part's queue incarnation (X6); format 2, without, is still read. */
class CommitRecordTest {
    @Test
    void aRecordKeepsEachPartsIncarnation() {
        CommitRecord record = new CommitRecord(List.of(new CommitRecord.Part("invoices", 42, new long[] {7, 8})),
                List.of(new CommitRecord.Part("orders", -5, new long[] {3})));
        ByteBuffer encoded = record.encode();
        assertEquals(record.encodedLength(), encoded.remaining());
        CommitRecord read = CommitRecord.decode(encoded);
        assertEquals(42, read.targets().get(0).incarnation());
        assertArrayEquals(new long[] {7, 8}, read.targets().get(0).ids());
        assertEquals("orders", read.sources().get(0).queue());
        assertEquals(-5, read.sources().get(0).incarnation());
    }

    @Test
    void aRecordFromBeforeIncarnationsIsReadWithItsPartsIncarnationUnknown() {
        byte[] name = "orders".getBytes(StandardCharsets.UTF_8);
        ByteBuffer format2 = ByteBuffer.allocate(4 + 4 + 4 + 2 + name.length + 4 + 8);
        format2.putInt(2).putInt(0).putInt(1).putShort((short) name.length).put(name).putInt(1).putLong(11).flip();
        CommitRecord read = CommitRecord.decode(format2);
        assertEquals(List.of(), read.targets());
        assertEquals(CommitRecord.UNKNOWN_INCARNATION, read.sources().get(0).incarnation());
        assertArrayEquals(new long[] {11}, read.sources().get(0).ids());
    }
}
