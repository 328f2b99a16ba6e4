#include "run/data_dump.h"

#include <ATen/ATen.h>

#include <map>
#include <string>

#include "model/checkpoint.h"
#include "train/setup.h"

namespace hpcbench::run {

void dump_data(const SampleOrder& so, const std::filesystem::path& file) {
  const auto& data = *so.data;
  const int64_t n = data.size();
  auto f = data.gather(at::arange(n, at::kLong));
  std::map<std::string, at::Tensor> dump{{"input_ids", f.input_ids}, {"token_type_ids", f.token_type_ids},
                                         {"attention_mask", f.attention_mask}, {"start_positions", f.start_positions},
                                         {"end_positions", f.end_positions}};
  const auto& origin = so.step_origin;
  for (int r = 0; r < so.data_ranks && !origin.empty(); ++r) {
    auto o = at::full({static_cast<int64_t>(origin.size()), so.grad_accum, so.micro_rows}, -1, at::kLong);
    int64_t epoch = -1;
    at::Tensor order;
    for (size_t k = 0; k < origin.size(); ++k) {
      auto [e, m] = origin[k];
      if (e != epoch) order = train::epoch_indices(n, epoch = e, so.seed, r, so.data_ranks);
      for (int64_t a = 0; a < so.grad_accum; ++a) {
        int64_t begin = (m + a) * so.micro_rows;
        int64_t end = std::min<int64_t>(begin + so.micro_rows, order.size(0));
        o[static_cast<int64_t>(k)][a].slice(0, 0, end - begin).copy_(order.slice(0, begin, end));
      }
    }
    dump["order_rank" + std::to_string(r)] = o;
  }
  model::write_safetensors(dump, file);
}

}  // namespace hpcbench::run
