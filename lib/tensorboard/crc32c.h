#pragma once
// CRC-32C (Castagnoli), the checksum of TFRecord frames, and the masked form
// those frames store (a checksum of data that itself holds checksums would
// otherwise be weak).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace hpcbench::tensorboard {

uint32_t crc32c(const void* data, size_t size, uint32_t crc = 0);
inline uint32_t crc32c(std::string_view s) { return crc32c(s.data(), s.size()); }
uint32_t masked_crc32c(std::string_view s);

// One TFRecord frame: the length (8 bytes, little endian), its masked CRC,
// the record, the record's masked CRC.
std::string tfrecord_frame(std::string_view record);

}  // namespace hpcbench::tensorboard
