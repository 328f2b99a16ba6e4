#pragma once
// SLURM host lists ("gpu-[001-003,007],cpu[1,4]") expanded into host names,
// so that rank 0's host can be found from SLURM_STEP_NODELIST.
#include <string>
#include <string_view>
#include <vector>

namespace hpcbench::dist {

// The built-in expander: commas split hosts only outside brackets, every
// bracket group holds numbers and lo-hi ranges, zero padding is kept ("n[08-10]"
// gives n08 n09 n10), several groups multiply ("r[1-2]n[1-2]"). Throws
// UserError naming the list for anything malformed.
std::vector<std::string> expand_hostlist(std::string_view list);

// `scontrol show hostnames` when scontrol is on PATH (it knows every syntax
// SLURM accepts), the built-in expander otherwise or when scontrol fails.
std::vector<std::string> resolve_hostlist(std::string_view list);

}  // namespace hpcbench::dist
