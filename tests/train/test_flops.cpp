#include <catch2/catch.hpp>

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
