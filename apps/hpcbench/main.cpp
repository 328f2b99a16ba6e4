#include "program.h"

int main(int argc, char** argv) { return hpcbench::cli::run_program(argc, argv); }
