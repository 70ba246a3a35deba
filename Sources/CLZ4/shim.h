#ifndef STOWAGE_CLZ4_SHIM_H
#define STOWAGE_CLZ4_SHIM_H
// The LZ4 block API (liblz4-dev): LZ4_compress_fast, LZ4_decompress_safe, LZ4_compressBound.
#include <lz4.h>
#endif
