#pragma once
#include <string>

#include "specs/spec.h"

namespace hpcbench::strategies::pipeline {

struct PipelineOptions final : OptionsOf<PipelineOptions> {
  int64_t stages = 0;         // 0: the number of --stage-layers counts, else world / --dp-size
  std::string stage_layers;   // "": the balanced cut
  int64_t micro_batches = 4;  // per optimizer micro-step of each data-parallel replica
  std::string schedule = "1f1b";
  int64_t dp_size = 0;  // 0: world / stages
  int64_t pp_size = 0;  // --stages by the name the dp x pp x tp layouts use
  std::vector<Setting> settings() override {
    return {{"stages", "--stages",
             "pipeline stages, one rank each (default: every rank of a data-parallel replica)", &stages},
            {"stage-layers", "--stage-layers",
             "encoder layers per stage, e.g. 4,4,4 (default: a balanced cut)", &stage_layers},
            {"micro-batches", "--micro-batches",
             "micro-batches M that each --batch-size batch is cut into and pipelined (rows split as evenly as "
             "torch.tensor_split splits them; M <= --batch-size)",
             &micro_batches},
            {"schedule", "--schedule", "gpipe or 1f1b", &schedule},
            {"dp-size", "--dp-size",
             "data-parallel replicas of the pipeline (their gradients all-reduced); --stages x --dp-size = the "
             "world (default: world / --stages)",
             &dp_size},
            {"pp-size", "--pp-size", "the same as --stages, by the name of the layout's dimension (dp x pp)",
             &pp_size}};
  }
};

// The job's dp x pp layout for these options on `world` ranks; throws
// UserError naming --stages, --dp-size or --stage-layers when they cannot
// make one.
struct Layout {
  int stages = 1, dp = 1;
};
// --stages or --pp-size, whichever is given (0: neither); throws UserError
// when both are, differently.
int64_t stages_given(const PipelineOptions& o);
Layout layout_of(const PipelineOptions& o, int world);
// Why a replica's `batch_size` rows cannot be cut into the micro-batches
// ("" when they can; a batch_size of 0 is not known yet).
std::string micro_batch_problem(const PipelineOptions& o, int64_t batch_size);

}  // namespace hpcbench::strategies::pipeline
