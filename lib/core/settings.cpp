#include "core/settings.h"

#include <toml++/toml.h>

#include <charconv>
#include <cstdlib>

#include "core/bounded_read.h"
#include "core/error.h"
#include "core/number_text.h"

namespace hpcbench {

namespace {

// Text number_problem passed.
template <typename T>
void parse_number(const std::string& s, T& out) {
  if constexpr (std::is_same_v<T, double>) out = std::strtod(s.c_str(), nullptr);
  else std::from_chars(s.data(), s.data() + s.size(), out);
}

}  // namespace

void set_from_string(const Setting& s, const std::string& value) {
  std::visit(
      [&](auto* target) {
        using T = std::remove_pointer_t<decltype(target)>;
        if constexpr (std::is_same_v<T, std::string>) {
          *target = value;
        } else if constexpr (std::is_same_v<T, bool>) {
          if (value == "on" || value == "true" || value == "1") *target = true;
          else if (value == "off" || value == "false" || value == "0") *target = false;
          else fail("{} {}: expected on or off", s.flag, value);
        } else if (auto why = number_problem(value, type_name(s)); !why.empty()) {
          fail("{} {}: {}", s.flag, value, why);
        } else {
          parse_number(value, *target);
        }
      },
      s.target);
}

std::string value_text(const Setting& s) {
  return std::visit(
      [](auto* t) -> std::string {
        using T = std::remove_pointer_t<decltype(t)>;
        if constexpr (std::is_same_v<T, std::string>) return *t;
        else if constexpr (std::is_same_v<T, bool>) return *t ? "on" : "off";
        else return fmt::format("{}", *t);
      },
      s.target);
}

std::string type_name(const Setting& s) {
  return std::visit(
      [](auto* p) -> std::string {
        using T = std::remove_pointer_t<decltype(p)>;
        if constexpr (std::is_same_v<T, int64_t>) return "INT";
        else if constexpr (std::is_same_v<T, double>) return "FLOAT";
        else if constexpr (std::is_same_v<T, bool>) return "";
        else return "TEXT";
      },
      s.target);
}

bool switch_value(const Setting& s) { return !s.flag.starts_with("--no-"); }

struct TomlFile::Table {
  toml::table root;
};

TomlFile::TomlFile(const std::filesystem::path& path) : path_(path), table_(std::make_unique<Table>()) {
  const std::string text = read_flag_file("--config", path, file_limit::kConfig);
  try {
    table_->root = toml::parse(text, path.string());
  } catch (const toml::parse_error& e) {
    fail("{}:{}:{}: {}", path.string(), e.source().begin.line, e.source().begin.column, e.description());
  }
}

TomlFile::~TomlFile() = default;
TomlFile::TomlFile(TomlFile&&) noexcept = default;
TomlFile& TomlFile::operator=(TomlFile&&) noexcept = default;

std::vector<std::string> TomlFile::keys() const {
  std::vector<std::string> out;
  for (auto& [section, node] : table_->root) {
    auto* tbl = node.as_table();
    if (!tbl) fail("{}: '{}' must be a [section]", path_.string(), section.str());
    for (auto& [key, value] : *tbl) out.push_back(std::string(section.str()) + "." + std::string(key.str()));
  }
  return out;
}

void TomlFile::apply(const std::vector<Setting>& settings, const std::string& prefix) const {
  for (auto& s : settings) {
    const std::string key = prefix + s.key;
    auto node = table_->root.at_path(key);
    if (!node) continue;
    std::visit(
        [&](auto* target) {
          using T = std::remove_pointer_t<decltype(target)>;
          if constexpr (std::is_same_v<T, std::string>) {
            auto v = node.value<std::string>();
            if (!v) fail("{}: '{}' must be a string", path_.string(), key);
            *target = *v;
          } else if constexpr (std::is_same_v<T, bool>) {
            if (!node.is_boolean()) fail("{}: '{}' must be true or false", path_.string(), key);
            *target = *node.value<bool>();
          } else if constexpr (std::is_same_v<T, double>) {
            auto v = node.value<double>();  // accepts integers too
            if (!v) fail("{}: '{}' must be a number", path_.string(), key);
            *target = *v;
          } else {
            if (!node.is_integer()) fail("{}: '{}' must be an integer", path_.string(), key);
            *target = *node.value<int64_t>();
          }
        },
        s.target);
  }
}

}  // namespace hpcbench
