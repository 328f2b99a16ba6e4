#pragma once
// The job's ranks as a grid of data-parallel (dp), pipeline (pp) and
// tensor-parallel (tp) coordinates, placed as Megatron-LM places them
// (tensor parallelism fastest, then data, then pipeline):
//
//   rank = p·(dp·tp) + d·tp + t
//
// so that a tensor-parallel group is tp consecutive ranks, which the
// launchers put on one node: its per-layer all-reduces stay on the node's
// fast links (NVLink), while the pipeline's point-to-point transfers, a few
// per micro-batch, are the ones that cross nodes. No tensors: the strategies
// build their communicators from these groups.
#include <string>
#include <vector>

namespace hpcbench::strategies {

struct MeshSizes {
  int dp = 0;  // 0: whatever the world leaves (world / (pp·tp))
  int pp = 1;
  int tp = 1;
};

struct MeshCoord {
  int dp = 0, pp = 0, tp = 0;
};

class Mesh {
 public:
  // Throws UserError naming --dp-size / --pp-size / --tp-size when the sizes
  // are below 1, do not multiply to `world`, or would spread a tensor-parallel
  // group over nodes (tp must divide `ranks_per_node`; 0: not known, every
  // rank on one node).
  Mesh(int world, MeshSizes sizes, int ranks_per_node = 0);

  int world() const { return dp_ * pp_ * tp_; }
  int dp() const { return dp_; }
  int pp() const { return pp_; }
  int tp() const { return tp_; }
  int rank_of(const MeshCoord& c) const;
  MeshCoord coord_of(int rank) const;
  // The ranks that share `rank`'s other two coordinates, in order of the
  // varying one: the group a collective of that dimension runs over.
  std::vector<int> tp_group(int rank) const;
  std::vector<int> pp_group(int rank) const;
  std::vector<int> dp_group(int rank) const;
  // The layout's name in reports: the sizes above 1, "dp2-pp2", "tp2",
  // "dp4"; "dp1" for one rank.
  std::string label() const;

 private:
  int dp_ = 1, pp_ = 1, tp_ = 1;
};

}  // namespace hpcbench::strategies
