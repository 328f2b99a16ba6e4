#pragma once
// The one way a list in a flag, a label or an environment variable is cut
// into its items.
#include <string>
#include <string_view>
#include <vector>

namespace hpcbench {

// `text` cut at every `sep`, empty pieces kept ("a,,b" -> a, "", b; "" -> one
// empty piece): what an empty item means (an error, nothing) is the caller's.
std::vector<std::string> split(std::string_view text, char sep = ',');

}  // namespace hpcbench
