#pragma once
// A settings table: each setting's TOML key ("train.lr"), command-line flag
// ("--lr"), help and the variable it sets. The training settings and every
// strategy's options are tables of this kind, so that the TOML reader, the
// CLI, run headers and strategy labels all walk one list and a setting cannot
// exist in one of them and be missing in another.
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <variant>
#include <vector>

namespace hpcbench {

// A bool is an on/off switch: its flag is "--no-<key>" when it is on by
// default (the flag turns it off) and "--<key>" otherwise; TOML takes
// true/false, texts on/off.
using SettingTarget = std::variant<int64_t*, double*, std::string*, bool*>;

struct Setting {
  std::string key;   // "train.lr"
  std::string flag;  // "--lr"
  std::string help;
  SettingTarget target;
};

// Sets one setting from its text (a flag's argument, a label's value); throws
// UserError naming the flag when the text is not of the setting's type.
void set_from_string(const Setting& s, const std::string& value);

// The setting's value as text: numbers as fmt prints them, bools on/off.
std::string value_text(const Setting& s);

// INT, FLOAT, TEXT, or "" for a switch (a flag without an argument).
std::string type_name(const Setting& s);

// The value a switch flag sets: false for "--no-..." flags, true otherwise.
bool switch_value(const Setting& s);

// A parsed TOML file whose values are applied to settings tables.
class TomlFile {
 public:
  // Throws UserError naming the file (and line and column for syntax errors;
  // "no such file" when it is missing).
  explicit TomlFile(const std::filesystem::path& path);
  ~TomlFile();
  TomlFile(TomlFile&&) noexcept;
  TomlFile& operator=(TomlFile&&) noexcept;

  const std::filesystem::path& path() const { return path_; }
  // "section.key" of every value; throws UserError for a top-level value
  // that is not a [section].
  std::vector<std::string> keys() const;
  // Sets every setting whose `prefix` + key is in the file; a value of the
  // wrong type is a UserError naming the file and the key.
  void apply(const std::vector<Setting>& settings, const std::string& prefix = "") const;

 private:
  struct Table;
  std::filesystem::path path_;
  std::unique_ptr<Table> table_;
};

}  // namespace hpcbench
