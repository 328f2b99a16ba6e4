#include "test_catch.h"

#include <fstream>
#include <iterator>

#include "device/device.h"
#include "model/bert.h"
#include "train/flops.h"

using namespace hpcbench;

TEST_CASE("BERT training FLOPs match the published figure for bert-base at seq 384") {
  // shared/docs/reference-figures.md: about 2.7e11 per sequence.
  auto cfg = model::BertConfig::preset("bert-base-uncased");
  double f = train::training_flops_per_sequence(static_cast<double>(cfg.num_parameters()), 12, 768, 384);
  CHECK(f == Approx(2.7e11).epsilon(0.02));
}

TEST_CASE("peak rates come from the device name and precision") {
  CHECK(train::peak_tflops("NVIDIA A100-SXM4-80GB", "bf16") == 312.0);
  CHECK(train::peak_tflops("NVIDIA A100-PCIE-40GB", "tf32") == 156.0);
  CHECK(train::peak_tflops("NVIDIA H100 80GB HBM3", "fp16") == Approx(989.4));
  CHECK(train::peak_tflops("NVIDIA H100 PCIe", "bf16") == Approx(756.0));
  CHECK(train::peak_tflops("NVIDIA H200", "tf32") == Approx(494.7));
  CHECK(train::peak_tflops("AMD EPYC", "fp32") == 0);
}

TEST_CASE("a CPU without native fp16/bf16 matrix kernels gets a warning that says what to use") {
  CHECK(slow_precision_warning(c10::Device(c10::kCPU), "fp32").empty());
  CHECK(slow_precision_warning(c10::Device(c10::kCPU), "tf32").empty());
  CHECK(slow_precision_warning(c10::Device(c10::kCUDA, 0), "fp16").empty());
  // Whether this CPU has the kernels decides; both answers are checked.
  std::ifstream in("/proc/cpuinfo");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  for (std::string kind : {"fp16", "bf16"}) {
    bool native = text.find("avx512_" + kind + " ") != std::string::npos ||
                  text.find("avx512_" + kind + "\n") != std::string::npos ||
                  text.find("amx_" + kind) != std::string::npos;
    auto w = slow_precision_warning(c10::Device(c10::kCPU), kind);
    INFO(kind << ": " << w);
    CHECK(w.empty() == native);
    if (!native) CHECK(w.find("use fp32") != std::string::npos);
  }
}
