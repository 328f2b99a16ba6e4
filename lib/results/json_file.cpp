#include "results/json_file.h"

#include "core/bounded_read.h"

namespace hpcbench::results {

nlohmann::json read_json_file(const std::filesystem::path& file, size_t max_bytes, const std::string& schema,
                              const std::string& what) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(read_file(file, max_bytes));
  } catch (const nlohmann::json::exception& e) {
    fail("{}: not a {} ({})", file.string(), what, e.what());
  }
  // A schema that is not a string is another file's as much as another name.
  const auto found = j.is_object() && j.contains("schema") && j["schema"].is_string() ? j["schema"].get<std::string>()
                                                                                      : std::string();
  if (found != schema) fail("{}: not a {} (schema '{}', expected '{}')", file.string(), what, found, schema);
  return j;
}

}  // namespace hpcbench::results
