#pragma once
// Reading results back from CSV: RFC 4180 records, matched to RunResult
// fields by header name, so files of an older schema (fewer, other or
// reordered columns) still load.
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "report/run_result.h"

namespace hpcbench::report {

using CsvRecord = std::vector<std::string>;

// Splits RFC 4180 text into records: quoted fields may hold commas, doubled
// quotes and line breaks; CRLF and LF both end a record; blank lines are
// skipped. Throws UserError on an unterminated quoted field (a truncated
// file), saying on which line it began.
std::vector<CsvRecord> parse_csv(std::string_view text);

// Fills a RunResult from one record under `header`. Columns the schema does
// not know are returned in `extra` (when given) instead of being dropped;
// absent columns keep their defaults, and schema_version is 0 when absent;
// status is "unknown" when absent or empty (never taken as ok).
// Throws UserError naming the column when a value does not parse, or when
// the record's field count differs from the header's (a truncated row).
RunResult result_from_csv(const CsvRecord& header, const CsvRecord& record,
                          std::map<std::string, std::string>* extra = nullptr);

}  // namespace hpcbench::report
