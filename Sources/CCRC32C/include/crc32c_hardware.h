#ifndef STOWAGE_CRC32C_HARDWARE_H
#define STOWAGE_CRC32C_HARDWARE_H

#include <stddef.h>
#include <stdint.h>

/// Whether this CPU has a CRC32C instruction that `stowage_crc32c_hardware` uses
/// (SSE 4.2 on x86-64, the CRC extension on 64-bit Arm). Decided once, by asking the CPU.
int stowage_crc32c_hardware_available(void);

/// Continues a CRC32C (Castagnoli) register over `length` bytes, with the CPU's instruction.
/// `crc` is the register as it stands, already inverted: pass `~previous` and invert the
/// result, as the table form does. Call it only when `stowage_crc32c_hardware_available()`.
uint32_t stowage_crc32c_hardware(uint32_t crc, const void *bytes, size_t length);

#endif
