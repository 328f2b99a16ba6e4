#pragma once
// SQuAD v1.1 / v2.0 JSON (the official format) into flat examples.
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace hpcbench::data {

struct SquadAnswer {
  std::string text;
  int64_t answer_start = 0;  // character offset into the context (Unicode code points, as Python counts)
};

struct SquadExample {
  std::string id;
  std::string title;
  std::string question;
  std::string context;
  std::vector<SquadAnswer> answers;            // empty for unanswerable v2.0 questions
  bool is_impossible = false;                  // v2.0
  std::vector<SquadAnswer> plausible_answers;  // v2.0, for unanswerable questions
};

struct SquadDataset {
  std::string version;  // "1.1" or "v2.0" as written in the file
  std::vector<SquadExample> examples;
  // Answers whose text is not found at answer_start in the context: counted
  // and reported by the loader, not silently trusted.
  size_t mismatched_answers = 0;
};

// Throws UserError naming the file and the problem (malformed JSON with its
// byte offset, missing/wrong version, missing fields).
SquadDataset load_squad(const std::filesystem::path& path);
// The same for a file's content already in memory; `name` is used in errors.
SquadDataset parse_squad(std::string_view content, const std::string& name);

}  // namespace hpcbench::data
