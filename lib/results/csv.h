#pragma once
// RFC 4180, the CSV every results file is written in (summary.csv, loss.csv,
// utilisation.csv, the report's tables) and read back with.
#include <string>
#include <string_view>
#include <vector>

namespace hpcbench::results {

using CsvRecord = std::vector<std::string>;

// Splits RFC 4180 text into records: quoted fields may hold commas, doubled
// quotes and line breaks; CRLF and LF both end a record; blank lines are
// skipped. Throws UserError on an unterminated quoted field (a truncated
// file), saying on which line it began.
std::vector<CsvRecord> parse_csv(std::string_view text);

// Quotes a field holding separators, quotes or line breaks.
std::string csv_field(const std::string& s);

}  // namespace hpcbench::results
