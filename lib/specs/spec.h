#pragma once
// A strategy as everything that does not run it sees it (torch-free): its
// typed options and their settings table (flags, TOML keys, labels), the
// checks of those options, its traits, its memory formula and its step as
// the scaling model replays it. `run`, `sweep`, `predict`, `main` and
// `report` know strategies only through these specs and the registry
// (registry.h). A strategy's spec is defined in its folder (spec.cpp),
// beside its Strategy (strategies/strategy.h, above train), the code that
// trains under it; this library sits below train. Labels: label.h.
#include <memory>
#include <string>
#include <vector>

#include "core/settings.h"
#include "specs/model_shape.h"
#include "specs/schedule.h"

namespace hpcbench::strategies {

// A strategy's typed options. settings() is their table: key (as in labels
// and under the strategy's TOML section), flag, help, target.
class Options {
 public:
  virtual ~Options() = default;
  virtual std::vector<Setting> settings() = 0;
  virtual std::unique_ptr<Options> clone() const = 0;
};

template <typename Derived>
class OptionsOf : public Options {
 public:
  std::unique_ptr<Options> clone() const override {
    return std::make_unique<Derived>(static_cast<const Derived&>(*this));
  }
};

// A strategy without options.
struct NoOptions final : OptionsOf<NoOptions> {
  std::vector<Setting> settings() override { return {}; }
};

struct Traits {
  // The one-device run every speedup divides by: it runs on one device, and
  // sweeps and the main job always include it.
  bool reference = false;
  // Uses the job's communicator even at one rank, so that its 1-rank runs
  // measure the code its N-rank runs run.
  bool needs_comm = false;
  // One process drives several devices, as many as this option says ("":
  // one device per process).
  std::string devices_option;
};

// What the memory formula is evaluated for.
struct MemoryInputs {
  std::vector<int64_t> units;  // elements of each sharding unit, forward order
  Shape shape;                 // the job's devices
  int compute_bytes = 4;       // 2 under bf16/fp16
  int reduce_bytes = 4;        // gradient reduction, unless the options name a dtype
  // --fused under bf16: replicas hold their weights and gradients in the
  // compute dtype beside fp32 masters and the masters' gradients
  // (strategies/master_weights.h).
  bool resident = false;
};

// Model-state bytes per rank (docs/memory.md): what survives between steps,
// and the largest transient set on top of it.
struct StateBytes {
  double persistent = 0;
  double working_set = 0;
  double total() const { return persistent + working_set; }
};

// What `report` advises where a run lost efficiency (empty: its generic text).
struct Advice {
  std::string exposed;    // exposed communication
  std::string optimizer;  // the optimizer's share
};

// One engine setting as a strategy declares it: supported, or refused with
// the reason the run's refusal shows.
struct Capability {
  bool supported = false;
  std::string why_not;
  static Capability yes() { return {true, ""}; }
  static Capability no(std::string why) { return {false, std::move(why)}; }
};

// What a strategy's step can run on (docs/gpu.md): opt-in, so that a strategy
// added later is refused every setting until it declares what it has shown
// to hold. Each strategy declares all three in one place, its spec's
// engine().
struct EngineSupport {
  // --cuda-graph: the whole optimizer step captured in one CUDA graph (the
  // graph-ready step on a CPU).
  Capability capture;
  // --fused: the fused model (one packed QKV projection, the fused kernels).
  Capability fused;
  // --fused under bf16: weights and gradients resident in bf16, the
  // optimizer stepping fp32 masters.
  Capability resident;
  // Every setting refused because `strategy` declared none.
  static EngineSupport undeclared(const std::string& strategy);
  // `capture` as declared; the fused model and its resident weights both
  // refused for one reason (a strategy whose step keeps a model of its own).
  static EngineSupport unfused(Capability capture, const std::string& why);
};

class Spec {
 public:
  virtual ~Spec() = default;
  virtual std::string name() const = 0;
  virtual std::string summary() const = 0;  // one line for --help
  virtual Traits traits() const { return {}; }
  virtual std::unique_ptr<Options> defaults() const = 0;
  // Keys run records show even at their default value.
  virtual std::vector<std::string> always_shown() const { return {}; }
  // Keys a run appends to its options text that are facts found at set-up,
  // not options (ddp's bucket count); reading a record ignores them.
  virtual std::vector<std::string> facts() const { return {}; }
  // Throws UserError naming the flag and value for options that cannot run;
  // `precision` "" when not known yet.
  virtual void validate(const Options& options, const std::string& precision) const {}
  // Why a job of `shape` devices cannot run it ("" when it can).
  virtual std::string unsupported(const Options& options, const Shape& shape) const { return ""; }
  // Why a model of `model`'s shape cannot be split as these options split it
  // on `shape` ("" when it can): heads that do not divide among the ranks.
  virtual std::string unsupported_model(const Options& options, const Shape& shape, const ModelShape& model) const {
    return "";
  }
  // Why each data-parallel replica's `batch_size` rows a micro-step cannot be
  // cut as these options cut them ("" when they can): more pipeline
  // micro-batches than rows.
  virtual std::string unsupported_batch(const Options& options, int64_t batch_size) const { return ""; }
  // What this strategy runs on the fast engine (EngineSupport): nothing
  // unless it says so, each refusal with its reason.
  virtual EngineSupport engine(const Options& options) const { return EngineSupport::undeclared(name()); }
  // engine() on a job of `shape`, for a strategy whose support depends on
  // the job (pipeline's capture holds at one stage only); engine() itself is
  // then what holds on any job. The run asks this one: it knows its shape.
  virtual EngineSupport engine_on(const Options& options, const Shape& shape) const { return engine(options); }
  // Data-parallel replicas in a job of `shape` (every device, unless devices
  // hold parts of one model).
  virtual int data_parallel_size(const Options& options, const Shape& shape) const { return shape.world(); }
  virtual StateBytes memory(const Options& options, const MemoryInputs& in) const = 0;
  // One optimizer step, issued as the strategy's code issues it.
  virtual void schedule(const Options& options, const StepInputs& in, StepBuilder& b) const = 0;
  // Labels `predict` shows when no --strategies are given.
  virtual std::vector<std::string> showcase() const { return {name()}; }
  virtual Advice advice(const Options& options) const { return {}; }
};

// Every rank holds the whole model and its optimizer: 16 bytes a parameter
// (fp32 weights, gradients, Adam's two moments; under autocast too), and
// with resident weights 2 x compute bytes + 12 (bf16 weights and gradients,
// fp32 masters and Adam's moments: 16; the fused master step reads the bf16
// gradients, so no fp32 copy of them is held: strategies/master_weights.h).
StateBytes replicated_state(const MemoryInputs& in);
double replicated_state_bytes(int64_t parameters, bool resident = false, int compute_bytes = 2);

template <typename O>
const O& options_as(const Options& o) {
  return dynamic_cast<const O&>(o);
}

// A strategy with its options: what a label names.
class Choice {
 public:
  explicit Choice(const Spec& spec);  // the default options
  Choice(const Choice& other);
  Choice& operator=(const Choice& other);
  Choice(Choice&&) noexcept = default;
  Choice& operator=(Choice&&) noexcept = default;

  const Spec& spec() const { return *spec_; }
  std::string name() const { return spec_->name(); }
  const Options& options() const { return *options_; }
  Options& options() { return *options_; }
  template <typename O>
  const O& as() const { return options_as<O>(*options_); }

  // "zero:stage=3": the name and the options not at their defaults.
  std::string label() const;
  // A run record's strategy_options: every option shown at a glance (the
  // spec's always_shown) and those not at their defaults, "stage=3".
  std::string options_text() const;
  // A file and job name: "zero-stage3-no-prefetch".
  std::string file_name() const;

  void validate(const std::string& precision) const { spec_->validate(*options_, precision); }
  std::string unsupported(const Shape& shape) const { return spec_->unsupported(*options_, shape); }
  std::string unsupported_model(const Shape& shape, const ModelShape& model) const {
    return spec_->unsupported_model(*options_, shape, model);
  }
  std::string unsupported_batch(int64_t batch_size) const { return spec_->unsupported_batch(*options_, batch_size); }
  EngineSupport engine() const { return spec_->engine(*options_); }
  EngineSupport engine(const Shape& shape) const { return spec_->engine_on(*options_, shape); }
  StateBytes memory(const MemoryInputs& in) const { return spec_->memory(*options_, in); }

  // Sets option `key` from text; UserError naming `what` and the keys known.
  void set(const std::string& key, const std::string& value, const std::string& what);

 private:
  const Spec* spec_;
  std::unique_ptr<Options> options_;
};

}  // namespace hpcbench::strategies
