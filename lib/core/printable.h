#pragma once
// Text that another program wrote (sbatch, squeue, a hub's error page) is
// bytes: any encoding, control characters, invalid UTF-8. Before it goes
// into a JSON file or a log it is made printable here.
#include <string>
#include <string_view>

namespace hpcbench {

// `bytes` with valid UTF-8 kept (newlines and tabs too) and every other byte
// written as \xNN (a Latin-1 'ä' of a German sbatch becomes "\xe4"), so the
// result is valid UTF-8 that still shows what was there. At most
// `max_bytes` of the input are kept; more is said with " ... (N more bytes)".
std::string printable(std::string_view bytes, size_t max_bytes = 4096);

}  // namespace hpcbench
