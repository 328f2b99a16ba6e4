#pragma once
// The whole program behind main(): the commands, the logger, the exit codes.
// main.cpp holds only the call, so that its compile does not parse CLI11 and
// LibTorch a second time (10 s of a cold build on 2 cores).
namespace hpcbench::cli {

int run_program(int argc, char** argv);

}  // namespace hpcbench::cli
