#pragma once
#include <torch/csrc/distributed/c10d/Work.hpp>

#include <mutex>
#include <string>
#include <vector>

#include "distributed/process_group.h"

#include "strategies/ddp/options.h"
#include "strategies/strategy.h"

namespace hpcbench::strategies {

// PyTorch's DistributedDataParallel: one replica per rank, initial state
// broadcast from rank 0, gradients averaged by all-reduce in buckets that
// start during backward as soon as their gradients are accumulated, so that
// communication hides behind the rest of the backward pass. Gradients live
// in the buckets (DDP's gradient_as_bucket_view=True): no second copy of
// them is kept, and nothing is copied back after the all-reduce. After the
// step the gradients are released (set to none) as for every strategy; the
// next backward's fresh gradient is copied into its bucket when ready and
// replaced by the bucket's view, one pass as in DDP's reducer.
class Ddp final : public Strategy {
 public:
  explicit Ddp(const Choice& choice);
  ~Ddp() override;
  SetUp setup(model::BertForQuestionAnswering& model, const StrategyContext& ctx) override;
  at::Tensor forward_backward(model::BertForQuestionAnswering& model, const train::Batch& batch,
                              double scale, bool last_micro, train::StepTimer& timer) override;
  void finish_gradients(train::StepTimer& timer) override;

  // Called by the post-accumulate-grad hook of parameter `index`.
  void on_grad_ready(size_t index);

 private:
  struct Bucket {
    at::Tensor flat;                 // the all-reduce buffer, and the gradients' memory
    std::vector<size_t> params;      // indices into params_
    std::vector<at::Tensor> views;   // views of flat, shaped as each parameter
    size_t pending = 0;              // gradients still to come this step
    dist::Pending work;
    std::string what;                // its all-reduce's name, made once
  };
  void assign_buckets();
  void copy_in(size_t index);
  void launch_ready();
  void launch(Bucket& b);

  Choice choice_;
  ddp::DdpOptions opts_;
  StrategyContext ctx_;
  std::shared_ptr<MasterWeights> masters_;  // --fused under bf16
  std::vector<at::Tensor> params_;
  at::Tensor inv_world_;  // 1 / world size
  std::vector<std::pair<size_t, size_t>> slot_;  // param -> (bucket, position)
  std::vector<char> ready_;
  std::vector<Bucket> buckets_;
  size_t next_bucket_ = 0;   // buckets launch in index order on every rank
  bool syncing_ = false;     // this backward reduces (the last micro-step)
  std::mutex mutex_;         // hooks may run on autograd's device threads
};

}  // namespace hpcbench::strategies
