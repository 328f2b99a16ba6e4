#pragma once
// The vocabulary a strategy's spec describes one optimizer step in, without
// running it (torch-free): compute on one stream, collectives on another,
// each collective waiting for the compute issued before it (as c10d orders
// them on NCCL's stream), compute waiting for what it is told to. The spec
// issues the step as its code would; lib/predict costs the collectives and
// replays the two streams (predict/replay.h).
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace hpcbench::strategies {

// A job's shape: nodes x ranks (devices) on each.
struct Shape {
  int nodes = 1, gpus_per_node = 1;
  int world() const { return nodes * gpus_per_node; }
};

// The ranks of a collective: `per_node` ranks on each of `nodes` nodes.
struct Group {
  int nodes = 1;
  int per_node = 1;
  int share = 1;  // groups like this one crossing each node's NICs at once (hybrid's replica groups)
  int ranks() const { return nodes * per_node; }
};

enum class Stream { compute, comm };

struct Task {
  Task() = default;
  Task(Stream stream, double seconds, std::vector<size_t> after, std::string kind, double bytes = 0, Group group = {})
      : stream(stream), seconds(seconds), after(std::move(after)), kind(std::move(kind)), bytes(bytes), group(group) {}
  Stream stream = Stream::compute;
  double seconds = 0;         // compute: its time; a collective: filled in by the cost model
  std::vector<size_t> after;  // earlier tasks (indices) this one waits for
  std::string kind;           // "forward", "backward", "all_reduce", ...
  double bytes = 0;           // a collective's buffer (nccl-tests' size)
  Group group;                // a collective's ranks
};

// The model's parameter layout as the strategies see it (lib/predict builds
// it from the model's own code: its sharding units, its parameters).
struct ModelLayout {
  std::string model;
  int64_t parameters = 0;
  std::vector<std::string> unit_names;  // forward order: embeddings, layer.0.., head
  std::vector<int64_t> unit_numel;
  std::vector<double> unit_share;       // fraction of forward/backward compute, sums to 1
  std::vector<int64_t> param_numel;     // model->parameters() order
  std::vector<size_t> param_unit;
  int64_t hidden = 0, seq = 0;          // what crosses a pipeline stage boundary: seq x hidden per row
};

// One-device phase times a step is built from: per micro-batch, except the
// optimizer (per optimizer step over the whole model).
struct Phases {
  double forward_s = 0, backward_s = 0, other_s = 0;
  double optimizer_s = 0;
};

struct StepInputs {
  Phases base;
  const ModelLayout* layout = nullptr;
  Shape shape;
  int64_t batch = 1;         // rows of a micro-step on each data-parallel replica (base's batch)
  int grad_accum = 1;        // micro-steps per optimizer step
  int64_t rows = 1, seq = 128;  // one micro-batch on one device: sequences, tokens each (activations' size)
  int compute_bytes = 4;     // gathered parameters: 4 (fp32, tf32) or 2 (bf16, fp16)
  int reduce_bytes = 4;      // sharded gradients' reduction dtype, unless the strategy's options say
  int param_grad_bytes = 4;  // gradients of the fp32 parameters autocast computes with (4; 2 with an fp16 hook)
};

// Issues tasks as a strategy's host code would.
class StepBuilder {
 public:
  size_t compute(double seconds, const std::string& kind, std::vector<size_t> after = {});
  // Waits for the compute issued so far (c10d makes the comm stream wait for the current stream).
  size_t collective(const std::string& op, double bytes, const Group& group);
  // The compute stream waits for every collective not yet waited for.
  void wait_all(const std::string& kind);
  std::vector<Task> take() { return std::move(tasks_); }

 private:
  std::vector<Task> tasks_;
  std::vector<size_t> outstanding_;
  size_t last_compute_ = SIZE_MAX;
};

// Backward's gradient-ready times (from backward's start) of every
// parameter: units in reverse order, each taking its share of backward, the
// parameters inside a unit ready in reverse order in proportion to their size.
std::vector<double> ready_times(const ModelLayout& l, double backward_s);

}  // namespace hpcbench::strategies
