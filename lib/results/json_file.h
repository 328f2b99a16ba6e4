#pragma once
// The one way a results file in JSON with a schema of its own (sweep.json,
// plan.json) is read back: a bounded read naming the file, the parse, the
// schema's check, and its fields taken with a missing or mistyped one named
// as the file's fault, so that the readers hold their fields alone.
#include <cstddef>
#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "core/error.h"

namespace hpcbench::results {

// `file` (at most `max_bytes`) parsed, its "schema" `schema`. Throws
// UserError naming the file and `what` ("sweep manifest", "plan") when it
// cannot be read, is not JSON or holds another schema.
nlohmann::json read_json_file(const std::filesystem::path& file, size_t max_bytes, const std::string& schema,
                              const std::string& what);

// What `read()` returns; a field it takes that is missing or of another type
// is a UserError naming the file and `what`.
template <class Read>
auto read_fields(const std::filesystem::path& file, const std::string& what, Read&& read) -> decltype(read()) {
  try {
    return read();
  } catch (const nlohmann::json::exception& e) {
    fail("{}: malformed {} ({})", file.string(), what, e.what());
  }
}

}  // namespace hpcbench::results
