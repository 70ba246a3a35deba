// CRC32C with the CPU's own instruction, for `CRC32C.update` in the Stowage target.
// The table form in Swift stays the reference and the fallback: tests compare the two.
#include "crc32c_hardware.h"

#include <string.h>

#if defined(__x86_64__)
#include <cpuid.h>

int stowage_crc32c_hardware_available(void) {
    unsigned int eax = 0, ebx = 0, ecx = 0, edx = 0;
    if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx)) return 0;
    return (ecx & bit_SSE4_2) != 0;
}

__attribute__((target("sse4.2")))
uint32_t stowage_crc32c_hardware(uint32_t crc, const void *bytes, size_t length) {
    const unsigned char *p = (const unsigned char *)bytes;
    uint64_t c = crc;
    while (length >= 8) {
        uint64_t word;
        memcpy(&word, p, 8);
        c = __builtin_ia32_crc32di(c, word);
        p += 8;
        length -= 8;
    }
    uint32_t c32 = (uint32_t)c;
    while (length > 0) {
        c32 = __builtin_ia32_crc32qi(c32, *p);
        p += 1;
        length -= 1;
    }
    return c32;
}

#elif defined(__aarch64__)
#include <sys/auxv.h>
#ifndef HWCAP_CRC32
#define HWCAP_CRC32 (1 << 7)
#endif

int stowage_crc32c_hardware_available(void) {
    return (getauxval(AT_HWCAP) & HWCAP_CRC32) != 0;
}

__attribute__((target("crc")))
uint32_t stowage_crc32c_hardware(uint32_t crc, const void *bytes, size_t length) {
    const unsigned char *p = (const unsigned char *)bytes;
    uint32_t c = crc;
    while (length >= 8) {
        uint64_t word;
        memcpy(&word, p, 8);
        c = __builtin_arm_crc32cd(c, word);
        p += 8;
        length -= 8;
    }
    while (length > 0) {
        c = __builtin_arm_crc32cb(c, *p);
        p += 1;
        length -= 1;
    }
    return c;
}

#else

int stowage_crc32c_hardware_available(void) { return 0; }

uint32_t stowage_crc32c_hardware(uint32_t crc, const void *bytes, size_t length) {
    (void)bytes;
    (void)length;
    return crc;
}

#endif
