/*
 * crc32c: the CRC-32C (Castagnoli, reflected polynomial 0x82F63B78) checksum used by the
 * .atr frames (docs/design.md#the-trace-container). Uses the SSE4.2 crc32 instruction when the CPU
 * has it and a slicing-by-8 table otherwise; both give the same values. Check value:
 * crc32c("123456789") = 0xE3069283.
 */
#ifndef ACCELTRACE_CRC32C_H
#define ACCELTRACE_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/*
 * Continues a CRC: crc32c_update(0, p, n) is the CRC of p[0..n); chaining
 * crc32c_update(crc32c_update(0, a, na), b, nb) equals the CRC of a followed by b.
 */
uint32_t crc32c_update(uint32_t crc, const void *p, size_t n);

/* Same result as crc32c_update, always through the portable table (for tests). */
uint32_t crc32c_update_sw(uint32_t crc, const void *p, size_t n);

#endif
