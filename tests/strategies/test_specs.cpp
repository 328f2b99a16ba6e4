// The strategies' specs (torch-free): the one label grammar, records of older
// versions, the option flags and TOML sections, and the checks.
#include "test_catch.h"
#include "test_env.h"

#include <fmt/format.h>

#include <set>

#include "core/atomic_file.h"
#include "core/error.h"
#include "specs/registry.h"
#include "strategies/pipeline/schedule.h"

using namespace hpcbench;
using namespace hpcbench::strategies;

TEST_CASE("labels: the name and the options not at their defaults, read back as written") {
  CHECK(parse_label("zero", "t").label() == "zero");
  CHECK(parse_label("zero:stage=2", "t").label() == "zero");
  auto z = parse_label("zero:prefetch=off,stage=3", "t");
  CHECK(z.label() == "zero:stage=3,prefetch=off");
  CHECK(z.options_text() == "stage=3,prefetch=off");
  CHECK(parse_label(z.label(), "t").label() == z.label());
  CHECK(z.file_name() == "zero-stage3-no-prefetch");
  // Records show the options that identify a configuration at a glance even
  // at their defaults (what the run files have always shown).
  CHECK(parse_label("ddp", "t").options_text() == "bucket_mb=25,overlap=on");
  CHECK(parse_label("fsdp", "t").options_text() == "sharding=full");
  CHECK(parse_label("baseline", "t").options_text() == "");
  CHECK(parse_label("fsdp:sharding=grad-op", "t").file_name() == "fsdp-grad-op");
  CHECK(parse_label("ddp:overlap=off", "t").file_name() == "ddp-no-overlap");
}

TEST_CASE("labels: bad ones are named with what is wrong") {
  CHECK_THROWS_WITH(parse_label("magic", "--strategy"), Catch::Contains("--strategy magic") &&
                                                             Catch::Contains("known: baseline, dp, ddp, fsdp, zero"));
  CHECK_THROWS_WITH(parse_label("zero:stage=x", "--strategy"), Catch::Contains("stage=x") && Catch::Contains("integer"));
  CHECK_THROWS_WITH(parse_label("zero:sharding=full", "--strategy"),
                    Catch::Contains("no option 'sharding'") && Catch::Contains("stage"));
  CHECK_THROWS_WITH(parse_label("zero:stage", "--strategy"), Catch::Contains("not key=value"));
  CHECK_THROWS_WITH(parse_label("baseline:x=1", "--strategy"), Catch::Contains("has no options"));
  CHECK_THROWS_WITH(parse_label("zero:overlap=maybe", "--strategy"), Catch::Contains("on or off"));
  // Values are checked by the strategy, naming its flag.
  CHECK_THROWS_WITH(parse_label("zero:stage=4", "t").validate("fp32"), Catch::Contains("--zero-stage 4"));
  CHECK_THROWS_WITH(parse_label("fsdp:sharding=full,shard-group=2", "t").validate(""),
                    Catch::Contains("--shard-group-size 2 applies to --sharding hybrid"));
  CHECK_THROWS_WITH(parse_label("zero:reduce=bf16", "t").validate("fp32"), Catch::Contains("needs --precision bf16"));
  CHECK_NOTHROW(parse_label("zero:reduce=fp32", "t").validate("bf16"));
  CHECK_THROWS_WITH(parse_label("ddp:bucket_mb=0", "t").validate(""), Catch::Contains("--bucket-mb 0"));
}

TEST_CASE("lists of labels: options continue the label before them") {
  auto l = parse_labels("ddp,zero:stage=3,prefetch=off,fsdp,ddp", "--strategies");
  REQUIRE(l.size() == 3);
  CHECK(l[0].label() == "ddp");
  CHECK(l[1].label() == "zero:stage=3,prefetch=off");
  CHECK(l[2].label() == "fsdp");
  CHECK_THROWS_WITH(parse_labels("stage=3,ddp", "--strategies"), Catch::Contains("names no strategy"));
  CHECK_THROWS_WITH(parse_labels("ddp,,zero", "--strategies"), Catch::Contains("empty entry"));
}

TEST_CASE("run records: every version's options text reads as the configuration it was") {
  // What zero and fsdp wrote before switches were key=value, and facts.
  auto z = parse_record("zero", "stage=3,reduce=bf16,no-prefetch,no-overlap");
  CHECK(z.label() == "zero:stage=3,reduce=bf16,prefetch=off,overlap=off");
  auto f = parse_record("fsdp", "sharding=hybrid,shard-group=2,no-overlap");
  CHECK(f.label() == "fsdp:sharding=hybrid,shard-group=2,overlap=off");
  CHECK(parse_record("ddp", "bucket_mb=25,overlap=off,buckets=2").label() == "ddp:overlap=off");
  CHECK(parse_record("dp", "replicas=2,devices=cpu+cpu").label() == "dp:replicas=2");
  // And what they write now.
  CHECK(parse_record("zero", z.options_text()).label() == z.label());
  CHECK_THROWS_AS(parse_record("zero", "stage=3,warp=9"), UserError);
}

TEST_CASE("flags: one per option, shared flags once, each naming the strategies that take it") {
  auto flags = option_flags();
  auto find = [&](const std::string& f) {
    for (auto& x : flags)
      if (x.flag == f) return x;
    FAIL("no flag " << f);
    return OptionFlag{};
  };
  auto overlap = find("--no-overlap");
  CHECK(overlap.type.empty());  // a switch
  CHECK(overlap.switch_text == "off");
  CHECK_THAT(overlap.help, Catch::Contains("ddp:") && Catch::Contains("fsdp, zero:") &&
                               Catch::Contains("ddp.overlap") && Catch::Contains("zero.overlap"));
  CHECK(find("--zero-stage").type == "INT");
  CHECK(find("--bucket-mb").type == "FLOAT");
  std::set<std::string> seen;
  for (auto& f : flags) CHECK(seen.insert(f.flag).second);
}

TEST_CASE("configure: defaults, then the TOML section, then the label, then flags") {
  test::TempDir dir;
  auto toml = dir.path / "c.toml";
  write_file_atomic(toml, "[zero]\nstage = 1\noverlap = false\n[fsdp]\nsharding = \"grad-op\"\n");
  TomlFile file(toml);
  CHECK(configure("zero", &file, {}, "--strategy").label() == "zero:stage=1,overlap=off");
  CHECK(configure("zero:stage=3", &file, {}, "--strategy").label() == "zero:stage=3,overlap=off");
  CHECK(configure("zero:stage=2", &file, {{"--zero-stage", "2"}, {"--no-prefetch", "off"}}, "--strategy").label() ==
        "zero:prefetch=off,overlap=off");
  // A flag that gives an option the label gives, differently, is two values
  // for one option: refused naming both, never one silently taken.
  CHECK_THROWS_WITH(configure("zero:stage=3", &file, {{"--zero-stage", "2"}}, "--strategy"),
                    Catch::Contains("--strategy zero:stage=3 and --zero-stage 2"));
  CHECK(configure("fsdp", &file, {}, "--strategy").label() == "fsdp:sharding=grad-op");
  CHECK_THROWS_WITH(configure("ddp", &file, {{"--reduce-dtype", "bf16"}}, "--strategy"),
                    Catch::Contains("--reduce-dtype bf16 applies to --strategy fsdp and zero, not ddp"));
  CHECK_THROWS_WITH(configure("ddp", &file, {{"--no-prefetch", "off"}}, "--strategy"),
                    Catch::Contains("--no-prefetch applies to --strategy fsdp and zero, not ddp"));
  write_file_atomic(toml, "[zero]\nstage = \"three\"\n");
  TomlFile bad(toml);
  CHECK_THROWS_WITH(configure("zero", &bad, {}, "--strategy"), Catch::Contains("'zero.stage' must be an integer"));
}

TEST_CASE("traits and shapes come from the specs") {
  CHECK(reference_spec().traits().reference);
  CHECK(parse_label("baseline", "t").unsupported({1, 2}) != "");
  CHECK(parse_label("baseline", "t").unsupported({1, 1}) == "");
  CHECK(parse_label("dp", "t").unsupported({2, 2}) != "");
  CHECK(parse_label("fsdp:sharding=hybrid,shard-group=3", "t").unsupported({1, 4}) != "");
  CHECK(parse_label("fsdp:sharding=hybrid,shard-group=2", "t").unsupported({1, 4}) == "");
  int communicating = 0;
  for (auto* s : specs()) communicating += s->traits().needs_comm;
  CHECK(communicating == 5);  // ddp, fsdp, zero, pipeline, tensor
}

TEST_CASE("tensor: the dp x tp layout from its sizes and the job's shape, refused with the flag named") {
  auto dp_of = [](const std::string& label, Shape shape) {
    auto c = parse_label(label, "t");
    REQUIRE(c.unsupported(shape) == "");
    return c.spec().data_parallel_size(c.options(), shape);
  };
  CHECK(dp_of("tensor", {1, 4}) == 1);                    // the ranks of a node
  CHECK(dp_of("tensor", {2, 4}) == 2);                    // a group per node
  CHECK(dp_of("tensor:tp-size=2", {1, 4}) == 2);
  CHECK(dp_of("tensor:dp-size=2", {1, 4}) == 2);          // tp: what dp leaves
  CHECK(dp_of("tensor:tp-size=2,dp-size=2", {1, 4}) == 2);
  CHECK_THAT(parse_label("tensor:tp-size=3", "t").unsupported({1, 4}),
             Catch::Contains("--tp-size 3: does not divide the job's 4 ranks"));
  CHECK_THAT(parse_label("tensor:tp-size=2,dp-size=3", "t").unsupported({1, 4}),
             Catch::Contains("--dp-size 3") && Catch::Contains("must multiply to the world size"));
  CHECK_THAT(parse_label("tensor:tp-size=8", "t").unsupported({2, 4}), Catch::Contains("inside one node"));
  ModelShape tiny{30522, 128, 2, 2, 512, 512, 2};
  CHECK(parse_label("tensor:tp-size=2", "t").unsupported_model({1, 2}, tiny) == "");
  CHECK_THAT(parse_label("tensor:tp-size=4", "t").unsupported_model({1, 4}, tiny),
             Catch::Contains("--tp-size 4: the model has 2 attention heads"));
  CHECK(parse_label("ddp", "t").unsupported_model({1, 4}, tiny) == "");
  CHECK_THROWS_WITH(parse_label("tensor:tp-size=-1", "t").validate(""), Catch::Contains("--tp-size -1"));
  // The record names the layout as a fact: it reads back as the options.
  CHECK(parse_record("tensor", "tp-size=2,dp-size=2,layout=dp2-tp2").label() == "tensor:tp-size=2,dp-size=2");
}

TEST_CASE("pipeline: its layouts, the checks naming the flag, memory per stage and the bubble predict replays") {
  auto label = [](const std::string& l) { return parse_label(l, "t"); };
  // Layouts: stages default to the world (or world / dp-size, or the cut's
  // counts), dp-size to world / stages.
  const Spec* found = find_spec("pipeline");
  REQUIRE(found);
  const Spec& spec = *found;
  CHECK(label("pipeline").unsupported({1, 4}) == "");
  CHECK(spec.data_parallel_size(label("pipeline").options(), {1, 4}) == 1);
  CHECK(spec.data_parallel_size(label("pipeline:stages=2").options(), {1, 4}) == 2);
  CHECK(spec.data_parallel_size(label("pipeline:dp-size=2").options(), {1, 4}) == 2);
  CHECK(spec.data_parallel_size(label("pipeline:stage-layers=3/1").options(), {1, 4}) == 2);
  CHECK_THAT(label("pipeline:stages=3").unsupported({1, 4}), Catch::Contains("--stages 3"));
  CHECK_THAT(label("pipeline:stages=2,dp-size=3").unsupported({1, 4}),
             Catch::Contains("--stages 2 x --dp-size 3 is 6 ranks") && Catch::Contains("the job has 4"));
  CHECK_THAT(label("pipeline:stages=3,stage-layers=2/2").unsupported({1, 3}), Catch::Contains("2 counts for 3"));
  // --pp-size is --stages by the layout's name: dp x pp = the world.
  CHECK(spec.data_parallel_size(label("pipeline:pp-size=2").options(), {1, 4}) == 2);
  CHECK(spec.data_parallel_size(label("pipeline:pp-size=4").options(), {1, 4}) == 1);
  CHECK(label("pipeline:pp-size=2,dp-size=2").unsupported({1, 4}) == "");
  CHECK_THAT(label("pipeline:pp-size=2,dp-size=3").unsupported({1, 4}), Catch::Contains("is 6 ranks"));
  CHECK_THROWS_WITH(label("pipeline:stages=2,pp-size=4").validate(""),
                    Catch::Contains("--stages 2 and --pp-size 4"));
  // Options that cannot run at any size.
  CHECK_THROWS_WITH(label("pipeline:micro-batches=0").validate(""), Catch::Contains("--micro-batches 0"));
  CHECK_THROWS_WITH(label("pipeline:schedule=zb").validate(""), Catch::Contains("--schedule"));
  CHECK_THROWS_WITH(label("pipeline:stage-layers=2/x").validate(""), Catch::Contains("\"x\" is not a whole number"));
  CHECK_THROWS_WITH(label("pipeline:stage-layers=2/0").validate(""), Catch::Contains("at least one encoder layer"));
  // A trailing, leading or doubled separator is an empty count, named as one, whether the
  // counts come from the flag (4,4,) or a label (4/4/).
  for (const char* given : {"4,4,", ",4,4", "4,,4", "4/4/"}) {
    INFO(given);
    Choice c(spec);
    c.set("stage-layers", given, "--stage-layers");
    CHECK_THROWS_WITH(c.validate(""), Catch::StartsWith(fmt::format("--stage-layers {}: an empty count", given)));
  }
  CHECK_THROWS_WITH(label("pipeline:stage-layers=4/4/").validate(""), Catch::Contains("an empty count"));
  CHECK_THROWS_WITH(label("pipeline:stages=-1").validate(""), Catch::Contains("--stages -1"));
  CHECK_NOTHROW(label("pipeline:stages=2,micro-batches=8,schedule=gpipe").validate("bf16"));

  // Memory: the largest stage's parameters at 16 bytes (embeddings on the
  // first stage, the head on the last).
  MemoryInputs in;
  in.units = {1000, 10, 10, 10, 10, 2};
  in.shape = {1, 2};
  CHECK(label("pipeline").memory(in).total() == 16.0 * (1000 + 20));
  in.shape = {1, 4};
  CHECK(label("pipeline:stages=2").memory(in).persistent == 16.0 * (1000 + 20));
  CHECK(label("pipeline:stage-layers=1/3").memory(in).persistent == 16.0 * (1000 + 10));
  // With replicas, the flat buffer a stage's gradients are all-reduced in.
  CHECK(label("pipeline:stage-layers=1/3").memory(in).working_set == 4.0 * (1000 + 10));
  // --fused under bf16: bf16 weights and gradients beside fp32 masters and
  // Adam's moments (16 bytes a parameter: the fused master-weight AdamW
  // keeps no fp32 gradient copies), the replicas' gradients all-reduced in
  // bf16; fp32 storage (tf32) is its own master.
  in.resident = true;
  in.compute_bytes = 2;
  CHECK(label("pipeline:stage-layers=1/3").memory(in).persistent == 16.0 * (1000 + 10));
  CHECK(label("pipeline:stage-layers=1/3").memory(in).working_set == 2.0 * (1000 + 10));
  in.compute_bytes = 4;
  CHECK(label("pipeline:stage-layers=1/3").memory(in).persistent == 16.0 * (1000 + 10));
  CHECK(label("pipeline:stage-layers=1/3").memory(in).working_set == 4.0 * (1000 + 10));

  // predict's step for 4 equal stages: the stage's idle time is the
  // textbook bubble (P-1)/(M+P-1) of its pipeline, and 2(P-1) transfers of
  // a micro-batch's hidden states are on the critical path.
  ModelLayout l;
  l.unit_numel = {0, 10, 10, 10, 10, 0};
  l.unit_share = {0, 0.25, 0.25, 0.25, 0.25, 0};
  l.param_numel = {10, 10, 10, 10};
  l.param_unit = {1, 2, 3, 4};
  l.hidden = 8;
  l.seq = 16;
  for (std::string schedule : {"gpipe", "1f1b"})
    for (int m : {1, 4, 8}) {
      StepInputs si;
      si.base = {0.4, 0.8, 0, 0};
      si.layout = &l;
      si.shape = {1, 4};
      si.batch = 8;
      StepBuilder b;
      auto c = label(fmt::format("pipeline:micro-batches={},schedule={}", m, schedule));
      c.spec().schedule(c.options(), si, b);
      double busy = 0, idle = 0, bytes = 0;
      int transfers = 0;
      for (auto& t : b.take()) {
        if (t.kind == "forward" || t.kind == "backward") busy += t.seconds;
        if (t.kind == "bubble") idle += t.seconds;
        if (t.kind == "broadcast") {
          ++transfers;
          bytes = t.bytes;
          CHECK(t.group.ranks() == 2);
        }
      }
      INFO(schedule << " M=" << m);
      CHECK(busy == Approx(0.3));  // a quarter of forward + backward
      CHECK(idle / (busy + idle) == Approx(pipeline::theoretical_bubble(4, m)));
      CHECK(transfers == 6);
      CHECK(bytes == Approx(8.0 / m * 16 * 8 * 4));
    }
}

TEST_CASE("each strategy declares the engine settings it runs on, with the reason for each it does not") {
  // What each has shown on a CPU (test_cuda_graph.cpp, test_fused_parity.cpp):
  // {capture, fused, resident}; "" where declared, else a word of the reason.
  struct Row {
    const char* name;
    const char* capture;
    const char* fused;
    const char* resident;
  };
  const std::vector<Row> rows = {
      {"baseline", "", "", ""},
      {"ddp", "", "", ""},
      {"tensor", "", "", ""},
      {"zero", "", "", ""},
      {"fsdp", "", "", ""},
      {"pipeline", "a pipeline of more than one stage passes", "", ""},
      {"dp", "several devices", "use --strategy ddp", "use --strategy ddp"},
  };
  auto check = [](const Capability& c, const std::string& why) {
    if (why.empty()) {
      CHECK(c.supported);
      CHECK(c.why_not.empty());
    } else {
      CHECK_FALSE(c.supported);
      CHECK_THAT(c.why_not, Catch::Contains(why));
    }
  };
  for (const auto& r : rows) {
    INFO(r.name);
    const Spec* s = find_spec(r.name);
    REQUIRE(s);
    const auto e = s->engine(*s->defaults());
    check(e.capture, r.capture);
    check(e.fused, r.fused);
    check(e.resident, r.resident);
  }
  // A strategy the registry gains later is declared knowingly: every
  // registered one is named above.
  CHECK(specs().size() == rows.size());
}

// On a job of a known shape: pipeline's capture where it has one stage, the
// others' declarations whatever the job (engine_on defaults to engine).
TEST_CASE("a spec's engine settings on a job: pipeline captured at one stage only") {
  auto on = [](const std::string& label, int ranks) { return parse_label(label, "s").engine(Shape{1, ranks}); };
  CHECK(on("pipeline", 1).capture.supported);
  CHECK(on("pipeline:stages=1", 4).capture.supported);
  // The fused model and its resident weights on any job, stages or not.
  for (int ranks : {1, 2, 4}) {
    CHECK(on("pipeline", ranks).fused.supported);
    CHECK(on("pipeline", ranks).resident.supported);
  }
  const auto two = on("pipeline", 2).capture;
  CHECK_FALSE(two.supported);
  CHECK_THAT(two.why_not, Catch::Contains("its 2 stages pass") && Catch::Contains("point-to-point"));
  // A layout the job cannot take falls back to what holds on any job.
  CHECK_FALSE(on("pipeline:stages=3", 4).capture.supported);
  for (const char* label : {"baseline", "ddp", "zero:stage=3", "fsdp", "tensor", "dp"})
    for (int ranks : {1, 2}) {
      INFO(label << " on " << ranks);
      const auto any = parse_label(label, "s").engine(), job = on(label, ranks);
      CHECK(any.capture.supported == job.capture.supported);
      CHECK(any.fused.supported == job.fused.supported);
      CHECK(any.resident.supported == job.resident.supported);
    }
}

TEST_CASE("a spec that declares no engine settings is refused each, naming itself") {
  struct Quiet final : Spec {
    std::string name() const override { return "quiet"; }
    std::string summary() const override { return "declares nothing"; }
    std::unique_ptr<Options> defaults() const override { return std::make_unique<NoOptions>(); }
    StateBytes memory(const Options&, const MemoryInputs& in) const override { return replicated_state(in); }
    void schedule(const Options&, const StepInputs&, StepBuilder&) const override {}
  } quiet;
  const auto e = Choice(quiet).engine();
  for (const auto* c : {&e.capture, &e.fused, &e.resident}) {
    CHECK_FALSE(c->supported);
    CHECK_THAT(c->why_not, Catch::Contains("quiet declares no engine settings"));
  }
}
