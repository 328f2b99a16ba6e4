// The checksum TensorBoard's readers verify on every frame: CRC-32C against
// the published vectors (RFC 3720 B.4, and the check value of the
// Castagnoli polynomial), and the TFRecord frame around a record.
#include <cstring>
#include <string>

#include "tensorboard/crc32c.h"
#include "test_catch.h"

using namespace hpcbench::tensorboard;

TEST_CASE("crc32c matches the published vectors") {
  CHECK(crc32c("123456789") == 0xE3069283u);
  CHECK(crc32c("") == 0u);
  CHECK(crc32c("a") == 0xC1D04330u);
  std::string zeros(32, '\0'), ones(32, '\xff'), up(32, '\0'), down(32, '\0');
  for (int i = 0; i < 32; ++i) {
    up[size_t(i)] = static_cast<char>(i);
    down[size_t(i)] = static_cast<char>(31 - i);
  }
  CHECK(crc32c(zeros) == 0x8A9136AAu);
  CHECK(crc32c(ones) == 0x62A8AB43u);
  CHECK(crc32c(up) == 0x46DD794Eu);
  CHECK(crc32c(down) == 0x113FDB5Cu);
  // RFC 3720 B.4: an iSCSI read command PDU.
  const unsigned char pdu[48] = {0x01, 0xc0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x14, 0, 0, 0, 0, 0, 0x04, 0,
                                 0, 0, 0, 0x14, 0, 0, 0, 0x18, 0x28, 0, 0, 0, 0, 0, 0, 0, 0x02, 0, 0, 0, 0, 0, 0, 0};
  CHECK(crc32c(pdu, sizeof pdu) == 0xD9963A56u);
}

TEST_CASE("crc32c continues over pieces") {
  CHECK(crc32c("6789", 4, crc32c("12345", 5)) == 0xE3069283u);
}

TEST_CASE("masked crc is TensorFlow's rotation plus constant") {
  uint32_t c = 0xE3069283u;
  CHECK(masked_crc32c("123456789") == ((c >> 15) | (c << 17)) + 0xa282ead8u);
}

TEST_CASE("a TFRecord frame is length, its masked crc, the record, its masked crc") {
  std::string rec = "hello tensorboard";
  auto f = tfrecord_frame(rec);
  REQUIRE(f.size() == rec.size() + 16);
  uint64_t len = 0;
  std::memcpy(&len, f.data(), 8);  // little endian on every machine this builds on
  CHECK(len == rec.size());
  uint32_t len_crc = 0, data_crc = 0;
  std::memcpy(&len_crc, f.data() + 8, 4);
  std::memcpy(&data_crc, f.data() + 12 + rec.size(), 4);
  CHECK(len_crc == masked_crc32c(f.substr(0, 8)));
  CHECK(f.substr(12, rec.size()) == rec);
  CHECK(data_crc == masked_crc32c(rec));
}
