#include "report/csv_reader.h"

#include <cerrno>
#include <charconv>
#include <cstdlib>

#include "core/error.h"

namespace hpcbench::report {

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

namespace {

int64_t parse_int(const std::string& s, const char* column) {
  int64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size()) fail("column {}: '{}' is not an integer", column, s);
  return v;
}

double parse_double(const std::string& s, const char* column) {
  // strtod rather than from_chars: it also reads "inf" and "nan" as written
  // by fmt, and behaves the same on every standard library.
  errno = 0;
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  if (s.empty() || end != s.c_str() + s.size()) fail("column {}: '{}' is not a number", column, s);
  return v;
}

}  // namespace

RunResult result_from_csv(const CsvRecord& header, const CsvRecord& record,
                          std::map<std::string, std::string>* extra) {
  if (record.size() != header.size())
    fail("a row has {} fields where the header has {} (truncated or malformed row)", record.size(),
         header.size());
  RunResult r;
  r.schema_version = 0;  // absent in files older than the field
  // Every schema has had a status column: a row without one (or with it
  // empty) is not known to be ok.
  r.status = "unknown";
  const auto& cols = columns();
  for (size_t i = 0; i < header.size(); ++i) {
    const std::string& value = record[i];
    const Column* col = nullptr;
    for (auto& c : cols)
      if (header[i] == c.name) col = &c;
    if (!col) {
      if (extra) (*extra)[header[i]] = value;
      continue;
    }
    // An empty cell is an unknown value: keep the default.
    if (value.empty()) continue;
    std::visit(
        [&](auto m) {
          using T = std::remove_cvref_t<decltype(r.*m)>;
          if constexpr (std::is_same_v<T, std::string>) r.*m = value;
          else if constexpr (std::is_same_v<T, double>) r.*m = parse_double(value, col->name);
          else r.*m = parse_int(value, col->name);
        },
        col->member);
  }
  return r;
}

}  // namespace hpcbench::report
