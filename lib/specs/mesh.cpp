#include "specs/mesh.h"

#include "core/error.h"

namespace hpcbench::strategies {

Mesh::Mesh(int world, MeshSizes sizes, int ranks_per_node) : pp_(sizes.pp), tp_(sizes.tp) {
  if (world < 1) fail("internal: a job of {} ranks", world);
  if (sizes.pp < 1) fail("--pp-size {}: must be at least 1", sizes.pp);
  if (sizes.tp < 1) fail("--tp-size {}: must be at least 1", sizes.tp);
  if (sizes.dp < 0) fail("--dp-size {}: must be at least 1 (or 0: the ranks the other sizes leave)", sizes.dp);
  if (sizes.dp == 0) {
    if (world % (pp_ * tp_) != 0)
      fail("--pp-size {} x --tp-size {} = {} does not divide the job's {} ranks", pp_, tp_, pp_ * tp_, world);
    dp_ = world / (pp_ * tp_);
  } else {
    dp_ = sizes.dp;
    if (dp_ * pp_ * tp_ != world)
      fail("--dp-size {} x --pp-size {} x --tp-size {} = {}, but the job has {} ranks: the sizes must multiply to "
           "the world size",
           dp_, pp_, tp_, dp_ * pp_ * tp_, world);
  }
  if (ranks_per_node > 0 && tp_ > 1 && ranks_per_node % tp_ != 0)
    fail("--tp-size {}: a tensor-parallel group must stay inside one node (its all-reduces run twice per layer, "
         "forward and backward), but nodes have {} rank(s); use a --tp-size that divides {}",
         tp_, ranks_per_node, ranks_per_node);
}

int Mesh::rank_of(const MeshCoord& c) const { return c.pp * dp_ * tp_ + c.dp * tp_ + c.tp; }

MeshCoord Mesh::coord_of(int rank) const {
  if (rank < 0 || rank >= world()) fail("internal: rank {} of a mesh of {}", rank, world());
  return {(rank / tp_) % dp_, rank / (dp_ * tp_), rank % tp_};
}

std::vector<int> Mesh::tp_group(int rank) const {
  auto c = coord_of(rank);
  std::vector<int> g;
  for (c.tp = 0; c.tp < tp_; ++c.tp) g.push_back(rank_of(c));
  return g;
}

std::vector<int> Mesh::pp_group(int rank) const {
  auto c = coord_of(rank);
  std::vector<int> g;
  for (c.pp = 0; c.pp < pp_; ++c.pp) g.push_back(rank_of(c));
  return g;
}

std::vector<int> Mesh::dp_group(int rank) const {
  auto c = coord_of(rank);
  std::vector<int> g;
  for (c.dp = 0; c.dp < dp_; ++c.dp) g.push_back(rank_of(c));
  return g;
}

std::string Mesh::label() const {
  std::string s;
  auto add = [&](const char* name, int n) {
    if (n <= 1) return;
    if (!s.empty()) s += "-";
    s += name + std::to_string(n);
  };
  add("dp", dp_);  // the data-parallel dimension (dp2-pp2), not the strategy
  add("pp", pp_);
  add("tp", tp_);
  return s.empty() ? "dp1" : s;
}

}  // namespace hpcbench::strategies
