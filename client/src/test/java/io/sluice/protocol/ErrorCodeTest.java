package io.sluice.protocol;

import org.junit.jupiter.api.Test;

import java.util.HashSet;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

class ErrorCodeTest {

    @Test
    void shouldGiveEveryEntryAUniqueCodeThatFitsInUint16AndMapsBack() {
        Set<Integer> codes = new HashSet<>();
        for (ErrorCode code : ErrorCode.values()) {
            assertTrue(codes.add(code.code()), "duplicate code " + code.code());
            assertTrue(code.code() >= 0 && code.code() <= 0xFFFF, code.name());
            assertFalse(code.defaultText().isEmpty(), code.name());
            assertEquals(code, ErrorCode.fromCode(code.code()));
        }
        assertEquals(ErrorCode.UNKNOWN, ErrorCode.fromCode(12_345));
    }

    @Test
    void shouldKeepTheDocumentedNumbersStable() {
        assertEquals(100, ErrorCode.MALFORMED_FRAME.code());
        assertEquals(101, ErrorCode.FRAME_TOO_LARGE.code());
        assertEquals(401, ErrorCode.QUEUE_BLOCKED.code());
        assertEquals(902, ErrorCode.NOT_CONFIRMED_SHUTDOWN.code());
        assertEquals(600, ErrorCode.UNKNOWN_TRANSACTION.code());
        assertEquals(604, ErrorCode.TRANSACTION_ID_IN_USE.code());
        assertTrue(ErrorCode.TRANSACTION_TIMED_OUT.retriable());
        assertTrue(ErrorCode.STORAGE_FULL.retriable());
        assertFalse(ErrorCode.AUTHENTICATION_FAILED.retriable());
    }

    @Test
    void shouldGiveFrameTypesUniqueCodesBelowTheOptionalRange() {
        Set<Integer> codes = new HashSet<>();
        for (FrameType type : FrameType.values()) {
            assertTrue(codes.add(type.code()), type.name());
            assertFalse(FrameType.isOptional(type.code()), type.name());
            assertEquals(type, FrameType.fromCode(type.code()));
        }
    }

    @Test
    void shouldNegotiateTheHighestCommonVersion() {
        assertEquals(1, ProtocolVersion.negotiate(1, 3, ProtocolVersion.MIN, ProtocolVersion.CURRENT));
        assertEquals(-1, ProtocolVersion.negotiate(2, 3, 1, 1));
    }
}
