#include "results/csv.h"

#include "core/error.h"

namespace hpcbench::results {

std::vector<CsvRecord> parse_csv(std::string_view text) {
  std::vector<CsvRecord> records;
  CsvRecord record;
  std::string field;
  bool quoted = false, field_started = false;
  size_t line = 1, quote_line = 0;
  auto end_field = [&] {
    record.push_back(std::move(field));
    field.clear();
    field_started = false;
  };
  auto end_record = [&] {
    // A line with nothing on it is not a record with one empty field.
    if (!(record.empty() && !field_started && field.empty())) {
      end_field();
      records.push_back(std::move(record));
    }
    record.clear();
  };
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (quoted) {
      if (c == '"') {
        if (i + 1 < text.size() && text[i + 1] == '"') {
          field += '"';
          ++i;
        } else {
          quoted = false;
        }
      } else {
        if (c == '\n') ++line;
        field += c;
      }
      continue;
    }
    switch (c) {
      case '"':
        quoted = true;
        quote_line = line;
        field_started = true;
        break;
      case ',':
        end_field();
        field_started = true;  // the next field exists, even if empty
        break;
      case '\r':
        if (i + 1 < text.size() && text[i + 1] == '\n') break;
        [[fallthrough]];
      case '\n':
        end_record();
        ++line;
        break;
      default:
        field += c;
        field_started = true;
    }
  }
  if (quoted) fail("unterminated quoted field starting on line {} (truncated file?)", quote_line);
  end_record();
  return records;
}

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

}  // namespace hpcbench::results
