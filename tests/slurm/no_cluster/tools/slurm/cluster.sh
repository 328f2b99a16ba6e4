#!/bin/sh
# Stands in for tools/slurm/cluster.sh on a machine that cannot run SLURM
# (tests/slurm/ci_no_cluster.cmake): every command says so with exit 77.
echo "cluster.sh: cannot run a local SLURM cluster here: stand-in for the test" >&2
exit 77
